"""Installed as users install it: the wheel in a fresh venv, used from outside the repository.

The wheel is built offline with the project's own backend and installed with ``pip --no-deps``; the
fresh venv finds the dependencies (Locust, gevent, ...) through a ``.pth`` line pointing at this
venv's site-packages, so nothing is downloaded. A directory named by a ``.pth`` line has its own
``.pth`` files ignored, so this venv's editable install of the checkout does not leak in.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.brokers import started
from tests.integration.locust_runs import LOCUSTFILES, ROOT


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
    # The scenarios and what they use (templates/order.json, --mq-payload's example), nothing compiled.
    files = (path for path in LOCUSTFILES.rglob("*") if path.is_file() and "__pycache__" not in path.parts)
    assert shipped == sorted(str(path.relative_to(LOCUSTFILES)) for path in files)
    assert "templates/order.json" in shipped
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


#: The grids' shortest runs: one repeat of 1 s after a 1 s warm-up (test_grids.py checks their repeats); paced
#: below, as test_grids.py says why.
SHORT_GRID = ["--repeats", "1", "--warmup-seconds", "1", "--seconds", "1", "--steady-after", "0.5"]


@pytest.mark.activemq
@pytest.mark.alone  # 1 s cells with a 0.5 s drain; queue names by the second
def test_the_installed_matrix_runs_the_shipped_scenarios(installed: Installed) -> None:
    broker = started("activemq")
    run = installed.run(
        "mqusers", "matrix", "--host", broker.url, "--modes", "queue", "--sizes", "1KB", "--messages", "200",
        "--mq-drain-idle", "0.5", "--rate", "1000", *SHORT_GRID,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    # The test broker keeps messages in memory: its persistent cells say the store held nothing.
    assert "| no | no | 1KB |" in run.stdout and "| yes (store 0 B) | no | 1KB |" in run.stdout
    [row] = json.loads((installed.elsewhere / "reports/matrix/queue-n-1KB-1.json").read_text())["destinations"]
    assert row["sent"] == row["received"] >= 200 and row["lost"] == 0  # --messages: at least


#: Every subcommand ``mqusers --help`` lists, and the test below that runs it from the installed wheel.
RUN_BY = {
    "matrix": "test_the_installed_matrix_runs_the_shipped_scenarios",
    "find-max": "test_the_installed_find_max_and_curve_run_a_shipped_scenario",
    "curve": "test_the_installed_find_max_and_curve_run_a_shipped_scenario",
    "cluster-compare": "test_the_installed_cluster_compare_measures_one_configuration",
    "report": "test_the_installed_report_command_inlines_the_shipped_charting_library",
    "repeat": "test_the_installed_repeat_runs_a_shipped_scenario_twice_and_compare_reads_its_runs",
    "compare": "test_the_installed_repeat_runs_a_shipped_scenario_twice_and_compare_reads_its_runs",
    "locustfiles": "test_mqusers_locustfiles_names_the_installed_folder",
    "options": "test_every_listed_subcommand_answers_help_and_is_run_here",
}


def test_every_listed_subcommand_answers_help_and_is_run_here(installed: Installed) -> None:
    listing = installed.run("mqusers", "--help")
    assert listing.returncode == 0, listing.stderr
    commands = listing.stdout.split("\ncommands:\n", 1)[1]
    listed = re.findall(r"^  (\S+)  ", commands, re.MULTILINE)
    assert sorted(listed) == sorted(RUN_BY)  # a new subcommand needs a run from the wheel here
    for name in listed:
        assert RUN_BY[name] in globals(), name
        helped = installed.run("mqusers", name, "--help")
        assert helped.returncode == 0 and helped.stdout.strip(), (name, helped.stderr)
    options = installed.run("mqusers", "options")
    assert options.returncode == 0, options.stderr
    assert re.search(r"^  --mq-rate MQ_RATE .*\n.*\[env", options.stdout, re.MULTILINE) is not None
    assert "--influx-url" in options.stdout and "LOCUST_MQ_PASSWORD" in options.stdout


def shipped(installed: Installed, name: str) -> str:
    folder = installed.run("mqusers", "locustfiles").stdout.strip()
    return str(Path(folder) / name)


@pytest.mark.activemq
@pytest.mark.alone  # find-max and curve verdicts are rates
def test_the_installed_find_max_and_curve_run_a_shipped_scenario(installed: Installed) -> None:
    broker = started("activemq")
    short = ["--warmup", "1", "--window", "2", "-u", "2", "--consumers", "1"]
    queue = f"/queue/mqusers.wheel.{uuid.uuid4().hex[:6]}"
    found = installed.run(
        "mqusers", "find-max", "-f", shipped(installed, "put_get.py"), "--host", broker.url, "--destination", queue,
        "--start", "200", "--max-rate", "200", "--max-lag-ms", "50", "--json", "fm.json", "--workdir", "fm", *short,
    )  # fmt: skip
    assert found.returncode == 0, found.stdout[-2000:] + found.stderr[-2000:]
    document = json.loads((installed.elsewhere / "fm.json").read_text())
    assert (document["kind"], document["max_rate"], document["bound"]) == ("find-max", 200.0, "lower"), document
    [step] = document["steps"]
    [row] = json.loads((installed.elsewhere / step["report"]).read_text())["destinations"]
    assert step["sustained"] and row["sent"] == row["received"] > 0 and row["lost"] == 0, step
    assert "highest rate kept up with: at least 200 msg/s" in found.stdout
    curve = installed.run(
        "mqusers", "curve", "-f", shipped(installed, "put_get.py"), "--host", broker.url, "--destination", queue,
        "--max-rate", "400", "--percents", "50", "--max-lag-ms", "50", "--json", "curve.json", *short,
    )  # fmt: skip
    assert curve.returncode == 0, curve.stdout[-2000:] + curve.stderr[-2000:]
    [point] = json.loads((installed.elsewhere / "curve.json").read_text())["points"]
    [row] = json.loads((installed.elsewhere / point["report"]).read_text())["destinations"]
    assert (point["percent"], point["offered"]) == (50.0, 200.0) and point["sustained"], point
    assert point["p99_ms"] == row["latency_ms"]["p99"] > 0 and row["lost"] == 0
    assert "headline: highest rate kept up with 200 msg/s (50 % of --max-rate 400 msg/s); p99 at 50 %" in curve.stdout


@pytest.mark.activemq
@pytest.mark.alone  # 1 s runs with a 0.5 s drain; queue names by the second
def test_the_installed_cluster_compare_measures_one_configuration(installed: Installed) -> None:
    broker = started("activemq")
    run = installed.run(
        "mqusers", "cluster-compare", "--config", f"local={broker.url}", "--schemes", "nonpersistent",
        "--messages", "100", "--out", "cluster", "--json", "cc.json", "--mq-drain-idle", "0.5", "--mq-rate", "1000",
        *SHORT_GRID,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    [row] = json.loads((installed.elsewhere / "cc.json").read_text())["rows"]
    cell = row["schemes"]["nonpersistent"]
    [figures] = cell["runs"]
    assert (row["config"], figures["lost"]) == ("local", 0) and figures["sent"] == figures["received"] >= 100, row
    assert cell["msgs"] > 0 and row["failover"] is None
    assert re.search(r"^\| local \| [\d,]+ .*\| - \| - \|", run.stdout, re.MULTILINE), run.stdout


@pytest.mark.activemq
def test_the_installed_repeat_runs_a_shipped_scenario_twice_and_compare_reads_its_runs(installed: Installed) -> None:
    broker = started("activemq")
    topic = f"/topic/mqusers.wheel.{uuid.uuid4().hex[:6]}"
    run = installed.run(
        "mqusers", "repeat", "2", "--results", "repeat", "--json", "repeat.json", "--", "-f",
        shipped(installed, "pubsub.py"), "--host", broker.url, "--headless", "-u", "2", "-r", "2", "-t", "3s",
        "--mq-consumers", "1", "--mq-rate", "200", "--mq-destination", topic, "--only-summary",
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    summary = json.loads((installed.elsewhere / "repeat.json").read_text())
    assert [r["counted"] for r in summary["runs"]] == [True, True] and f"receive {topic}" in summary["operations"]
    first, second = sorted((installed.elsewhere / "repeat").glob("*.json"))
    compared = installed.run("mqusers", "compare", str(first), str(second), "--json", "compare.json")
    assert compared.returncode == 0, compared.stdout[-2000:] + compared.stderr[-2000:]
    figures = json.loads((installed.elsewhere / "compare.json").read_text())["operations"][f"receive {topic}"]
    assert figures["throughput"]["verdict"] in ("no significant difference", "higher", "lower", "too few samples")
