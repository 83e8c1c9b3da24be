"""``--mq-profile``: the run-wide rate over time, and when message ``k`` of the shared schedule is due.

``steps:1000/30s,2000/30s`` (each rate for its duration), ``ramp:100,5000,60s`` (from, to, over),
``sine:2000,1000,60s`` (mean, amplitude, period), ``csv:FILE`` (lines ``seconds,rate[,size]``, the rate
linear between them, from 0 s; a size, as ``--mq-size`` takes it, holds from its line on until the
next line that has one). After its end a profile holds its last rate and size. The rate is piecewise
linear (a sine in 40 pieces a period), so the message count up to a time is piecewise quadratic and
message ``k``'s due time is solved exactly, without drift over a long run.
"""

from __future__ import annotations

import bisect
import csv
import functools
import itertools
import math
import re
from dataclasses import dataclass
from pathlib import Path

from mqusers.options.parsing import MAX_RATE, OptionError, parse_size

KINDS = ("steps:RATE/DURATION,...", "ramp:FROM,TO,DURATION", "sine:MEAN,AMPLITUDE,PERIOD", "csv:FILE")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
SINE_PIECES = 40
MAX_POINTS = 100_000


@dataclass(frozen=True)
class Piece:
    start: float  # seconds from t0
    seconds: float
    first: float  # msg/s at its start
    last: float  # msg/s at its end
    before: float  # messages due before it

    def count(self, t: float) -> float:
        """Messages due in its first ``t`` seconds."""
        return self.first * t + (self.last - self.first) / (2 * self.seconds) * t * t

    def seconds_to(self, n: float) -> float:
        """The time into it by which ``n`` of its messages are due."""
        slope = (self.last - self.first) / self.seconds
        if n <= 0:
            return 0.0
        if abs(slope) < 1e-12:
            return n / self.first
        # first * t + slope/2 * t^2 = n, the root in [0, seconds]; the stable form near slope 0.
        root = math.sqrt(max(0.0, self.first * self.first + 2 * slope * n))
        return 2 * n / (self.first + root)


@dataclass(frozen=True)
class RateProfile:
    text: str
    pieces: tuple[Piece, ...]
    #: A CSV's size column: (seconds from t0, body size from then on), in time order; empty: no sizes.
    sizes: tuple[tuple[float, int], ...] = ()

    def __str__(self) -> str:
        return self.text

    @property
    def held(self) -> float:
        """The rate after the profile's end."""
        return self.pieces[-1].last

    @property
    def peak(self) -> float:
        return max(max(piece.first, piece.last) for piece in self.pieces)

    @functools.cached_property
    def _starts(self) -> list[float]:
        return [piece.start for piece in self.pieces]

    @functools.cached_property
    def _befores(self) -> list[float]:
        return [piece.before for piece in self.pieces]

    def rate_at(self, t: float) -> float:
        piece = self.pieces[max(0, bisect.bisect_right(self._starts, t) - 1)]
        if t >= piece.start + piece.seconds:
            return self.held
        return piece.first + (piece.last - piece.first) * (t - piece.start) / piece.seconds

    def size_at(self, t: float) -> int | None:
        """The body size in effect ``t`` seconds after t0; None before the first size (the scenario's then)."""
        index = bisect.bisect_right(self._size_starts, t) - 1
        return self.sizes[index][1] if index >= 0 else None

    @functools.cached_property
    def _size_starts(self) -> list[float]:
        return [start for start, _ in self.sizes]

    def due_s(self, k: int) -> float:
        """Seconds after t0 at which message ``k`` (from 0) is due: the time ``k`` messages are due by."""
        piece = self.pieces[max(0, bisect.bisect_right(self._befores, k) - 1)]
        end = piece.before + piece.count(piece.seconds)
        if k >= end:  # after the profile: its last rate, held
            return piece.start + piece.seconds + (k - end) / self.held
        return piece.start + piece.seconds_to(k - piece.before)


def parse_profile(value: str, option: str = "--mq-profile") -> RateProfile:
    kind, _, spec = value.partition(":")
    sizes: list[tuple[float, int]] = []
    try:
        if kind == "steps":
            points = _steps(spec)
        elif kind == "ramp":
            start, end, seconds = spec.split(",")
            points = [(0.0, _rate(start)), (_seconds(seconds), _rate(end))]
        elif kind == "sine":
            mean, amplitude, period = (part for part in spec.split(","))
            points = _sine(_rate(mean), _rate(amplitude), _seconds(period))
        elif kind == "csv":
            points = _csv(Path(spec), sizes)
        else:
            raise ValueError(f"use one of {', '.join(KINDS)}")
    except (ValueError, OSError) as error:
        raise OptionError(f"{option}: {value!r}: {error}") from None
    if points[-1][1] <= 0:
        raise OptionError(f"{option}: {value!r}: its last rate is held after its end, so it must be above 0")
    return RateProfile(value, _pieces(points), tuple(sizes))


def _steps(spec: str) -> list[tuple[float, float]]:
    points: list[tuple[float, float]] = []
    t = 0.0
    for step in spec.split(","):
        rate_text, _, seconds_text = step.partition("/")
        rate, seconds = _rate(rate_text), _seconds(seconds_text)
        points += [(t, rate), (t + seconds, rate)]
        t += seconds
    return points


def _sine(mean: float, amplitude: float, period: float) -> list[tuple[float, float]]:
    if amplitude > mean:
        raise ValueError("the amplitude is above the mean: the rate would go below 0")
    return [(period * i / SINE_PIECES, mean + amplitude * math.sin(2 * math.pi * i / SINE_PIECES))
            for i in range(SINE_PIECES + 1)]  # fmt: skip


def _csv(path: Path, sizes: list[tuple[float, int]]) -> list[tuple[float, float]]:
    """The CSV's (seconds, rate) points; its size column, where a line has one, appended to ``sizes``."""
    with open(path, newline="") as stream:
        rows = [row for row in csv.reader(stream) if row and not row[0].lstrip().startswith("#")]
    if rows and not _is_number(rows[0][0]):
        rows = rows[1:]  # a header line
    if not rows or len(rows) > MAX_POINTS:
        raise ValueError(f"{path} needs 1 to {MAX_POINTS:,} lines of seconds,rate[,size]")
    if any(len(row) not in (2, 3) for row in rows):
        raise ValueError(f"{path}: each line is seconds,rate or seconds,rate,size")
    points = [(float(row[0]), _rate(row[1])) for row in rows]
    if points[0][0] != 0 or any(b[0] <= a[0] for a, b in itertools.pairwise(points)):
        raise ValueError(f"{path}: times start at 0 and increase")
    for (t, _), row in zip(points, rows, strict=True):
        if len(row) == 3 and row[2].strip():
            try:
                sizes.append((t, parse_size(row[2].strip(), "size")))
            except OptionError as error:
                raise ValueError(f"{path}: at {t:g} s: {error}") from None
    return points


def _pieces(points: list[tuple[float, float]]) -> tuple[Piece, ...]:
    pieces: list[Piece] = []
    before = 0.0
    for (t0, r0), (t1, r1) in itertools.pairwise(points):
        if t1 > t0:
            piece = Piece(t0, t1 - t0, r0, r1, before)
            before += piece.count(piece.seconds)
            pieces.append(piece)
    if not pieces:  # a single point: its rate from the start
        pieces.append(Piece(0.0, 1.0, points[-1][1], points[-1][1], 0.0))
    return tuple(pieces)


def _rate(text: str) -> float:
    rate = float(text)
    if not 0 <= rate <= MAX_RATE or math.isnan(rate):
        raise ValueError(f"rate {text.strip()!r} is not within 0 to {MAX_RATE:,} msg/s")
    return rate


def _seconds(text: str) -> float:
    match = _DURATION.match(text)
    if match is None or float(match.group(1)) * _UNITS[match.group(2)] <= 0:
        raise ValueError(f"duration {text.strip()!r}: use e.g. 30s, 500ms, 2m")
    return float(match.group(1)) * _UNITS[match.group(2)]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
