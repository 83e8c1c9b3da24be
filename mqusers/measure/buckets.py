"""One bucket of the per-second series: its counts and receive latencies in log slots, packed when sealed.

Latencies are grouped into slots of 1/16 relative width (:func:`slot`); a bucket's percentiles are
read from its slot counts (:func:`percentile_of`), so buckets from several workers merge exactly.
"""

from __future__ import annotations

import itertools
import math
from array import array
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from mqusers.measure.book import slot_floor

#: Packed slots: 4-byte unsigned slot starts and counts; a latency of 71 minutes or more is kept as 2^32-1 µs.
_PACKED = "I"
_PACKED_MAX = 2**32 - 1

#: Latencies below 2^5 µs are kept exact; above, a slot is 1/16 of its value wide (~6 %): enough for
#: a chart over time (the run's exact percentiles are the book's HdrHistograms).
SLOT_BITS = 5


def slot(micros: int) -> int:
    """The lowest value of ``micros``' slot: values in one slot are not told apart."""
    return slot_floor(micros, SLOT_BITS)


def slot_top(low: int) -> int:
    """The highest value in the slot starting at ``low`` (reported, as HdrHistogram reports a slot's top)."""
    shift = low.bit_length() - SLOT_BITS
    return low + (1 << shift) - 1 if shift > 0 else low


def percentile_of(slots: Mapping[int, int], percentile: float) -> int | None:
    """Nearest-rank percentile of slot counts, as the slot's highest value (µs); None when empty."""
    total = sum(slots.values())
    if total == 0:
        return None
    rank = max(1, math.ceil(round(percentile / 100.0 * total, 9)))
    running = 0
    for low in sorted(slots):
        running += slots[low]
        if running >= rank:
            return slot_top(low)
    raise AssertionError("unreachable: the ranks add up to the total")


class Traffic:
    """One destination's bucket: counts and the receive latency slots (live, or packed once sealed)."""

    __slots__ = ("_live", "_packed", "errors", "received", "sent")

    def __init__(self, sent: int = 0, received: int = 0, errors: int = 0, latency: Counter[int] | None = None):
        self.sent, self.received, self.errors = sent, received, errors
        self._live: Counter[int] | None = Counter() if latency is None else latency
        #: Sealed: slot, count, slot, count... in slot order.
        self._packed: array[int] | None = None

    @property
    def latency(self) -> Counter[int]:
        """The slot counts to add to (a sealed bucket is unpacked)."""
        if self._live is None:
            packed = self._packed or array(_PACKED)
            self._live, self._packed = Counter(dict(zip(packed[::2], packed[1::2], strict=True))), None
        return self._live

    def slots(self) -> Mapping[int, int]:
        """The slot counts to read (a sealed bucket stays packed)."""
        if self._live is not None:
            return self._live
        packed = self._packed or array(_PACKED)
        return dict(zip(packed[::2], packed[1::2], strict=True))

    @property
    def sealed(self) -> bool:
        return self._live is None

    @property
    def size(self) -> int:
        """Bytes of its packed slots (0 while live: only the newest few seconds are)."""
        return 0 if self._packed is None else self._packed.itemsize * len(self._packed)

    def seal(self) -> None:
        if self._live is not None:
            pairs = sorted((min(low, _PACKED_MAX), min(count, _PACKED_MAX)) for low, count in self._live.items())
            self._packed = array(_PACKED, itertools.chain.from_iterable(pairs))
            self._live = None

    def add(self, other: Traffic) -> None:
        self.sent += other.sent
        self.received += other.received
        self.errors += other.errors
        self.latency.update(other.slots())


@dataclass(slots=True)
class Load:
    """One load process's bucket: CPU summed over its seconds (for the mean) and the worst loop lag."""

    cpu_sum: float = 0.0
    seconds: int = 0
    lag_max_ms: float = 0.0

    def add(self, other: Load) -> None:
        self.cpu_sum += other.cpu_sum
        self.seconds += other.seconds
        self.lag_max_ms = max(self.lag_max_ms, other.lag_max_ms)
