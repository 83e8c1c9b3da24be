"""A producer's publishers: one pre-encoded SEND per body (and priority level), and which one a message takes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mqusers.options.priorities import PRIORITY, level_of, value_of
from mqusers.stomp.client import Publisher, StompClient
from mqusers.stomp.wire import SendFrames


@dataclass(frozen=True)
class Stamping:
    """What every SEND of one producer carries, whatever its destination and body."""

    run_id: str
    producer_id: str
    #: The destination (or pattern) its events are named after.
    label: str
    persistent: bool
    ttl_ms: int
    #: Priority levels (2 to 10), or 0 for no priority header.
    priorities: int
    #: The class's extra headers, then the producer's own (selector label, message group).
    headers: Mapping[str, str]


def publishers_for(
    client: StompClient, stamping: Stamping, destination: str, bodies: Sequence[bytes]
) -> list[Publisher]:
    """One publisher per body, per priority level when there are levels (level first)."""
    dialect, ttl = client.dialect, stamping.ttl_ms
    frame_headers = {**dialect.send_headers(destination), **dialect.expiry_headers(ttl), **stamping.headers}
    if stamping.persistent:
        frame_headers["persistent"] = "true"
    expiry = (dialect.expiry_header, ttl) if ttl and dialect.expiry_absolute else None
    stamps = [frame_headers]
    if stamping.priorities:
        frame_headers.update(dialect.priority_queue_headers(destination))
        stamps = [{**frame_headers, PRIORITY: str(value_of(level, stamping.priorities))}
                  for level in range(stamping.priorities)]  # fmt: skip
    return [client.publisher(destination, SendFrames(destination, body, stamping.run_id, stamping.producer_id,
                                                     stamp, expiry), label=stamping.label)
            for stamp in stamps for body in bodies]  # fmt: skip


def choose(publishers: Sequence[Publisher], turn: int, seq: int, priorities: int) -> Publisher:
    """Body ``turn`` (in turn, one per write); with priorities, among those of message ``seq``'s level."""
    if priorities:
        bodies = len(publishers) // priorities
        return publishers[level_of(seq, priorities) * bodies + turn % bodies]
    return publishers[turn % len(publishers)]
