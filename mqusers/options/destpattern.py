"""A destination pattern, ``/queue/orders.{0..9999}``: the destinations it names and how Users share them.

One brace range of whole numbers, ``{FIRST..LAST}``, anywhere in the name: ``/queue/orders.{0..9999}``
names ``/queue/orders.0`` .. ``/queue/orders.9999``; a first number written with leading zeros pads
every number to its width (``{000..999}``: ``orders.000`` .. ``orders.999``). The pattern's text is
its label: Locust's rows, the book, the series and the InfluxDB points name it, one row per
operation; the wire and the audit use each destination's own name.

How Users share the destinations (:func:`share`): the consumers (or the producers) are numbered
0 .. n-1 in the order they start; with n at most the destination count, User i takes every
destination whose index is i modulo n (so each destination has exactly one); with more Users than
destinations, User i takes destination i modulo the count (each has one or more). Over W workers,
worker w first takes its part, ``share(count, w, W)``, and its Users share that part the same way
(:func:`mqusers.users.base.lanes`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from mqusers.errors import MqusersError

#: Destinations in one pattern: 100,000 is ten times the largest run measured (benchmarks/manydest.py).
MAX_DESTINATIONS = 100_000
_RANGE = re.compile(r"\{(\d+)\.\.(\d+)\}")


class PatternError(MqusersError, ValueError):
    """Why a text with braces is not a destination pattern (one line, without the option's name)."""


@dataclass(frozen=True)
class Pattern:
    """``prefix {first..last} suffix``, numbers padded to ``width`` (1: not padded)."""

    label: str
    prefix: str
    suffix: str
    first: int
    last: int
    width: int

    def __len__(self) -> int:
        return self.last - self.first + 1

    def name(self, index: int) -> str:
        """The destination at ``index`` (0 .. len - 1)."""
        return f"{self.prefix}{self.first + index:0{self.width}d}{self.suffix}"

    def names(self) -> list[str]:
        return [self.name(i) for i in range(len(self))]

    def index_of(self, destination: str) -> int | None:
        """The index of ``destination`` in the pattern; None when the pattern does not name it."""
        middle_end = len(destination) - len(self.suffix)
        if not (destination.startswith(self.prefix) and destination.endswith(self.suffix)):
            return None
        middle = destination[len(self.prefix) : middle_end]
        if not middle.isdigit() or self.name(int(middle) - self.first) != destination:
            return None
        index = int(middle) - self.first
        return index if 0 <= index < len(self) else None


def parse_pattern(text: str) -> Pattern | None:
    """The pattern ``text`` is; None when it has no brace (a plain destination); :class:`PatternError`
    when its braces are not one ``{FIRST..LAST}`` range."""
    if "{" not in text and "}" not in text:
        return None
    ranges = list(_RANGE.finditer(text))
    if len(ranges) != 1 or text.count("{") != 1 or text.count("}") != 1:
        raise PatternError(f"{text!r} is not a destination pattern; use one range of whole numbers, e.g. "
                           "/queue/orders.{0..9999}")  # fmt: skip
    found = ranges[0]
    low, high = found.group(1), found.group(2)
    first, last = int(low), int(high)
    if last < first:
        raise PatternError(f"{text!r}: the range {{{low}..{high}}} ends before it starts")
    if last - first + 1 > MAX_DESTINATIONS:
        raise PatternError(f"{text!r} names {last - first + 1:,} destinations; use at most {MAX_DESTINATIONS:,}")
    width = len(low) if low.startswith("0") and len(low) > 1 else 1
    return Pattern(text, text[: found.start()], text[found.end() :], first, last, width)


def share(count: int, index: int, users: int) -> range:
    """The destination indexes User ``index`` of ``users`` takes of ``count`` (see the module docs)."""
    if users <= count:
        return range(index % users, count, users)
    return range(index % count, index % count + 1)


def patterns_in(names: Iterable[object]) -> dict[str, Pattern]:
    """The patterns among ``names`` (labels, plain destinations, anything else), by label."""
    found = {}
    for name in names:
        if isinstance(name, str) and "{" in name:
            try:
                pattern = parse_pattern(name)
            except PatternError:
                continue
            if pattern is not None:
                found[name] = pattern
    return found


def label_of(destination: str, patterns: dict[str, Pattern]) -> str:
    """The label of the pattern naming ``destination``; the destination itself when none does."""
    for label, pattern in patterns.items():
        if pattern.index_of(destination) is not None:
            return label
    return destination
