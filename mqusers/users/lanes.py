"""A producer's destinations: one :class:`Lane` each (its publishers, audit record, seqs) and the bodies dealt to it.

The bodies are dealt out to the lanes (lane i sends bodies i, i + lanes...; with more lanes than
bodies, body i modulo their number): a write in turn still carries the next body, and 10,000 lanes
do not hold 16 frames each.
"""

from __future__ import annotations

from dataclasses import dataclass

from mqusers.audit.ledgers import SentStream
from mqusers.stomp.client import Publisher


@dataclass(slots=True)
class Lane:
    """One destination of a producer: its frames (a publisher per body it sends there), its record for
    the audit and its own seqs (from 1)."""

    destination: str
    publishers: list[Publisher]
    sent: SentStream
    #: The last seq sent to it, and the first sent on the current connection.
    seq: int = 0
    connection_seq: int = 1
    #: The body size its publishers were made for (a profile's size column changes the producer's).
    size: int = 0


def dealt(bodies: tuple[bytes, ...], lanes: int, lane: int) -> tuple[bytes, ...]:
    """The bodies lane ``lane`` of ``lanes`` sends: every one for a plain destination (one lane)."""
    return bodies[lane::lanes] if lanes < len(bodies) else (bodies[lane % len(bodies)],)
