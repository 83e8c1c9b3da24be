"""bagsum's one-pass multiset sum against IntervalBag.merge one bag at a time; packed sets on the wire."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqusers.audit import bagsum
from mqusers.audit.bagsum import PendingBags, count, fold
from mqusers.audit.intervals import PACK_FROM, IntervalBag, IntervalSet

members = st.lists(st.integers(min_value=0, max_value=300), max_size=120)


def bag_of(values: list[int]) -> IntervalBag:
    bag = IntervalBag()
    for value in values:
        bag.add(value)
    return bag


@settings(max_examples=300, deadline=None)
@given(st.lists(members, max_size=8), members, st.booleans())
def test_one_fold_is_the_sum_of_merging_one_bag_at_a_time(shares: list[list[int]], held: list[int], packed: bool):
    expected = bag_of(held)
    for share in shares:
        expected.merge(bag_of(share))
    encoded = [bag_of(share).pack() if packed else bag_of(share).encode() for share in shares]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bagsum, "NUMPY_FROM", 0)  # the one-pass sum, whatever the size
        assert fold(bag_of(held), encoded) == expected
    assert fold(bag_of(held), encoded) == expected  # small: one bag at a time
    assert count([layer for e in encoded for layer in e]) == sum(len(share) for share in shares)


@pytest.fixture
def one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bagsum, "NUMPY_FROM", 0)


@pytest.mark.usefixtures("one_pass")
def test_competing_consumers_shares_fold_into_one_interval_and_a_duplicate_into_the_next_layer() -> None:
    shares = [IntervalBag.decode([[[s, s] for s in range(g, 10_000, 50)]]).pack() for g in range(50)]
    assert all(isinstance(share[0], bytes) for share in shares)  # fragmented: packed
    summed = fold(IntervalBag(), shares)
    assert summed.encode() == [[[0, 9_999]]]
    assert fold(summed, [[[[7, 7]]]]).encode() == [[[0, 9_999]], [[7, 7]]]


def test_pending_bags_fold_when_they_grow_past_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bagsum, "FOLD_AT", 100)
    pending = PendingBags()
    for g in range(4):
        pending.add(IntervalBag.decode([[[s, s] for s in range(g, 400, 4)]]).pack())
    assert pending._size < 100  # folded on the way
    assert pending.bag().encode() == [[[0, 399]]]


def test_pending_bags_of_few_intervals_fold_at_a_bounded_count() -> None:
    """A one-process run's in-order receipts: a share of one interval a second, folded every FOLD_BAGS, never
    held for the hours FOLD_AT alone would take (the soak's live memory grew by each second's list)."""
    pending = PendingBags()
    for second in range(3 * bagsum.FOLD_BAGS):
        pending.add([[[second * 1000 + 1, second * 1000 + 1000]]])
        assert len(pending._pending) < bagsum.FOLD_BAGS
    assert pending.bag().encode() == [[[1, 3 * bagsum.FOLD_BAGS * 1000]]]
    # Folded in Python, without numpy: tests/unit/test_import_cost.py.


def test_a_packed_set_survives_msgpack_and_decodes_as_the_list_form() -> None:
    fragmented = IntervalSet([(s, s + 1) for s in range(0, 10 * PACK_FROM, 5)])
    small = IntervalSet([(1, 4), (9, 9)])
    assert small.pack() == small.encode()  # few intervals: the list form
    wire = msgpack.unpackb(msgpack.packb([fragmented.pack()]))
    assert isinstance(wire[0], bytes) and len(wire[0]) == 16 * 2 * PACK_FROM
    assert IntervalSet.decode(wire[0]) == fragmented
    with pytest.raises(ValueError, match="16 bytes an interval"):
        IntervalSet.decode(wire[0][:-1])
    with pytest.MonkeyPatch.context() as patch, pytest.raises(ValueError, match="non-negative"):
        patch.setattr(bagsum, "NUMPY_FROM", 0)
        fold(IntervalBag(), [[[[5, 9], [3, 1]]]])
