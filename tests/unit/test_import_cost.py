"""A locust process pays only for what it runs: the statistics' numpy is imported by the commands that use it."""

from __future__ import annotations

import subprocess
import sys


def test_importing_mqusers_and_its_report_leaves_numpy_out() -> None:
    code = "import sys, mqusers, mqusers.report.htmlreport, mqusers.report.gates; print('numpy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "False"


def test_a_local_runs_audit_folds_its_queue_without_numpy() -> None:
    # A local run's drain asks the audit for its verdict while the last messages arrive: importing numpy there
    # (~70 ms) delayed their receive times and made find-max's steps fall 2 % short of their rate.
    code = (
        "import sys\nfrom mqusers.measure.audit import Audit\nfrom mqusers.measure.ledgers import ReceiveLedger\n"
        "ledger = ReceiveLedger('p')\nsub = ledger.subscription('k', '/queue/q', 'queue', 1)\n"
        "for seq in range(1, 5001):\n    sub.record('producer', seq)\n"
        "audit = Audit()\naudit.merge(ledger.drain())\naudit.verdict(10**19, 0)\nprint('numpy' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "False"
