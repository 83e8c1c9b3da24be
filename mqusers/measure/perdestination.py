"""Each destination of a pattern's own receive figures, bounded: deliveries, their span and latency slots.

A pattern's destinations share one row in the book (its label: one HdrHistogram per operation, not
10,000); the report's worst destinations and distributions need each one's count, rate and p99,
which come from here. On the per-message path a :class:`Spot` appends the latency (µs) and the
receive time; :meth:`Spread.drain` groups them into the series' slots (``mqusers.measure.buckets``:
~6 % wide, so a p99 is its slot's top, up to 6 % high) and a worker ships that; the master's
:meth:`Spread.merge` adds them. Per destination it keeps a count, two times and a few dozen slots.
Negative latencies (clocks out of step) count as deliveries and stay out of the slots, as the book
keeps them out of its histograms.
"""

from __future__ import annotations

from collections import Counter
from typing import TypedDict

from mqusers.measure.buckets import percentile_of, slot


class Spot:
    """One destination's deliveries since the last drain (one process)."""

    __slots__ = ("first_ns", "last_ns", "micros")

    def __init__(self) -> None:
        self.micros: list[int] = []
        self.first_ns = self.last_ns = 0

    def record(self, micros: int, now_ns: int) -> None:
        if not self.micros:
            self.first_ns = now_ns
        self.micros.append(micros)
        self.last_ns = now_ns


class EncodedSpot(TypedDict):
    """A destination's deliveries as a worker ships them: ``slots`` is slot, count, slot, count..."""

    count: int
    first_ns: int
    last_ns: int
    slots: list[int]


class _Merged:
    __slots__ = ("count", "first_ns", "last_ns", "slots")

    def __init__(self) -> None:
        self.count, self.first_ns, self.last_ns = 0, 0, 0
        self.slots: Counter[int] = Counter()


class DestinationFigures(TypedDict):
    received: int
    #: Epoch ns of its first and last delivery.
    first_ns: int
    last_ns: int
    p50_ms: float | None
    p99_ms: float | None


class Spread:
    """Spots by destination (recorded here), and everything merged (master or local runner)."""

    def __init__(self) -> None:
        self._spots: dict[str, Spot] = {}
        self._merged: dict[str, _Merged] = {}

    def spot(self, destination: str) -> Spot:
        """The destination's spot in this process (one for all its subscriptions here)."""
        spot = self._spots.get(destination)
        if spot is None:
            spot = self._spots[destination] = Spot()
        return spot

    def clear(self) -> None:
        """A new test, or the warm-up's end: nothing recorded or merged so far counts."""
        self._merged.clear()
        for spot in self._spots.values():
            spot.micros.clear()

    def drain(self) -> dict[str, EncodedSpot]:
        """Every destination's deliveries since the last drain; then start afresh."""
        out = {}
        for destination, spot in self._spots.items():
            if spot.micros:
                slots = Counter(slot(micros) for micros in spot.micros if micros >= 0)
                flat = [value for pair in sorted(slots.items()) for value in pair]
                out[destination] = EncodedSpot(count=len(spot.micros), first_ns=spot.first_ns,
                                               last_ns=spot.last_ns, slots=flat)  # fmt: skip
                spot.micros = []
        return out

    def merge(self, drained: dict[str, EncodedSpot], node: str = "") -> None:
        """Add a drain's deliveries (``node``: who shipped them, unused: deliveries simply add)."""
        for destination, e in drained.items():
            merged = self._merged.get(destination)
            if merged is None:
                merged = self._merged[destination] = _Merged()
                merged.first_ns = e["first_ns"]
            merged.count += e["count"]
            merged.first_ns = min(merged.first_ns, e["first_ns"])
            merged.last_ns = max(merged.last_ns, e["last_ns"])
            slots = e["slots"]
            merged.slots.update(dict(zip(slots[::2], slots[1::2], strict=True)))

    def fold(self) -> None:
        """A process without a master: its own drain into its own merged figures."""
        self.merge(self.drain())

    def figures(self) -> dict[str, DestinationFigures]:
        """Per destination merged so far: deliveries, the first and last one's time, p50 and p99 (ms)."""
        out = {}
        for destination, m in self._merged.items():
            p50, p99 = (percentile_of(m.slots, p) for p in (50.0, 99.0))
            out[destination] = DestinationFigures(
                received=m.count,
                first_ns=m.first_ns,
                last_ns=m.last_ns,
                p50_ms=None if p50 is None else p50 / 1000.0,
                p99_ms=None if p99 is None else p99 / 1000.0,
            )
        return out
