"""Many multisets of seqs summed in one pass: a queue's receipts from all its competing consumers, in C.

Pure: no I/O. Each consumer of a queue ships its share of a producer's seqs; with G competing consumers a
share is one run in every G, so adding the shares one at a time (:meth:`IntervalBag.merge`, linear in the
sum so far) costs G times the round's intervals per round. :class:`PendingBags` keeps the shares as they
came and :func:`fold` sums them at once: each layer of each bag is +1 over its intervals, the steps at the
sorted bounds add up to each stretch's multiplicity, and layer k of the sum is where it exceeds k (numpy,
imported on the first large fold: a few intervals are added one bag at a time, as before).
"""

from __future__ import annotations

from collections.abc import Sequence

from mqusers.audit.intervals import Encoded, IntervalBag, IntervalSet, unpack

#: Pending intervals of one bag past which it is folded: bounds the master's memory per producer.
FOLD_AT = 1 << 16
#: Pending bags of few intervals (under FEW a bag on average) past which they are folded: a long run's in-order
#: shares (one interval a second each) would otherwise wait hours for FOLD_AT, each an encoded list held. The
#: master's fragmented shares (a run in every G) keep folding at FOLD_AT: folding them each round costs more.
FOLD_BAGS, FEW = 256, 2
#: Pending bags whose intervals times their count is below this are added one bag at a time, in Python: a load
#: process (a local run's drain) never stalls its receives importing numpy (~70 ms) for a few in-order intervals.
NUMPY_FROM = 20_000

EncodedLayers = Sequence[Encoded | bytes]


def count(layers: EncodedLayers) -> int:
    """How many members (copies included) an encoded or packed bag holds."""
    total = 0
    for layer in layers:
        if isinstance(layer, bytes):
            los, his = unpack(layer)
            total += sum(his) - sum(los) + len(los)
        else:
            total += sum(hi - lo + 1 for lo, hi in layer)
    return total


class PendingBags:
    """An :class:`IntervalBag` and the encoded bags added since its last :meth:`bag`."""

    __slots__ = ("_bag", "_pending", "_size")

    def __init__(self) -> None:
        self._bag = IntervalBag()
        self._pending: list[EncodedLayers] = []
        self._size = 0

    def add(self, layers: EncodedLayers) -> None:
        self._pending.append(layers)
        for layer in layers:
            self._size += len(layer) >> 4 if isinstance(layer, bytes) else len(layer)
        held = len(self._pending)
        if self._size > FOLD_AT:
            self.bag()
        elif held >= FOLD_BAGS and self._size < FEW * held:
            # In-order shares: added one at a time their sum stays a few intervals, and no numpy is imported
            # into a load process mid-run.
            self._bag, self._pending, self._size = one_by_one(self._bag, self._pending), [], 0

    def bag(self) -> IntervalBag:
        """The sum of everything added (folded now)."""
        if self._pending:
            self._bag, self._pending, self._size = fold(self._bag, self._pending), [], 0
        return self._bag


def one_by_one(bag: IntervalBag, pending: Sequence[EncodedLayers]) -> IntervalBag:
    """``bag`` plus every bag in ``pending``, added one at a time (a new bag)."""
    out = IntervalBag()
    out.layers = [layer.copy() for layer in bag.layers]
    for layers in pending:
        out.merge(IntervalBag.decode(layers))
    return out


def fold(bag: IntervalBag, pending: Sequence[EncodedLayers]) -> IntervalBag:
    """``bag`` plus every bag in ``pending`` (multiset sum), as one new bag."""
    size = sum(len(layer) >> 4 if isinstance(layer, bytes) else len(layer) for layers in pending for layer in layers)
    if size * len(pending) < NUMPY_FROM:  # what adding them one at a time costs, about
        return one_by_one(bag, pending)
    import numpy as np

    packed: list[bytes] = []
    listed: list[list[int]] = []
    for held in bag.layers:
        listed.extend(zip(held._lo, held._hi, strict=True))  # type: ignore[arg-type]
    for layers in pending:
        for layer in layers:
            if isinstance(layer, bytes):
                packed.append(layer)
            else:
                listed.extend(layer)
    joined = b"".join(packed)
    if len(joined) % 16:
        raise ValueError(f"a packed interval set is 16 bytes an interval, not {len(joined)} bytes")
    pairs = np.concatenate([np.frombuffer(joined, dtype="<i8").astype(np.int64).reshape(-1, 2),
                            np.array(listed, dtype=np.int64).reshape(-1, 2)])  # fmt: skip
    out = IntervalBag()
    if not len(pairs):
        return out
    lo, hi = pairs[:, 0], pairs[:, 1]
    if (lo < 0).any() or (hi < lo).any():
        raise ValueError("a bag's intervals must be non-negative [lo, hi] with lo <= hi")
    points = np.concatenate([lo, hi + 1])
    steps = np.concatenate([np.ones(len(lo), dtype=np.int64), np.full(len(hi), -1, dtype=np.int64)])
    order = np.argsort(points, kind="stable")
    points, steps = points[order], steps[order]
    firsts = np.flatnonzero(np.concatenate([[True], points[1:] != points[:-1]]))
    bounds = points[firsts]
    depth = np.cumsum(np.add.reduceat(steps, firsts))[:-1]  # multiplicity on bounds[i] .. bounds[i + 1] - 1
    starts, ends = bounds[:-1], bounds[1:] - 1
    sums: list[IntervalSet] = []
    for k in range(int(depth.max())):
        keep = depth > k
        a, b = starts[keep], ends[keep]
        gap = a[1:] > b[:-1] + 1  # neighbouring stretches of this layer join
        summed = IntervalSet()
        summed._lo = a[np.concatenate([[True], gap])].tolist()
        summed._hi = b[np.concatenate([gap, [True]])].tolist()
        sums.append(summed)
    out.layers = sums
    return out
