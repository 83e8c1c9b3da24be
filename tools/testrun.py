"""`make test`: lint, unit and integration tests in timed phases, then what each cost and the 30 slowest tests.

The phases (ARCHITECTURE.md, "How to test"):

- ``services`` (in the background from the start): the Debian packages in one apt run, the Maven downloads,
  then the shared brokers started; it waits on the network and the disk, so it overlaps the next two.
- ``lint``: ruff, ruff format --check, mypy.
- ``unit``: tests/unit in two pytest processes, half the files each (no services, no timing assertions).
- ``integration``: tests/integration not marked ``alone``, four pytest processes at a time, one test file each,
  the longest first (by ``tests/integration/seconds.json``, what each file's tests took in a recent run; a file
  it does not know goes first): exact counts, refusals, reports and pages hold however busy the machine is.
  Each run writes what its files took to ``seconds.json`` in its work folder: copy it over to refresh the order.
  A module whose ``pytestmark`` holds ``alone`` is not started here at all.
- ``alone``: the tests marked ``alone``, one at a time with nothing beside them: they assert on timing, CPU or
  latency, or kill, freeze or fail over a broker the others share.

Parallel pytest processes, not pytest-xdist: xdist's worker waits on a threading.Event that Locust's gevent
patching turns into a greenlet's, which its I/O thread never wakes (every worker hangs). Each process writes its
JUnit XML; the table at the end reads them all. Every phase runs even when one before it failed (a CI run says
everything it found); the exit status is the first failure's. ``python -m tools.testrun unit`` runs one phase.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[1]
#: The stores the tests share, started with the brokers: a module that starts one itself stops it at its end,
#: under the feet of another module streaming to it.
STORES = ["victoria-metrics", "influxdb", "postgresql"]
#: faketime gives one test a worker with a skewed clock; chromium renders the pages; the JDBC pair needs the driver.
DEBIAN = ["faketime", "chromium", "libpostgresql-jdbc-java"]
SLOWEST = 30
#: A test longer than this belongs in benchmarks/ (or asks its question on a shorter run): named at the end.
TEST_BUDGET_S = 60.0
PHASES = ("lint", "unit", "integration", "alone")
#: pytest processes at once: the unit tests are CPU-bound (two cores); integration tests mostly wait on runs.
UNIT_PROCESSES, INTEGRATION_PROCESSES = 2, 4
#: pytest's exit status when a selection holds no test (a file whose tests are all marked ``alone``).
NO_TESTS = 5
#: Seconds each integration file's parallel tests took in a recent run: the longest start first, so that four
#: processes end together instead of one long file starting last.
SECONDS = ROOT / "tests" / "integration" / "seconds.json"


@dataclass
class Phase:
    name: str
    seconds: float = 0.0
    status: int = 0
    junits: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def failed(self, status: int) -> None:
        self.status = self.status or status


def _python(*args: str) -> list[str]:
    return [sys.executable, *args]


def _pytest(junit: Path, *args: str) -> list[str]:
    # -p no:cacheprovider: processes side by side would race on .pytest_cache; addopts without --durations: the
    # table at the end covers every process.
    return _python("-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=-ra", f"--junitxml={junit}", *args)


def _test_files(folder: str, seconds: dict[str, float] | None = None) -> list[Path]:
    """The folder's test files, longest first: by ``seconds`` (file name -> seconds), those it does not know
    before all (they may be long), else by size (a proxy for slowest: it starts the long ones early)."""

    def key(path: Path) -> tuple[float, int, str]:
        known = (seconds or {}).get(path.name)
        return (-known if known is not None else float("-inf"), -path.stat().st_size, path.name)

    return sorted((ROOT / folder).glob("test_*.py"), key=key)


def all_alone(path: Path) -> bool:
    """Whether the module marks every test of it ``alone`` (its ``pytestmark``): the parallel phase would start a
    pytest process only to deselect them all."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            return any(isinstance(n, ast.Attribute) and n.attr == "alone" for n in ast.walk(node.value))
    return False


def _cases(junit: Path) -> list[tuple[float, str]]:
    """Each test of a JUnit XML file (none when it is missing): its seconds (setup, call and teardown), its name."""
    if not junit.exists():
        return []
    return [(float(case.get("time") or 0.0), f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}")
            for case in ElementTree.parse(junit).iter("testcase")]  # fmt: skip


def file_seconds(junit: Path) -> float:
    """What the tests of one JUnit XML file took: 0 for none."""
    return round(sum(seconds for seconds, _ in _cases(junit)), 1)


def _run_at_once(phase: Phase, commands: list[list[str]], slots: int, work: Path) -> None:
    """Run ``commands`` ``slots`` at a time, each one's output printed whole once it ends (never interleaved)."""
    pending = list(commands)
    running: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = []
    while pending or running:
        while pending and len(running) < slots:
            command = pending.pop(0)
            log: IO[bytes] = (work / f"{phase.name}-{len(pending)}.log").open("w+b")
            running.append((subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT), log))
        for process, done in [entry for entry in running if entry[0].poll() is not None]:
            running.remove((process, done))
            done.seek(0)
            sys.stdout.write(done.read().decode(errors="replace"))
            sys.stdout.flush()
            done.close()
            if process.returncode != NO_TESTS:
                phase.failed(process.returncode)
        time.sleep(0.2)


def _tests(phase: Phase, work: Path) -> Phase:
    began = time.monotonic()
    print(f"\n== {phase.name}", flush=True)
    if phase.name == "unit":
        files = _test_files("tests/unit")
        shards = [[str(path) for path in files[i::UNIT_PROCESSES]] for i in range(UNIT_PROCESSES)]
        phase.junits = [work / f"unit-{i}.xml" for i in range(UNIT_PROCESSES)]
        _run_at_once(phase, [_pytest(j, "-q", *s) for j, s in zip(phase.junits, shards, strict=True)], 2, work)
    elif phase.name == "integration":
        known = json.loads(SECONDS.read_text()) if SECONDS.exists() else None
        files = [path for path in _test_files("tests/integration", known) if not all_alone(path)]
        phase.junits = [work / f"integration-{path.stem}.xml" for path in files]
        commands = [_pytest(j, "-q", "-m", "not alone", str(path)) for j, path in zip(phase.junits, files, strict=True)]
        _run_at_once(phase, commands, INTEGRATION_PROCESSES, work)
        took = {path.name: file_seconds(junit) for path, junit in zip(files, phase.junits, strict=True)}
        (work / SECONDS.name).write_text(json.dumps(took, indent=1, sort_keys=True) + "\n")
    else:
        phase.junits = [work / "alone.xml"]
        phase.failed(subprocess.run(_pytest(phase.junits[0], "-m", "alone", "tests/integration"), cwd=ROOT).returncode)
    phase.seconds = time.monotonic() - began
    return phase


def _cache_bytecode(folder: Path) -> None:
    """Every Python process of the run (pytest's, each Locust run's, each worker's) compiles the project's modules
    once, into ``folder``: with PYTHONDONTWRITEBYTECODE (set in some CI images) each would compile them again,
    0.2 CPU-s a process, hundreds of processes on two cores."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(folder)


def _lint() -> Phase:
    phase, began = Phase("lint"), time.monotonic()
    tools = Path(sys.executable).parent
    ruff, mypy = str(tools / "ruff"), str(tools / "mypy")
    for command in ([ruff, "check", "."], [ruff, "format", "--check", "."], [mypy]):
        print(f"\n== lint: {' '.join(command)}", flush=True)
        phase.failed(subprocess.run(command, cwd=ROOT, check=False).returncode)
    phase.seconds = time.monotonic() - began
    return phase


def _start_services(brokers: list[str], log: Path, started: Path) -> subprocess.Popen[bytes]:
    """Install everything, then start the shared brokers: one background shell, its output in ``log``."""
    install = _python("-m", "services", "install", *brokers, *STORES, "--debian", *DEBIAN)
    start = _python("-m", "services", "start", "--started", str(started), *brokers, *STORES)
    with log.open("wb") as out:
        script = f"{' '.join(install)} && {' '.join(start)}"
        return subprocess.Popen(["bash", "-c", script], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)


def _services_ready(background: subprocess.Popen[bytes], began: float, log: Path) -> Phase:
    ready = Phase("services", status=background.wait(), notes=["in the background from the start"])
    ready.seconds = time.monotonic() - began
    print(f"\n== services ({ready.seconds:.1f} s, exit {ready.status}):\n{log.read_text()}", flush=True)
    return ready


def slowest(junits: list[Path], count: int = SLOWEST) -> list[tuple[float, str]]:
    """The ``count`` slowest tests of these JUnit XML files (setup, call and teardown together), slowest first."""
    return sorted((case for junit in junits for case in _cases(junit)), reverse=True)[:count]


def summary(phases: list[Phase], wall_s: float) -> str:
    lines = ["", "== make test: what it cost", f"{'phase':<12} {'seconds':>8}  result"]
    for phase in phases:
        result = "ok" if phase.status == 0 else f"FAILED (exit {phase.status})"
        lines.append(f"{phase.name:<12} {phase.seconds:>8.1f}  {result}" + "".join(f"; {n}" for n in phase.notes))
    lines.append(f"{'wall':<12} {wall_s:>8.1f}")
    table = slowest([junit for phase in phases for junit in phase.junits])
    if table:
        lines += ["", f"== the {len(table)} slowest tests (setup + call + teardown)"]
        lines += [f"{seconds:8.1f} s  {name}" for seconds, name in table]
        over = [name for seconds, name in table if seconds > TEST_BUDGET_S]
        if over:
            lines.append(f"over the {TEST_BUDGET_S:.0f} s a test may take (to benchmarks/, or a shorter run): "
                         + ", ".join(over))  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.testrun", description=__doc__.splitlines()[0])
    parser.add_argument("phases", nargs="*", metavar="PHASE", help=f"some of {', '.join(PHASES)} (default: all)")
    shared = "the brokers the integration tests share, started once (the Makefile's BROKERS)"
    parser.add_argument("--brokers", default="", metavar="NAMES", help=shared)
    args = parser.parse_args(argv)
    chosen = args.phases or list(PHASES)
    unknown = [name for name in chosen if name not in PHASES]
    if unknown:
        parser.error(f"no phase {', '.join(unknown)} (phases: {', '.join(PHASES)})")
    began = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="mqusers-test-"))
    _cache_bytecode(work / "pycache")
    started, log = work / "started", work / "services.log"
    background = None
    if {"integration", "alone"} & set(chosen):
        background = _start_services(args.brokers.split(), log, started)
    phases: list[Phase] = []
    try:
        if "lint" in chosen:
            phases.append(_lint())
        if "unit" in chosen:
            phases.append(_tests(Phase("unit"), work))
        if background is not None:
            phases.append(_services_ready(background, began, log))
        for name in ("integration", "alone"):
            if name in chosen:
                phases.append(_tests(Phase(name), work))
    finally:
        if background is not None:
            background.wait()
            names = started.read_text().split() if started.exists() else []
            if names:
                subprocess.run(_python("-m", "services", "stop", *names), cwd=ROOT, check=False)
    print(summary(phases, time.monotonic() - began), flush=True)
    failed = [phase.status for phase in phases if phase.status != 0]
    return failed[0] if failed else 0


if __name__ == "__main__":
    sys.exit(main())
