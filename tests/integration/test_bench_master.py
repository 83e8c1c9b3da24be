"""benchmarks/master.py runs end to end: a real master fed by synthetic workers judges their messages exact."""

from __future__ import annotations

import subprocess
import sys

from tests.integration.locust_runs import ROOT


def test_the_master_benchmark_merges_three_workers_exactly_and_prints_its_table() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.master", "--workers", "3", "--rates", "3000", "--reports", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    [row] = [line for line in lines[lines.index("") + 1 :] if line.split()[:2] == ["3", "3,000"]]
    assert row.endswith("exact"), done.stdout
    assert "master CPU" in done.stdout and "Traceback" not in done.stderr
