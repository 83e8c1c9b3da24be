"""One ``locust`` child process of a subcommand (a find-max step, a repeat's run), bounded and interruptible.

Each child writes its output to REPORT.log and its JSON report to REPORT; it runs in its own process
group, so a Ctrl-C or SIGTERM reaches it once, forwarded from here (:class:`Stop`), and it ends as
Locust ends on Ctrl-C: it stops, drains and writes its report, which is read before
:class:`Interrupted` goes up. Also the subcommands' shared refusals: one line and exit 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

from mqusers.errors import MqusersError

#: A child may overrun its -t by the drain (at most --mq-drain-max, default 30 s) and start-up.
SLACK_S = 90.0


@dataclass(frozen=True)
class Finished:
    """A child that wrote its report: its exit code and the report."""

    code: int
    document: dict[str, Any]


class StepFailed(MqusersError):
    """A child that produced no report (bad options, a crash, over its bound): the command cannot go on."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code  # the child's exit code, None when it was killed


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during a child: it was stopped; its report, when it wrote one, is ``document``."""

    def __init__(self, document: dict[str, Any] | None) -> None:
        super().__init__()
        self.document = document


class Stop:
    """Ctrl-C or SIGTERM while :func:`interruptible` is on: noted, and passed on to the child under way."""

    def __init__(self) -> None:
        self.requested = False
        self.child: subprocess.Popen[bytes] | None = None

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        # Never raises: under gevent a handler may run in the hub, which would print the exception.
        self.requested = True
        if self.child is not None:  # the child's whole group, as a terminal's Ctrl-C: a master and its workers
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.child.pid, signum)


@contextmanager
def interruptible() -> Iterator[Stop]:
    """Ctrl-C and SIGTERM noted (a second one cuts the child's drain short) rather than raised, while inside."""
    stop = Stop()
    # SIGINT too: a shell starts a background job with it ignored, and Python then leaves it so.
    previous = {signum: signal.signal(signum, stop.on_signal) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def run_locust(command: list[str], report: Path, limit: float, at: str = "", stop: Stop | None = None) -> Finished:
    """One ``locust`` child process, its output in REPORT.log, bounded by ``limit`` s.

    Raises :class:`StepFailed` with one line (``at`` says which step) when it ran over or wrote no
    report, :class:`Interrupted` after a Ctrl-C or SIGTERM (``stop``'s, or one noted for this child alone).
    """
    with contextlib.nullcontext(stop) if stop is not None else interruptible() as watching:
        if watching.requested:
            raise Interrupted(None)
        log = report.with_suffix(".log")
        with log.open("w") as out:
            child = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            watching.child = child
            try:
                code = child.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)
                child.wait()
                raise StepFailed(f"locust ran over {limit:.0f} s{at}; see {log}") from None
            finally:
                watching.child = None
        if watching.requested:
            raise Interrupted(_partial(report))
    if not report.exists():
        last = (log.read_text(errors="replace").strip().splitlines() or ["no output"])[-1]
        raise StepFailed(f"locust exited {code} without a report{at}: {last} (see {log})", code)
    return Finished(code, _read(report))


def _read(report: Path) -> dict[str, Any]:
    try:
        document: dict[str, Any] = json.loads(report.read_text())
    except ValueError as error:  # cut short while writing: as good as none
        raise StepFailed(f"{report}: not a JSON report ({error})") from None
    return document


def _partial(report: Path) -> dict[str, Any] | None:
    try:
        return _read(report) if report.exists() else None
    except StepFailed:
        return None


class Parser(argparse.ArgumentParser):
    """Bad options: one line and exit 2, before any step runs."""

    def error(self, message: str) -> NoReturn:
        refuse(f"{self.prog}: {message}")


def refuse(line: str) -> NoReturn:
    print(line if line.startswith("mqusers") else f"mqusers: {line}", file=sys.stderr)
    raise SystemExit(2)


def masked(args: Sequence[str]) -> list[str]:
    """Locust arguments for a report: a password given on the command line never shown."""
    out: list[str] = []
    for arg in args:
        secret_value = bool(out) and out[-1] == "--mq-password"
        out.append("***" if secret_value else "--mq-password=***" if arg.startswith("--mq-password=") else arg)
    return out
