"""A compact set of non-negative integers kept as sorted, disjoint, non-adjacent closed intervals.

Sequence numbers mostly arrive in order, so :meth:`IntervalSet.add` first tries to extend the last
interval (one comparison, no search); anything else is a ``bisect``. Ten million in-order adds cost
one interval. Set operations (:meth:`~IntervalSet.union`, :meth:`~IntervalSet.difference`,
:meth:`~IntervalSet.intersection`) are linear in the number of intervals. :class:`IntervalBag` is
the multiset version (how many times each number was sent or delivered), one IntervalSet per
multiplicity, so "each once" costs a single IntervalSet.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence

Encoded = list[list[int]]
#: Sets of more intervals than this are packed as bytes (:meth:`IntervalSet.pack`): 16 bytes an interval where
#: the list form, decoded on the master, holds a list and two ints (~120 bytes) each until the shares are folded.
PACK_FROM = 2


class IntervalSet:
    __slots__ = ("_hi", "_lo")

    def __init__(self, intervals: Iterable[Sequence[int]] = ()):
        self._lo: list[int] = []
        self._hi: list[int] = []
        for lo, hi in intervals:
            self.add_range(lo, hi)

    def add(self, n: int) -> bool:
        """Add ``n``; ``True`` when it was not already in the set."""
        his = self._hi
        if his and n == his[-1] + 1:
            his[-1] = n
            return True
        return self._insert(n)

    def _insert(self, n: int) -> bool:
        if n < 0:
            raise ValueError(f"IntervalSet holds non-negative integers, not {n}")
        los, his = self._lo, self._hi
        i = bisect_right(los, n)  # los[i - 1] <= n < los[i]
        if i and his[i - 1] >= n:
            return False
        joins_left = i > 0 and his[i - 1] == n - 1
        joins_right = i < len(los) and los[i] == n + 1
        if joins_left and joins_right:
            his[i - 1] = his[i]
            del los[i], his[i]
        elif joins_left:
            his[i - 1] = n
        elif joins_right:
            los[i] = n
        else:
            los.insert(i, n)
            his.insert(i, n)
        return True

    def add_range(self, lo: int, hi: int) -> int:
        """Add ``lo..hi`` inclusive; returns how many of those integers were new."""
        if hi < lo:
            return 0
        if lo < 0:
            raise ValueError(f"IntervalSet holds non-negative integers, not {lo}")
        los, his = self._lo, self._hi
        if not his or lo > his[-1] + 1:
            los.append(lo)
            his.append(hi)
            return hi - lo + 1
        i = bisect_left(his, lo - 1)  # first interval that touches or follows lo
        j = bisect_right(los, hi + 1)  # intervals i..j-1 touch lo..hi
        added = hi - lo + 1 - sum(max(0, min(his[k], hi) - max(los[k], lo) + 1) for k in range(i, j))
        if i < j:
            lo, hi = min(lo, los[i]), max(hi, his[j - 1])
        los[i:j] = [lo]
        his[i:j] = [hi]
        return added

    def union(self, other: IntervalSet) -> None:
        """Add every member of ``other`` (in place)."""
        if not other._lo:
            return
        if not self._lo or other._lo[0] > self._hi[-1] + 1:
            self._lo.extend(other._lo)
            self._hi.extend(other._hi)
            return
        self._lo, self._hi = _coalesce(sorted(zip(self._lo + other._lo, self._hi + other._hi, strict=True)))

    def difference(self, other: IntervalSet) -> IntervalSet:
        """A new set: members of this set that are not in ``other``."""
        out = IntervalSet()
        olo, ohi, m, j = other._lo, other._hi, len(other._lo), 0
        for lo, hi in zip(self._lo, self._hi, strict=True):
            while j < m and ohi[j] < lo:
                j += 1
            start, k = lo, j
            while k < m and olo[k] <= hi:
                if olo[k] > start:
                    out._lo.append(start)
                    out._hi.append(olo[k] - 1)
                start = max(start, ohi[k] + 1)
                k += 1
            if start <= hi:
                out._lo.append(start)
                out._hi.append(hi)
        return out

    def intersection(self, other: IntervalSet) -> IntervalSet:
        """A new set: members of both."""
        out = IntervalSet()
        alo, ahi, blo, bhi = self._lo, self._hi, other._lo, other._hi
        i = j = 0
        while i < len(alo) and j < len(blo):
            lo, hi = max(alo[i], blo[j]), min(ahi[i], bhi[j])
            if lo <= hi:
                out._lo.append(lo)
                out._hi.append(hi)
            if ahi[i] < bhi[j]:
                i += 1
            else:
                j += 1
        return out

    def count_in(self, lo: int, hi: int) -> int:
        """How many members lie in ``lo..hi`` inclusive."""
        if hi < lo:
            return 0
        los, his = self._lo, self._hi
        i, n, total = bisect_left(his, lo), len(los), 0
        while i < n and los[i] <= hi:
            total += min(his[i], hi) - max(los[i], lo) + 1
            i += 1
        return total

    def missing_in(self, lo: int, hi: int) -> int:
        """How many integers of ``lo..hi`` inclusive are not members."""
        return 0 if hi < lo else hi - lo + 1 - self.count_in(lo, hi)

    @property
    def intervals(self) -> list[tuple[int, int]]:
        return list(zip(self._lo, self._hi, strict=True))

    @property
    def first(self) -> int | None:
        return self._lo[0] if self._lo else None

    @property
    def last(self) -> int | None:
        return self._hi[-1] if self._hi else None

    def copy(self) -> IntervalSet:
        out = IntervalSet()
        out._lo, out._hi = self._lo[:], self._hi[:]
        return out

    def encode(self) -> Encoded:
        return [[lo, hi] for lo, hi in zip(self._lo, self._hi, strict=True)]

    def pack(self) -> Encoded | bytes:
        """:meth:`encode`, or for a fragmented set (a competing consumer's share) its intervals as bytes: lo, hi,
        lo, hi... as little-endian int64, 16 bytes an interval and no object each (sets join by concatenation)."""
        if len(self._lo) <= PACK_FROM:
            return self.encode()
        bounds = array("q", bytes(16 * len(self._lo)))
        bounds[0::2], bounds[1::2] = array("q", self._lo), array("q", self._hi)
        if sys.byteorder == "big":
            bounds.byteswap()
        return bounds.tobytes()

    @classmethod
    def decode(cls, data: Iterable[Sequence[int]] | bytes) -> IntervalSet:
        if isinstance(data, bytes):
            data = zip(*unpack(data), strict=True)
        pairs = sorted((int(lo), int(hi)) for lo, hi in data)
        if any(lo < 0 or hi < lo for lo, hi in pairs):
            raise ValueError("IntervalSet.decode: intervals must be non-negative [lo, hi] with lo <= hi")
        out = cls()
        out._lo, out._hi = _coalesce(pairs)
        return out

    def __contains__(self, n: object) -> bool:
        if not isinstance(n, int):
            return False
        i = bisect_right(self._lo, n)
        return i > 0 and self._hi[i - 1] >= n

    def __len__(self) -> int:
        return sum(self._hi) - sum(self._lo) + len(self._lo)

    def __bool__(self) -> bool:
        return bool(self._lo)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IntervalSet) and self._lo == other._lo and self._hi == other._hi

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"IntervalSet({self.intervals!r})"


def unpack(data: bytes) -> tuple[list[int], list[int]]:
    """The lower and the upper bounds of a :meth:`IntervalSet.pack` ed set."""
    if len(data) % 16:
        raise ValueError(f"a packed interval set is 16 bytes an interval, not {len(data)} bytes")
    bounds = array("q")
    bounds.frombytes(data)
    if sys.byteorder == "big":
        bounds.byteswap()
    return bounds[0::2].tolist(), bounds[1::2].tolist()


def _coalesce(pairs: Iterable[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """Sorted (lo, hi) pairs to disjoint, non-adjacent intervals."""
    los: list[int] = []
    his: list[int] = []
    for lo, hi in pairs:
        if his and lo <= his[-1] + 1:
            if hi > his[-1]:
                his[-1] = hi
        else:
            los.append(lo)
            his.append(hi)
    return los, his


class IntervalBag:
    """A multiset of non-negative integers: ``layers[k]`` holds the members present more than k times."""

    __slots__ = ("layers",)

    def __init__(self) -> None:
        self.layers = [IntervalSet()]

    @property
    def distinct(self) -> IntervalSet:
        return self.layers[0]

    def add(self, n: int) -> bool:
        """Add one copy of ``n``; ``True`` when it is the first."""
        if self.layers[0].add(n):
            return True
        self.again(n)
        return False

    def again(self, n: int) -> None:
        """Add a copy of ``n``, already a member (the slow half of :meth:`add`)."""
        for layer in self.layers[1:]:
            if layer.add(n):
                return
        self.layers.append(IntervalSet([(n, n)]))

    def above(self, k: int) -> IntervalSet:
        """The members present more than ``k`` times (``above(0)`` is :attr:`distinct`)."""
        return self.layers[k] if k < len(self.layers) else IntervalSet()

    def merge(self, other: IntervalBag) -> None:
        """Multiset sum, in place: a member present a times here and b times there is present a + b times."""
        if not other.layers[0]:
            return
        if not self.layers[0]:
            self.layers = [layer.copy() for layer in other.layers]
            return
        mine, theirs, out = self.layers, other.layers, []
        for k in range(1, len(mine) + len(theirs) + 1):  # members present at least k times in the sum
            layer = IntervalSet()
            for j in range(k + 1):  # at least k - j copies here and j there
                i = k - j
                if i > len(mine) or j > len(theirs):
                    continue
                layer.union(
                    theirs[j - 1] if not i else mine[i - 1] if not j else mine[i - 1].intersection(theirs[j - 1])
                )
            if not layer:
                break
            out.append(layer)
        self.layers = out

    def encode(self) -> list[Encoded]:
        return [layer.encode() for layer in self.layers if layer] or [[]]

    def pack(self) -> list[Encoded | bytes]:
        """:meth:`encode` with each fragmented layer packed (:meth:`IntervalSet.pack`); :meth:`decode` reads both."""
        return [layer.pack() for layer in self.layers if layer] or [[]]

    @classmethod
    def decode(cls, data: Iterable[Iterable[Sequence[int]] | bytes]) -> IntervalBag:
        out = cls()
        out.layers = [IntervalSet.decode(layer) for layer in data] or [IntervalSet()]
        return out

    def __len__(self) -> int:
        return sum(len(layer) for layer in self.layers)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IntervalBag) and self.encode() == other.encode()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"IntervalBag({[layer.intervals for layer in self.layers]!r})"
