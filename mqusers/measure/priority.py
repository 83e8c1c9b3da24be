"""Priority in a backlog's drain, pure: each consumer's deliveries in order, and the inversions in them.

An *inversion* is a delivery of a lower priority while a message of a higher one was already waiting:
a message of the backlog (sent before the switch, so at the broker when the drain began) that the
same consumer is handed later. Counted per consumer from its delivery order, backwards: a delivery
is an inversion when a later delivery of a higher level was the backlog's. Each delivery costs one
byte (its level, and whether it was the backlog's); a consumer's first :data:`MAX_DELIVERIES` are
kept, what came after is counted (``beyond_cap``) but not ordered, so the count covers the kept ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mqusers.measure.names import RECEIVE_PRIORITY
from mqusers.measure.recorder import Record
from mqusers.options.priorities import MAX_LEVELS, level_of, value_of

#: Deliveries kept per consumer (one byte each): 16 MB at most per consumer.
MAX_DELIVERIES = 16_000_000
#: Set on a delivery's byte when it was the backlog's; the low bits are its level.
_BACKLOG = 0x80


class DeliveryOrder:
    """One consumer's deliveries of this run, in the order they came."""

    def __init__(self, levels: int, cap: int = MAX_DELIVERIES):
        self.levels = levels
        self.order = bytearray()
        self.cap = cap
        self.beyond_cap = 0

    def record(self, level: int, backlog: bool) -> None:
        if len(self.order) < self.cap:
            self.order.append(level | _BACKLOG if backlog else level)
        else:
            self.beyond_cap += 1


def inversions(order: bytes | bytearray) -> list[int]:
    """Per level, its deliveries that came while a backlog message of a higher level waited for a later one."""
    counts = [0] * MAX_LEVELS
    top = -1  # the highest level among the later deliveries that were the backlog's
    for code in reversed(order):
        level = code & ~_BACKLOG
        if level < top:
            counts[level] += 1
        if code & _BACKLOG and level > top:
            top = level
    return counts


@dataclass
class PriorityFigures:
    """Every consumer's :class:`DeliveryOrder` of one backlog run (a single process)."""

    orders: list[DeliveryOrder] = field(default_factory=list)

    def order(self, levels: int) -> DeliveryOrder:
        """A new consumer's record."""
        record = DeliveryOrder(levels)
        self.orders.append(record)
        return record

    def document(self) -> dict[str, Any] | None:
        """Per level (lowest first): its ``priority`` header's value, deliveries and inversions; None: no priorities."""
        if not self.orders:
            return None
        levels = self.orders[0].levels
        received, inverted = [0] * levels, [0] * levels
        per_consumer = []
        for record in self.orders:
            counts = inversions(record.order)
            per_consumer.append(sum(counts))
            for level in range(levels):
                inverted[level] += counts[level]
            for level in range(levels):
                received[level] += record.order.count(level) + record.order.count(level | _BACKLOG)
        return {
            "levels": levels,
            "priorities": [value_of(level, levels) for level in range(levels)],
            "received": received,
            "inversions": inverted,
            "inversions_total": sum(inverted),
            "inversions_per_consumer": per_consumer,
            "beyond_cap": sum(record.beyond_cap for record in self.orders),
        }


class PriorityTally:
    """A consumer's side of a priority run: its deliveries' order, and their latency per priority.

    ``operation`` makes the recorder's operation of an operation name (``receive-p9``...): one per
    priority, each a latency row of its own beside ``receive``.
    """

    def __init__(self, order: DeliveryOrder, operation: Callable[[str], Record]):
        self.order = order
        self.levels = order.levels
        self._by_level = [
            operation(f"{RECEIVE_PRIORITY}{value_of(level, order.levels)}") for level in range(order.levels)
        ]
        for each in self._by_level:
            each.cut = False  # cut by each message's send time, as receive is

    def delivered(self, seq: int, backlog: bool, latency_us: int, size: int, received_ns: int, measured: bool) -> None:
        level = level_of(seq, self.levels)
        self.order.record(level, backlog)
        if measured:
            self._by_level[level].record(latency_us, size, received_ns)
