"""What one producer sent, and when: the master's merged record the audit's windows are cut from.

Workers ship a producer's seqs and sparse ``(seq, send time)`` checkpoints; :meth:`SendRecord.before`
and :meth:`SendRecord.after` answer "up to which seq was everything certainly sent before t" and
"from which seq was everything certainly sent after t", also when the checkpoints' times are not
monotone (clock steps), by prefix maxima and suffix minima.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from itertools import accumulate, pairwise
from typing import Any

from mqusers.audit.intervals import IntervalBag, IntervalSet


class SendRecord:
    """One producer's sends on one destination as the master merged them: the seqs (with resends)
    and, from the time checkpoints, which seqs were certainly sent before or after a moment."""

    __slots__ = ("_bounds", "aborted", "bag", "cp_ns", "cp_seq", "group", "label", "last_ns", "monotone", "process",
                 "ttl_ns", "unconfirmed")  # fmt: skip

    def __init__(self) -> None:
        self.process, self.bag, self.last_ns, self.monotone = "", IntervalBag(), -1, True
        #: The ``mqlabel`` its messages carry ("" for none), which selectors take or leave.
        self.label = ""
        #: Each message's time-to-live (0: none): it expires that long after its send.
        self.ttl_ns = 0
        #: The message group (``JMSXGroupID``) its messages carry ("" for none).
        self.group = ""
        self.unconfirmed = IntervalSet()
        #: Seqs of aborted (or rolled back) transactions: never expected to arrive.
        self.aborted = IntervalSet()
        self.cp_seq, self.cp_ns = array("q"), array("q")
        self._bounds: tuple[Any, Any] | None = None

    def add_checkpoints(self, pairs: list[list[int]]) -> None:
        seqs, times = self.cp_seq, self.cp_ns
        if not pairs:
            return
        if all(a[0] < b[0] for a, b in pairwise(pairs)) and (not seqs or pairs[0][0] > seqs[-1]):
            joined = [*times[-1:], *(t for _, t in pairs)]
            self.monotone = self.monotone and all(a <= b for a, b in pairwise(joined))
            seqs.extend(s for s, _ in pairs)
            times.extend(t for _, t in pairs)
        else:
            merged = dict(zip(seqs, times, strict=True))
            for s, t in pairs:
                merged[s] = min(t, merged.get(s, t))
            order = sorted(merged)
            self.cp_seq, self.cp_ns = array("q", order), array("q", (merged[s] for s in order))
            self.monotone = all(merged[a] <= merged[b] for a, b in pairwise(order))
        self._bounds = None

    def _prefix_suffix(self) -> tuple[Any, Any]:
        if self._bounds is None:
            t = self.cp_ns
            self._bounds = (t, t) if self.monotone else (
                list(accumulate(t, max)), list(accumulate(reversed(t), min))[::-1])  # fmt: skip
        return self._bounds

    @property
    def first_ns(self) -> int:
        return self.cp_ns[0] if self.cp_ns else -1

    def before(self, t: int) -> int:
        """The highest seq up to which every seq was certainly sent before ``t`` (-1: none)."""
        top = self.bag.distinct.last
        if top is None or self.last_ns < t:
            return -1 if top is None else top
        i = bisect_left(self._prefix_suffix()[0], t)
        return self.cp_seq[i - 1] if i else -1

    def after(self, t: int) -> int:
        """The lowest seq from which every seq was certainly sent after ``t``."""
        j = bisect_right(self._prefix_suffix()[1], t)
        return self.cp_seq[j] if j < len(self.cp_seq) else (self.bag.distinct.last or 0) + 1

    def expired_by(self, t: int) -> int:
        """The highest seq up to which every seq had certainly expired by ``t`` (-1: none, or no time-to-live)."""
        return self.before(t - self.ttl_ns) if self.ttl_ns else -1
