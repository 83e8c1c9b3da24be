"""The audit's arithmetic for one producer: what a subscription expects of it and how what arrived compares.

:mod:`mqusers.audit.audit` defines the figures (expected, lost, unreceived, in flight...) and
calls these per producer and subscription (topic) or group (queue).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mqusers.audit.intervals import IntervalBag, IntervalSet
from mqusers.audit.sendrecord import SendRecord

Figures = dict[str, Any]
#: Above every seq: an open end.
END = (1 << 63) - 1


def topic_window(
    process: str,
    sessions_by_join: Mapping[int, int | None],
    durable: bool,
    p: SendRecord,
    offsets: Mapping[str, int],
    drain_ns: int,
    horizon: int,
) -> tuple[IntervalSet, IntervalSet]:
    """Seqs of ``p`` that a topic subscription expects, and the seqs that may still be in flight to it.

    ``process``: the subscription's; ``sessions_by_join``: its sessions, joined -> left (None while
    subscribed), on its own clock; a ``durable`` one has one window from its first join to its last leave.
    """
    shift = offsets.get(p.process, 0) - offsets.get(process, 0)  # subscriber clock -> producer clock
    window, zone = IntervalSet(), IntervalSet([(p.before(horizon + offsets.get(p.process, 0)) + 1, END)])
    sessions = sorted(sessions_by_join.items())
    if durable and sessions:
        sessions = [(sessions[0][0], sessions[-1][1])]
    for joined, left in sessions:
        start = joined + shift
        lo = 0 if start < p.first_ns else p.after(start)
        hi = END if left is None else p.before(left + shift)
        if left is not None:
            zone.add_range(max(lo, p.before(left + shift - drain_ns) + 1), hi)
        window.add_range(lo, hi)
    return window, zone


def compare(
    into: tuple[Figures, ...],
    p: SendRecord,
    expected: IntervalSet,
    bag: IntervalBag,
    zone: IntervalSet,
    settled: bool,
    worker_lost: bool = False,
    flagged: IntervalSet | None = None,
    expired_upto: int = -1,
    nacked: IntervalSet | None = None,
) -> None:
    """Add one producer's expected-versus-received figures to each of ``into`` (computed once);
    ``worker_lost``: a lost process sent them or may have received them, so none is lost or unreceived;
    ``flagged``: seqs delivered flagged redelivered, received but never duplicates (``bag`` leaves them out);
    seqs of ``p``'s aborted transactions are never expected: one received is ``aborted_delivered``;
    ``expired_upto``: seqs up to it had expired by the end (:meth:`SendRecord.expired_by`): missing, they are
    expired, not lost;
    ``nacked``: seqs NACKed: missing ones were dead-lettered once ``settled``."""
    received = bag.distinct
    if flagged:
        received = received.copy()
        received.union(flagged)
    # Whenever sent: one delivered to a subscription that joined later is a violation too.
    aborted, in_time = p.aborted, received
    if aborted:
        expected, in_time = expected.difference(aborted), received.difference(aborted)
    missing = expected.difference(received)
    dead = 0
    if nacked and settled and not worker_lost:
        dead = len(missing.intersection(nacked))
        missing = missing.difference(nacked)
    unconfirmed = missing.intersection(p.unconfirmed)
    rest = missing.difference(p.unconfirmed)
    expired = IntervalSet()
    if expired_upto > 0 and not worker_lost:  # a lost producer's sends may never have left it
        expired = rest.intersection(IntervalSet([(0, expired_upto)]))
        rest = rest.difference(expired)
    waiting = rest.difference(zone)
    top = in_time.last
    # Evidence of loss: a later message of the same producer arrived, and the consumers went idle.
    lost = len(waiting.intersection(IntervalSet([(0, top)]))) if settled and top is not None else 0
    unexpected = in_time.difference(expected)
    if worker_lost:
        lost = 0
        # Above the last seq shipped as sent: a lost producer's sends that never reached its ledger.
        unexpected = unexpected.intersection(IntervalSet([(0, p.bag.distinct.last or 0)]))
    figures = {
        "expected": len(expected),
        "received": len(received),
        "lost": lost,
        "unreceived": 0 if worker_lost else len(waiting) - lost,
        "worker_lost": len(waiting) if worker_lost else 0,
        "unconfirmed": len(unconfirmed),
        "expired": len(expired),
        "in_flight": len(rest) - len(waiting),
        "unexpected": len(unexpected),
        "aborted_delivered": len(received) - len(in_time),
        "dead_lettered": dead,
        # deliveries beyond sends: received more than k times, sent at most k times
        "duplicated": sum(len(bag.layers[k].difference(p.bag.above(k))) for k in range(1, len(bag.layers))),
    }
    for fig in into:
        for key, value in figures.items():
            fig[key] += value
