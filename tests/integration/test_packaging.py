"""Installed as users install it: the wheel in a fresh venv, used from outside the repository.

The wheel is built offline with the project's own backend and installed with ``pip --no-deps``; the
fresh venv finds the dependencies (Locust, gevent, ...) through a ``.pth`` line pointing at this
venv's site-packages, so nothing is downloaded. A directory named by a ``.pth`` line has its own
``.pth`` files ignored, so this venv's editable install of the checkout does not leak in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.conftest import LOCUSTFILES, ROOT, started


@dataclass(frozen=True)
class Installed:
    wheel: Path
    bin: Path
    elsewhere: Path  # a working directory outside the repository
    env: dict[str, str]

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bin / argv[0]), *argv[1:]],
            capture_output=True, text=True, timeout=300, cwd=self.elsewhere, env=self.env,
        )  # fmt: skip


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("packaging")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    subprocess.run(
        [*pip, "wheel", "--no-build-isolation", "--no-deps", "--no-index", "-w", str(base / "dist"), str(ROOT)],
        check=True, timeout=120,
    )  # fmt: skip
    [wheel] = (base / "dist").glob("mqusers-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    python = venv / "bin" / "python"
    subprocess.run([*pip, "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)], check=True)
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    (Path(purelib) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    elsewhere = base / "elsewhere"
    elsewhere.mkdir()
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return Installed(wheel, venv / "bin", elsewhere, env)


def test_the_wheel_ships_the_scenarios_and_not_the_repository_tools(installed: Installed) -> None:
    names = zipfile.ZipFile(installed.wheel).namelist()
    shipped = sorted(name.removeprefix("mqusers/locustfiles/") for name in names if "/locustfiles/" in name)
    assert shipped == sorted(path.name for path in LOCUSTFILES.glob("*.py"))
    assert not [name for name in names if name.startswith("tools/") or "dashboards" in name]


def test_mqusers_locustfiles_names_the_installed_folder(installed: Installed) -> None:
    run = installed.run("mqusers", "locustfiles")
    assert run.returncode == 0, run.stderr
    folder = Path(run.stdout.strip())
    assert folder.is_relative_to(installed.bin.parent) and folder.name == "locustfiles"
    for path in LOCUSTFILES.glob("*.py"):
        assert (folder / path.name).read_text() == path.read_text()


def test_the_installed_report_command_inlines_the_shipped_charting_library(installed: Installed) -> None:
    saved = installed.elsewhere / "curve.json"
    saved.write_text(json.dumps({"kind": "curve", "max_rate": 100.0, "points": []}))
    run = installed.run("mqusers", "report", "curve.json", "--html", "curve.html")
    assert run.returncode == 0, run.stderr
    page = (installed.elsewhere / "curve.html").read_text()
    assert "/*! https://github.com/leeoniya/uPlot (v1.6.32) */" in page and "<script src" not in page
    assert "uPlot.LICENSE" in str(zipfile.ZipFile(installed.wheel).namelist())


@pytest.mark.activemq
def test_the_installed_matrix_runs_the_shipped_scenarios(installed: Installed) -> None:
    broker = started("activemq")
    run = installed.run(
        "mqusers", "matrix", "--host", broker.url, "--modes", "queue", "--sizes", "1KB", "--messages", "200",
        "--mq-drain", "0.5",
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    # The test broker keeps messages in memory: its persistent cells say the store held nothing.
    assert "| no | no | 1KB |" in run.stdout and "| yes (store 0 B) | no | 1KB |" in run.stdout
    [row] = json.loads((installed.elsewhere / "reports/matrix/queue-n-1KB.json").read_text())["destinations"]
    assert (row["sent"], row["received"], row["lost"]) == (200, 200, 0)
