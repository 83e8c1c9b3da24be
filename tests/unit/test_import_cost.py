"""A locust process pays only for what it runs: the statistics' numpy is imported by the commands that use it."""

from __future__ import annotations

import subprocess
import sys


def printed(code: str) -> str:
    """What ``code`` prints in a fresh interpreter: its imports are all it has loaded."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout


def test_importing_mqusers_and_its_report_leaves_numpy_out() -> None:
    code = "import sys, mqusers, mqusers.report.htmlreport, mqusers.report.gates; print('numpy' in sys.modules)"
    assert printed(code).strip() == "False"


def test_a_local_runs_audit_folds_its_queue_without_numpy() -> None:
    # A local run's drain asks the audit for its verdict while the last messages arrive: importing numpy there
    # (~70 ms) delayed their receive times and made find-max's steps fall 2 % short of their rate.
    code = (
        "import sys\nfrom mqusers.audit.audit import Audit\nfrom mqusers.audit.ledgers import ReceiveLedger\n"
        "ledger = ReceiveLedger('p')\nsub = ledger.subscription('k', '/queue/q', 'queue', 1)\n"
        "for seq in range(1, 5001):\n    sub.record('producer', seq)\n"
        "audit = Audit()\naudit.merge(ledger.drain())\naudit.verdict(10**19, 0)\nprint('numpy' in sys.modules)"
    )
    assert printed(code).strip() == "False"


def test_a_one_process_runs_in_order_shares_fold_without_numpy() -> None:
    # PendingBags folds a one-process run's in-order shares every FOLD_BAGS: numpy (~70 ms, ~10 MB) mid-run for
    # these would be paid by the receive times of the messages arriving meanwhile.
    code = (
        "import sys; from mqusers.audit.bagsum import PendingBags, FOLD_BAGS; p = PendingBags()\n"
        "for s in range(3 * FOLD_BAGS): p.add([[[s * 10 + 1, s * 10 + 10]]])\n"
        "print('numpy' in sys.modules)"
    )
    assert printed(code).strip() == "False"


def test_websockets_are_loaded_for_a_ws_broker_only_and_before_its_first_connect() -> None:
    # wsproto and h11 are ~20 ms of a process's start-up (issue 37: a 1-message run at most 0.5 CPU-s); a ws://
    # run loads them when its client config is made, so no timed connect pays the import.
    code = (
        "import sys, locust, mqusers.wiring\nfrom mqusers.options.parsing import parse_broker_url\n"
        "from mqusers.stomp.seam import ClientConfig\nplain = 'wsproto' in sys.modules\n"
        "ClientConfig(parse_broker_url('stomp://127.0.0.1:61613'))\nafter_plain = 'wsproto' in sys.modules\n"
        "ClientConfig(parse_broker_url('ws://127.0.0.1:61614/stomp'))\n"
        "print(plain, after_plain, 'wsproto' in sys.modules)"
    )
    assert printed(code).split() == ["False", "False", "True"]


def test_a_run_that_streams_nowhere_leaves_the_listener_out() -> None:
    # The InfluxDB / Prometheus listener and its windows (~10 ms) load when a run streams; names still resolve.
    code = (
        "import sys, locust, mqusers.wiring.plugin\n"
        "left = [m for m in ('mqusers.sinks.listener', 'mqusers.sinks.lines', 'mqusers.sinks.windows',"
        " 'mqusers.sinks.prometheus') if m in sys.modules]\n"
        "from mqusers.sinks import InfluxSink\nprint(left, InfluxSink.__module__)"
    )
    assert printed(code).strip() == "[] mqusers.sinks.listener"
