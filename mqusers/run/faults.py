"""The fault schedule (``--mq-fault "30s:COMMAND"``): a user's commands run at set times into a test.

A failover test in one command line: stop a broker with the project's service scripts, ``kill
-STOP`` it, take a namespace's link down. The master (or the local runner) runs each command at
its time after the test started, without a shell (``sh -c '...'`` when one is wanted), its output
captured, bounded by :data:`FAULT_TIMEOUT_S`; each run is a :class:`FaultRecord` in every report
and an annotation on the live dashboards. Secrets never reach a log or a report: every known
secret value is masked in the command line and its output.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import subprocess
import time
from collections.abc import Callable, Iterable
from typing import Any, TypedDict

import gevent
from gevent import subprocess as gsubprocess

from mqusers.options.faultspec import Fault

#: A command still running after this long is killed (a service script's start waits up to 90 s).
FAULT_TIMEOUT_S = 120.0
#: Output kept per command: its last characters.
OUTPUT_CHARS = 2000
#: A fault's output when the test ended while its command ran: the command was killed.
STILL_RUNNING = "(still running when the test ended: killed)"
MASK = "***"
#: Environment variables whose values are secrets a command might print.
_SECRET_ENV = re.compile(r"PASSWORD|PASSCODE|TOKEN|SECRET", re.IGNORECASE)
logger = logging.getLogger(__name__)


class FaultRecord(TypedDict):
    at_s: float
    command: str
    #: False: the test ended before its time came.
    ran: bool
    started_ns: int
    ended_ns: int
    #: None: it did not exit by itself (not started, killed at the timeout).
    exit_code: int | None
    output: str


def fault_line(record: FaultRecord) -> str:
    """One line per fault for the summary and the logs."""
    if not record["ran"]:
        return f"fault at {record['at_s']:g}s not run (the test ended first): {record['command']}"
    took = (record["ended_ns"] - record["started_ns"]) / 1e9
    code = "killed" if record["exit_code"] is None else f"exit {record['exit_code']}"
    return f"fault at {record['at_s']:g}s: {record['command']} -> {code} in {took:.2f} s"


def known_secrets(values: Iterable[str | None]) -> tuple[str, ...]:
    """``values`` that are set, and the environment's secret-looking variables, longest first."""
    found = {v for v in values if v} | {v for k, v in os.environ.items() if v and _SECRET_ENV.search(k)}
    return tuple(sorted(found, key=len, reverse=True))


def mask(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, MASK)
    return text


class FaultSchedule:
    """Runs one test's faults; ``annotate(kind, text, ts_ns)`` marks each on the live dashboards."""

    def __init__(
        self, faults: Iterable[Fault], secrets: Iterable[str], annotate: Callable[[str, str, int], None]
    ) -> None:
        self.faults = tuple(faults)
        self._secrets = tuple(secrets)
        self._annotate = annotate
        self.records: list[FaultRecord] = []
        self._greenlets: list[Any] = []
        self._started: dict[float, int] = {}  # at_s: when its command started (time_ns), while it runs

    def start(self) -> None:
        self.records = []
        self._started = {}
        self._greenlets = [gevent.spawn_later(f.at_s, self._run, f) for f in self.faults]

    def stop(self) -> None:
        """The test ended: faults not due yet never run; one still running is killed (its command too)."""
        for greenlet in self._greenlets:
            greenlet.kill(block=True, timeout=5)
        ran = {r["at_s"] for r in self.records}
        for fault in self.faults:
            if fault.at_s in ran:
                continue
            started = self._started.get(fault.at_s)
            if started is None:
                self.records.append(self._record(fault, False, 0, 0, None, ""))
            else:
                self.records.append(self._record(fault, True, started, time.time_ns(), None, STILL_RUNNING))
        self.records.sort(key=lambda r: r["at_s"])
        self._greenlets = []

    def _record(self, fault: Fault, ran: bool, started: int, ended: int, code: int | None, out: str) -> FaultRecord:
        return FaultRecord(at_s=fault.at_s, command=mask(shlex.join(fault.argv), self._secrets), ran=ran,
                           started_ns=started, ended_ns=ended, exit_code=code,
                           output=mask(out, self._secrets)[-OUTPUT_CHARS:])  # fmt: skip

    def _run(self, fault: Fault) -> None:
        started = self._started[fault.at_s] = time.time_ns()
        code: int | None = None
        try:
            done = gsubprocess.run(fault.argv, stdin=gsubprocess.DEVNULL, stdout=gsubprocess.PIPE,
                                   stderr=gsubprocess.STDOUT, timeout=FAULT_TIMEOUT_S, check=False)  # fmt: skip
            code, output = done.returncode, done.stdout or b""
        except subprocess.TimeoutExpired as expired:
            output = (expired.output or b"") + f"\n(killed after {FAULT_TIMEOUT_S:g} s)".encode()
        except OSError as error:
            output = str(error).encode()
        record = self._record(fault, True, started, time.time_ns(), code, output.decode("utf-8", "replace"))
        self.records.append(record)
        text = fault_line(record)
        logger.info("mqusers: %s", text)
        self._annotate("fault", text, started)


def start_faults(
    faults: Iterable[Fault], secrets: Iterable[str | None], annotate: Callable[[str, str, int], None]
) -> FaultSchedule | None:
    """This test's ``--mq-fault`` commands, each at its time (the master or local runner); None without any.

    ``secrets``: values never shown in a command or its output (the password, the store's token),
    beside those the environment holds.
    """
    faults = tuple(faults)
    if not faults:
        return None
    schedule = FaultSchedule(faults, known_secrets(secrets), annotate)
    schedule.start()
    return schedule
