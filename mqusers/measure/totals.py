"""One destination's totals from a book's tallies: the row the report and the InfluxDB sink share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from mqusers.measure.book import Tally, by_destination
from mqusers.names import RECEIVE, SEND, SUBSCRIBE, destination_kind

#: Rates divide by at least this (s): one send and its receive in the same instant have no span.
MIN_SPAN_S = 1e-3


@dataclass(frozen=True)
class DestinationRow:
    """A destination's sends and receives; ``span_s`` runs from its first send (or receive) to its last
    receive (or send), so start-up, idle time and the drain's wait are not in its rates."""

    destination: str
    sent: int  # successful sends
    received: int
    errors: int  # failures of every operation on the destination
    subscriptions: int  # successful subscribes
    sent_bytes: int
    received_bytes: int
    span_s: float
    #: The receive tally: who shows latency figures reads its histogram (the sink's own figures differ).
    receive: Tally = field(repr=False, compare=False)

    @property
    def backlog(self) -> int:
        """Messages still expected to arrive: a topic delivers each to every subscription, a queue once."""
        fan_out = self.subscriptions if destination_kind(self.destination) == "topic" else 1
        return self.sent * fan_out - self.received

    @property
    def send_rate_msgs(self) -> float:
        return self.sent / max(self.span_s, MIN_SPAN_S)

    @property
    def send_rate_mbit(self) -> float:
        return self.sent_bytes * 8 / max(self.span_s, MIN_SPAN_S) / 1e6

    @property
    def receive_rate_msgs(self) -> float:
        return self.received / max(self.span_s, MIN_SPAN_S)

    @property
    def receive_rate_mbit(self) -> float:
        return self.received_bytes * 8 / max(self.span_s, MIN_SPAN_S) / 1e6


def destination_rows(
    tallies: Mapping[str, Tally], sending_until: Mapping[str, float] | None = None
) -> list[DestinationRow]:
    """One row per destination with sends or receives, sorted by destination.

    ``sending_until``: per destination, when a producer was last seen blocked in a send (epoch s):
    the span runs at least that far, so sends written into socket buffers just before a broker
    stopped reading do not show as a burst rate over a few milliseconds.
    """
    rows = []
    for destination, operations in sorted(by_destination(tallies).items()):
        if SEND not in operations and RECEIVE not in operations:
            continue
        send, receive, subscribe = (operations.get(op, Tally()) for op in (SEND, RECEIVE, SUBSCRIBE))
        active = [t for t in (send, receive) if t.count]
        end = max([*(t.last for t in active), (sending_until or {}).get(destination, 0.0)])
        span = end - min(t.first for t in active) if active else 0.0
        rows.append(
            DestinationRow(
                destination=destination,
                sent=send.count - send.failures,
                received=receive.count,
                errors=sum(t.failures for t in operations.values()),
                subscriptions=subscribe.count - subscribe.failures,
                sent_bytes=send.bytes,
                received_bytes=receive.bytes,
                span_s=span,
                receive=receive,
            )
        )
    return rows
