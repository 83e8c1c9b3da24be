"""One destination's totals from a book's tallies: the row the report and the InfluxDB sink share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from mqusers.measure.book import Tally, by_destination
from mqusers.measure.names import RECEIVE, SEND, SUBSCRIBE, destination_kind

#: Rates divide by at least this (s): one send and its receive in the same instant have no span.
MIN_SPAN_S = 1e-3


@dataclass(frozen=True)
class DestinationRow:
    """A destination's sends and receives. Each rate is over the span its own messages took: sends
    over their first to last send (``send_span_s``), receives over their first to last receive
    (``receive_span_s``), so start-up, idle time, the drain's wait and the other direction are not
    in it. ``span_s`` runs from the first of either to the last of either."""

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
    send_span_s: float = 0.0
    receive_span_s: float = 0.0

    @property
    def backlog(self) -> int:
        """Messages still expected to arrive: a topic delivers each to every subscription, a queue once."""
        fan_out = self.subscriptions if destination_kind(self.destination) == "topic" else 1
        return self.sent * fan_out - self.received

    @property
    def throughput_msgs(self) -> float:
        """Sent over ``span_s`` (first send to last receive): what the destination carried end to end;
        a backlog still draining after the last send pulls it below the send rate."""
        return rate(self.sent, self.span_s)

    @property
    def throughput_mbit(self) -> float:
        return rate(self.sent_bytes * 8, self.span_s) / 1e6

    @property
    def send_rate_msgs(self) -> float:
        return rate(self.sent, self.send_span_s)

    @property
    def send_rate_mbit(self) -> float:
        return rate(self.sent_bytes * 8, self.send_span_s) / 1e6

    @property
    def receive_rate_msgs(self) -> float:
        return rate(self.received, self.receive_span_s)

    @property
    def receive_rate_mbit(self) -> float:
        return rate(self.received_bytes * 8, self.receive_span_s) / 1e6


def rate(count: float, span_s: float) -> float:
    """``count`` per second over ``span_s`` (at least :data:`MIN_SPAN_S`); 0 when there is nothing."""
    return count / max(span_s, MIN_SPAN_S) if count else 0.0


def destination_rows(
    tallies: Mapping[str, Tally], sending_until: Mapping[str, float] | None = None
) -> list[DestinationRow]:
    """One row per destination with sends, receives or subscriptions (a drain of nothing shows its zeros), sorted by
    destination.

    ``sending_until``: per destination, when a producer was last seen blocked in a send (epoch s):
    the send span runs at least that far, so sends written into socket buffers just before a broker
    stopped reading do not show as a burst rate over a few milliseconds.
    """
    rows = []
    for destination, operations in sorted(by_destination(tallies).items()):
        if SEND not in operations and RECEIVE not in operations and SUBSCRIBE not in operations:
            continue
        send, receive, subscribe = (operations.get(op, Tally()) for op in (SEND, RECEIVE, SUBSCRIBE))
        blocked_until = (sending_until or {}).get(destination, 0.0)
        send_span = max(send.last, blocked_until) - send.first if send.count else 0.0
        receive_span = receive.last - receive.first if receive.count else 0.0
        active = [t for t in (send, receive) if t.count]
        end = max([*(t.last for t in active), blocked_until])
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
                send_span_s=send_span,
                receive_span_s=receive_span,
            )
        )
    return rows
