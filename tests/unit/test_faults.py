"""The fault schedule: parsing ``--mq-fault``, running commands without a shell, masking secrets."""

from __future__ import annotations

import locust  # noqa: F401  (gevent first)

import os
import sys
import time
from pathlib import Path

import gevent
import pytest
from gevent.event import Event

from mqusers.options.faultspec import Fault, parse_fault
from mqusers.options.parsing import OptionError
from mqusers.run import faults
from mqusers.run.faults import FaultSchedule, fault_line, known_secrets, mask


@pytest.mark.parametrize(
    ("text", "at_s", "argv"),
    [
        ("30s:kill -STOP 1234", 30.0, ("kill", "-STOP", "1234")),
        ("1m30s:echo 'a b'", 90.0, ("echo", "a b")),
        ("2.5:true", 2.5, ("true",)),
        ("0: sh -c 'echo x:y'", 0.0, ("sh", "-c", "echo x:y")),
    ],
)
def test_a_fault_is_a_time_and_an_argv(text: str, at_s: float, argv: tuple[str, ...]) -> None:
    assert parse_fault(text) == Fault(at_s, argv)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("kill -STOP 1", "use TIME:COMMAND"),
        ("30s:", "use TIME:COMMAND"),
        ("soon:true", "use TIME:COMMAND"),
        ("30s:echo 'unclosed", "use TIME:COMMAND"),
        ("-5:true", "0 to 86,400 s"),
        ("5s:no-such-command-here --x", "no-such-command-here: no such executable command (no shell is used)"),
    ],
)
def test_a_bad_fault_gets_one_line(text: str, says: str) -> None:
    with pytest.raises(OptionError, match=r"^--mq-fault ") as caught:
        parse_fault(text)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_secrets_are_masked_longest_first_and_the_environment_s_are_known(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCUST_MQ_PASSWORD", "hunter2")
    monkeypatch.setenv("HARMLESS", "visible")
    found = known_secrets(["hunter2-long", None, ""])
    assert found[0] == "hunter2-long" and "hunter2" in found and "visible" not in found
    assert mask("x hunter2-long hunter2 visible", found) == "x *** *** visible"


class Announced(list[tuple[str, str, int]]):
    """The annotations a schedule made; ``ran`` is set by the first, which a fault makes once it has run."""

    def __init__(self) -> None:
        super().__init__()
        self.ran = Event()

    def __call__(self, kind: str, text: str, ts: int) -> None:
        self.append((kind, text, ts))
        self.ran.set()


def _annotations() -> tuple[Announced, FaultSchedule]:
    seen = Announced()
    schedule = FaultSchedule(
        [Fault(0.05, (sys.executable, "-c", "print('token s3cret'); raise SystemExit(3)")), Fault(60.0, ("true",))],
        ["s3cret"],
        seen,
    )
    return seen, schedule


def test_due_faults_run_with_their_output_captured_and_masked_and_later_ones_never() -> None:
    seen, schedule = _annotations()
    schedule.start()
    assert seen.ran.wait(timeout=10), "the fault due at 0.05 s did not run"
    schedule.stop()
    ran, skipped = schedule.records
    assert (ran["ran"], ran["exit_code"], ran["output"].strip()) == (True, 3, "token ***")
    assert ran["started_ns"] <= ran["ended_ns"]
    assert (skipped["ran"], skipped["at_s"], skipped["exit_code"]) == (False, 60.0, None)
    assert fault_line(skipped) == "fault at 60s not run (the test ended first): true"
    assert [kind for kind, _, _ in seen] == ["fault"] and "-> exit 3 in" in seen[0][1]
    assert all("s3cret" not in str(record) for record in schedule.records)


def test_a_command_that_hangs_is_killed_at_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(faults, "FAULT_TIMEOUT_S", 0.2)
    seen = Announced()
    schedule = FaultSchedule([Fault(0.0, (sys.executable, "-c", "import time; time.sleep(30)"))], [], seen)
    schedule.start()
    assert seen.ran.wait(timeout=10), "the hanging command was not killed"
    (record,) = schedule.records
    assert record["exit_code"] is None and "killed after 0.2 s" in record["output"]
    assert "-> killed in " in fault_line(record)


def test_a_command_still_running_when_the_test_ends_is_killed_and_said_so(tmp_path: Path) -> None:
    started = tmp_path / "pid"
    command = f"import os, pathlib, time; pathlib.Path({str(started)!r}).write_text(str(os.getpid())); time.sleep(30)"
    schedule = FaultSchedule([Fault(0.0, (sys.executable, "-c", command))], [], Announced())
    schedule.start()
    deadline = time.monotonic() + 10
    while not (started.exists() and started.read_text()):  # the command under way
        assert time.monotonic() < deadline, "the fault's command did not start"
        gevent.sleep(0.05)
    schedule.stop()
    (record,) = schedule.records
    assert (record["ran"], record["exit_code"], record["output"]) == (True, None, faults.STILL_RUNNING), record
    assert 0 < record["started_ns"] <= record["ended_ns"]
    assert "-> killed in " in fault_line(record)
    with pytest.raises(ProcessLookupError):  # the command itself is gone, not left running
        os.kill(int(started.read_text()), 0)
