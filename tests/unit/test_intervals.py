import json
from collections import Counter
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqusers.audit.intervals import IntervalBag, IntervalSet

small = st.integers(min_value=0, max_value=200)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), small, st.just(0)),
        st.tuples(st.just("run"), small, st.integers(min_value=0, max_value=30)),  # in-order adds
        st.tuples(st.just("range"), small, st.integers(min_value=-1, max_value=40)),
    ),
    max_size=60,
)


def build(operations: list[tuple[str, int, int]]) -> tuple[IntervalSet, set[int]]:
    s, truth = IntervalSet(), set()
    for op, a, b in operations:
        if op == "add":
            assert s.add(a) == (a not in truth)
            truth.add(a)
        elif op == "run":
            for n in range(a, a + b):
                assert s.add(n) == (n not in truth)
                truth.add(n)
        else:
            new = set(range(a, a + b + 1)) - truth
            assert s.add_range(a, a + b) == len(new)
            truth |= new
    return s, truth


def check_structure(s: IntervalSet) -> None:
    pairs = s.intervals
    assert all(lo <= hi for lo, hi in pairs)
    assert all(hi + 1 < lo for (_, hi), (lo, _) in pairwise(pairs))  # disjoint, not adjacent


def members(s: IntervalSet) -> set[int]:
    return {n for lo, hi in s.intervals for n in range(lo, hi + 1)}


@settings(max_examples=300, deadline=None)
@given(ops, ops, small, st.integers(min_value=-5, max_value=80))
def test_interval_set_behaves_like_a_set(a_ops, b_ops, lo, width) -> None:
    a, truth_a = build(a_ops)
    b, truth_b = build(b_ops)
    for s, truth in ((a, truth_a), (b, truth_b)):
        check_structure(s)
        assert members(s) == truth
        assert len(s) == len(truth)
        assert bool(s) == bool(truth)
        assert s.first == min(truth, default=None) and s.last == max(truth, default=None)
        assert all((n in s) == (n in truth) for n in range(-2, 250))
        assert IntervalSet.decode(json.loads(json.dumps(s.encode()))) == s
    hi = lo + width
    window = set(range(lo, hi + 1))
    assert a.count_in(lo, hi) == len(truth_a & window)
    assert a.missing_in(lo, hi) == len(window - truth_a)
    for result, truth in ((a.difference(b), truth_a - truth_b), (a.intersection(b), truth_a & truth_b)):
        check_structure(result)
        assert members(result) == truth
    a.union(b)
    check_structure(a)
    assert members(a) == truth_a | truth_b


def test_ten_million_in_order_adds_are_one_interval() -> None:
    # A long run's sequence numbers: each is new, and the set stays one pair however many arrive.
    s = IntervalSet()
    assert all(map(s.add, range(1, 10_000_001)))
    assert not s.add(5_000_000)
    assert s.intervals == [(1, 10_000_000)]
    assert len(s) == 10_000_000 and s.encode() == [[1, 10_000_000]]


def test_edges() -> None:
    s = IntervalSet([(5, 9), (1, 2)])
    assert s.intervals == [(1, 2), (5, 9)]
    assert s.add(3) and s.add(4) and s.intervals == [(1, 9)]  # bridging merges both sides
    assert not s.add(7)
    assert s.add_range(20, 19) == 0 and s.missing_in(3, 2) == 0
    assert "x" not in s and -1 not in s
    with pytest.raises(ValueError):
        s.add(-1)
    with pytest.raises(ValueError):
        IntervalSet.decode([[3, 2]])
    assert IntervalSet.decode([[7, 9], [1, 3], [4, 5]]).intervals == [(1, 5), (7, 9)]


bags = st.lists(st.integers(min_value=0, max_value=40), max_size=80)


def bag_of(values: list[int]) -> IntervalBag:
    bag = IntervalBag()
    for v in values:
        bag.add(v)
    return bag


def counts(bag: IntervalBag) -> Counter[int]:
    out: Counter[int] = Counter()
    for layer in bag.layers:
        for n in members(layer):
            out[n] += 1
    return out


@settings(max_examples=300, deadline=None)
@given(bags, bags, bags)
def test_interval_bag_is_a_multiset_and_merge_is_associative(a, b, c) -> None:
    assert counts(bag_of(a)) == Counter(a)
    assert len(bag_of(a)) == len(a)
    for k in range(4):
        assert members(bag_of(a).above(k)) == {n for n, m in Counter(a).items() if m > k}
    left = bag_of(a)
    left.merge(bag_of(b))
    left.merge(bag_of(c))
    bc = bag_of(b)
    bc.merge(bag_of(c))
    right = bag_of(a)
    right.merge(bc)
    swapped = bag_of(c)
    swapped.merge(bag_of(a))
    swapped.merge(bag_of(b))
    assert counts(left) == Counter(a) + Counter(b) + Counter(c)
    assert left == right == swapped
    assert IntervalBag.decode(json.loads(json.dumps(left.encode()))) == left
