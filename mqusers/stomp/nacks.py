"""Which deliveries a consumer NACKs (``--mq-nack-ratio``, ``--mq-nack-times``), decided by seq so the counts are exact.

Pure, on the per-message path. A message is *chosen* when its seq carries the running count of
``seq x ratio`` over a whole number (``floor(seq*r) > floor((seq-1)*r)``): seqs 1..n of a producer
hold exactly ``floor(n*r)`` chosen ones, spread evenly (ratio 0.1: seqs 10, 20, ...). A
:class:`NackCounts` NACKs each chosen message ``times`` times and accepts it after that; it is one
per process and queue (its competing consumers share it) or per topic subscription, so a redelivery
that reaches another consumer of the process is still known as one (Artemis flags only the first of
a message's redeliveries ``redelivered``: mqusers.stomp.dialects).
"""

from __future__ import annotations

from fractions import Fraction

from mqusers.audit.ledgers import Subscription


def as_ratio(value: float) -> Fraction:
    """The ratio as a fraction of small terms: ``0.1`` is 1/10, not the float's binary expansion."""
    return Fraction(value).limit_denominator(1_000_000)


def chosen(seq: int, ratio: Fraction) -> bool:
    """Whether seq's message is one to NACK."""
    p, q = ratio.numerator, ratio.denominator
    return seq * p // q > (seq - 1) * p // q


def chosen_up_to(last: int, ratio: Fraction) -> int:
    """How many of seqs 1..``last`` are chosen."""
    return last * ratio.numerator // ratio.denominator


class NackCounts:
    """NACKs a chosen message ``times`` times, then accepts it; remembers which it NACKed."""

    __slots__ = ("_counts", "_p", "_q", "times")

    def __init__(self, ratio: Fraction, times: int):
        self._p, self._q, self.times = ratio.numerator, ratio.denominator, times
        self._counts: dict[tuple[str | bytes, int], int] = {}

    def refuse(self, producer: str | bytes, seq: int) -> bool:
        """Whether to NACK this delivery (counted as NACKed if so)."""
        if seq * self._p // self._q <= (seq - 1) * self._p // self._q:
            return False
        key = (producer, seq)
        done = self._counts.get(key, 0)
        if done >= self.times:
            return False
        self._counts[key] = done + 1
        return True

    def deliver(self, audit: Subscription, producer: str | bytes, seq: int, flagged: bool) -> bool:
        """Record one delivery in ``audit``, NACKed or received; True when it is to be NACKed. The first delivery
        accepted after this process's NACKs is a redelivery whatever the broker's flag (``flagged``) says; one
        after that is judged by the flag alone (a duplicate unless flagged)."""
        if self.refuse(producer, seq):
            audit.nack(producer, seq)
            return True
        key = (producer, seq)
        if self._counts.get(key) == self.times:
            self._counts[key] = self.times + 1  # accepted: later deliveries are no longer ours to explain
            flagged = True
        audit.record(producer, seq, flagged)
        return False
