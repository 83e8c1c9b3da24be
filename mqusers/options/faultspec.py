"""``--mq-fault`` values: ``TIME:COMMAND`` read as the time into the test and the command's argv.

:mod:`mqusers.run.faults` runs them.
"""

from __future__ import annotations

from locust.util.timespan import parse_timespan

import shlex
import shutil
from dataclasses import dataclass

from mqusers.options.parsing import MAX_SECONDS, OptionError


@dataclass(frozen=True)
class Fault:
    """One ``--mq-fault``: seconds after the test starts, and the command's argv."""

    at_s: float
    argv: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.at_s:g}s:{shlex.join(self.argv)}"


def parse_fault(value: str, option: str = "--mq-fault") -> Fault:
    """``TIME:COMMAND`` (``30s:kill -STOP 1234``, ``1m30s:...``); the command must exist here."""
    when, sep, command = value.partition(":")
    usage = f"{option} {value!r}: use TIME:COMMAND, e.g. 30s:kill -STOP 1234"
    if not sep or not command.strip():
        raise OptionError(usage)
    try:
        at_s = _seconds(when.strip())
        argv = tuple(shlex.split(command))
    except ValueError:
        raise OptionError(usage) from None
    if not 0 <= at_s <= MAX_SECONDS:
        raise OptionError(f"{option} {value!r}: the time must be 0 to {MAX_SECONDS:,} s into the test")
    if shutil.which(argv[0]) is None:
        raise OptionError(f"{option} {value!r}: {argv[0]}: no such executable command (no shell is used)")
    return Fault(at_s, argv)


def _seconds(text: str) -> float:
    """``2.5`` or Locust's time span (``30s``, ``1m30s``); ValueError otherwise."""
    try:
        return float(text)
    except ValueError:
        return float(parse_timespan(text))
