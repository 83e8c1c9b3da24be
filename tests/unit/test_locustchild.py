"""A subcommand's child process: bounded, its report read, Ctrl-C passed on to it once and its report kept.

The child is a few lines of Python standing in for ``locust``: it writes its report when it ends,
as mqusers does on Ctrl-C, and counts the SIGINTs it got.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path

import pytest

from mqusers.commands.locustchild import Interrupted, StepFailed, interruptible, run_locust

#: Waits for SIGINT (at most 30 s), then writes its report: the signals it got, and exits 1 as Locust does.
CHILD = """
import json, signal, sys, time
got = []
signal.signal(signal.SIGINT, lambda *a: got.append(1))
print("ready", flush=True)
deadline = time.monotonic() + 30
while not got and time.monotonic() < deadline:
    time.sleep(0.01)
time.sleep(0.3)  # a second SIGINT, were one sent, would arrive now
json.dump({"kind": "run", "sigints": len(got)}, open(sys.argv[1], "w"))
sys.exit(1)
"""


def test_a_child_over_its_bound_is_killed_and_said(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    with pytest.raises(StepFailed, match=r"locust ran over 1 s at 5 msg/s; see .*r\.log"):
        run_locust([sys.executable, "-c", "import time; time.sleep(60)"], report, 1.0, " at 5 msg/s")


def test_a_child_without_a_report_says_its_exit_code_and_last_line(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    command = [sys.executable, "-c", "print('mqusers: --mq-size: bad'); raise SystemExit(2)"]
    with pytest.raises(StepFailed) as failed:
        run_locust(command, report, 30.0)
    assert failed.value.code == 2
    assert str(failed.value) == f"locust exited 2 without a report: mqusers: --mq-size: bad (see {tmp_path / 'r.log'})"


def test_ctrl_c_reaches_the_child_once_and_its_report_is_kept(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    log = tmp_path / "r.log"

    def press_ctrl_c() -> None:  # once the child is ready, as a user would
        while "ready" not in (log.read_text() if log.exists() else ""):
            threading.Event().wait(0.01)
        os.kill(os.getpid(), signal.SIGINT)

    presser = threading.Thread(target=press_ctrl_c, daemon=True)
    with interruptible() as stop:
        presser.start()
        with pytest.raises(Interrupted) as interrupted:
            run_locust([sys.executable, "-c", CHILD, str(report)], report, 30.0, stop=stop)
    presser.join(timeout=5)
    assert stop.requested and interrupted.value.document == {"kind": "run", "sigints": 1}
    assert json.loads(report.read_text())["sigints"] == 1
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
