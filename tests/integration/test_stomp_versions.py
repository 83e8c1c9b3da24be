"""stomp.py, the independent reference client of the tests and `make bench`, at both ends of its declared range.

pyproject's dev extra declares a range (ARCHITECTURE.md, "stomp.py's role"); the venv holds the newest
it allows. The lowest is installed as a user's pip would (with its dependencies) into a temporary folder
and, in a subprocess with that folder first on PYTHONPATH, run against the real ActiveMQ: `make bench`'s
reference client (benchmarks/raw_stomp.py, unpaced and paced), then the broker-statistics query the
integration tests check mqusers against (tests/integration/broker_stats.py), which must count exactly
the messages the reference client sent.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.integration.brokers import Broker, started

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.activemq

#: In the subprocess: which stomp.py it imported, the reference client's two runs, and the broker's count.
SCRIPT = """
import json, subprocess, sys
from importlib.metadata import version
import stomp
from tests.integration import broker_stats
port, queue, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
results = []
for rate in ("0", "500"):
    bench = [sys.executable, "-m", "benchmarks.raw_stomp", "--broker-host", "127.0.0.1", "--broker-port",
             str(port), "--destination", queue + "." + rate, "--messages", str(n), "--size", "100",
             "--timeout", "60", "--rate", rate]
    done = subprocess.run(bench, capture_output=True, text=True, timeout=90)
    line = [l for l in done.stdout.splitlines() if l.startswith("BENCH-RESULT ")]
    assert done.returncode == 0 and line, done.stdout + done.stderr
    results.append(json.loads(line[0].split(" ", 1)[1]))
counted = {}
broker_stats.wait_for(lambda: counted.update(broker_stats.activemq_destination_stats(port, queue + ".0")) or
                      counted.get("enqueueCount") == n)
print(json.dumps({"version": version("stomp.py"), "module": stomp.__file__, "runs": results, "broker": counted}))
"""


def declared_range() -> tuple[str, str]:
    """(lowest, upper bound) of the stomp.py requirement in pyproject's dev extra."""
    (spec,) = re.findall(r'^\s*"(stomp\.py[^"]*)"', (ROOT / "pyproject.toml").read_text(), re.MULTILINE)
    found = re.fullmatch(r"stomp\.py>=([\d.]+),<([\d.]+)", spec)
    assert found, f"a range, not a pin: {spec}"
    return found.group(1), found.group(2)


def lowest_version() -> str:
    low = declared_range()[0]
    return low if low.count(".") == 2 else f"{low}.0"


def run_reference(broker: Broker, pythonpath: list[str]) -> dict[str, object]:
    queue = f"/queue/mqusers.test.versions.{uuid.uuid4().hex[:10]}"
    env_path = ":".join([*pythonpath, str(ROOT)])
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": env_path}
    command = [sys.executable, "-c", SCRIPT, str(broker.port), queue, "2000"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    runs = result["runs"]
    assert isinstance(runs, list) and [run["received"] for run in runs] == [2000, 2000]
    assert isinstance(result["broker"], dict) and result["broker"]["enqueueCount"] == 2000
    return result


def test_the_lowest_declared_stomp_py_runs_the_reference_client_and_the_statistics_query(tmp_path: Path) -> None:
    broker = started("activemq")
    version = lowest_version()
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--target",
               str(tmp_path), f"stomp.py=={version}"]  # fmt: skip
    subprocess.run(install, check=True, capture_output=True, timeout=180)
    result = run_reference(broker, [str(tmp_path)])
    assert result["version"] == version and str(result["module"]).startswith(str(tmp_path)), result


def test_the_installed_stomp_py_is_the_newest_of_the_range_and_runs_them_too() -> None:
    broker = started("activemq")
    result = run_reference(broker, [])
    low, below = declared_range()
    installed = tuple(int(part) for part in str(result["version"]).split("."))
    assert tuple(int(part) for part in low.split(".")) <= installed < tuple(int(part) for part in below.split("."))
