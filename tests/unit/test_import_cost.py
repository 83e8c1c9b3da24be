"""A locust process pays only for what it runs: the statistics' numpy is imported by the commands that use it."""

from __future__ import annotations

import subprocess
import sys


def test_importing_mqusers_and_its_report_leaves_numpy_out() -> None:
    code = "import sys, mqusers, mqusers.report.htmlreport, mqusers.report.gates; print('numpy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "False"
