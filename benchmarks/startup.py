"""(g) in benchmarks/core.py: what a 1-message run through the ``locust`` command costs, start to exit.

A short run (a smoke test, a CI job's check, each step of a find-max search) pays the process's start-up
whole: Python, Locust's import, mqusers' wiring, a connection each way, the audit and the report. Target
(issue 37): at most 0.5 CPU-s from start to exit, the child's own rusage. Beside it, in the same round, a
fresh interpreter that only runs ``import locust``: the floor no locustfile goes under, so what is left
above it is mqusers' own.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import BenchError, spread
from benchmarks.locust_cli import run_counted, run_process

LABELS = {"startup": "(g) 1-message run"}
TARGET_CPU_S = 0.5


def import_floor_cpu_s(timeout: float) -> float:
    """CPU-s of a fresh ``python -c 'import locust'`` (this Python, this checkout's environment), its own rusage."""
    with tempfile.TemporaryDirectory(prefix="mqusers-bench-import-") as folder:
        done = run_process([sys.executable, "-c", "import locust"], Path(folder) / "import.log", timeout)
        if done.returncode != 0:
            raise BenchError(f"import locust exited {done.returncode}: {done.tail()}")
    return done.cpu_s


def run(options: argparse.Namespace, queue: str) -> dict[str, Any]:
    """One 1-message run and one ``import locust``, interleaved in the round as every part is."""
    result = run_counted(options.host, 1, options.size_bytes, options.timeout, queue)
    result["kind"] = "startup"
    result["import_locust_cpu_s"] = import_floor_cpu_s(options.timeout)
    return result


def describe(result: dict[str, Any]) -> str:
    above = result["process_cpu_s"] - result["import_locust_cpu_s"]
    return (
        f"{LABELS['startup']:<26} {result['process_cpu_s']:.2f} CPU-s start to exit ({result['sys_s']:.2f} sys),"
        f" {result['wall_s']:.2f} s wall; import locust alone {result['import_locust_cpu_s']:.2f} CPU-s,"
        f" mqusers and the run {above:.2f} above it"
    )


def report_lines(results: dict[str, list[dict[str, Any]]]) -> tuple[list[str], bool | None]:
    """(g)'s summary line and whether its target was met (None when it did not run)."""
    runs = results.get("startup")
    if not runs:
        return [], None
    cpu = [r["process_cpu_s"] for r in runs]
    floor = [r["import_locust_cpu_s"] for r in runs]
    ok = statistics.median(cpu) <= TARGET_CPU_S
    verdict = "met" if ok else "MISSED"
    return [
        f"  {LABELS['startup']:<26} {spread(cpu, '{:.2f}')} CPU-s start to exit   target <= {TARGET_CPU_S:g}: {verdict}"
        f"   (import locust alone {spread(floor, '{:.2f}')} CPU-s)"
    ], ok
