"""Message groups: one consumer at a time per group, judged from each subscription's receive spans."""

import json
from typing import Any

from mqusers.audit.audit import Audit
from mqusers.audit.groupaudit import judge
from mqusers.audit.ledgers import ReceiveLedger, SentLedger
from mqusers.options.groups import group_of

S, MS = 1_000_000_000, 1_000_000
Q = "/queue/groups"


def test_two_consumers_at_once_split_a_group_one_after_the_other_do_not() -> None:
    spans = [("g0", "a", 0, 10), ("g0", "b", 11, 20),  # a left, b took over
             ("g1", "a", 0, 10), ("g1", "b", 5, 6),  # b had it while a still did
             ("g2", "a", 0, 3), ("g2", "a", 7, 9)]  # fmt: skip
    assert judge(spans) == (3, 1)


def test_any_overlap_is_found_whatever_the_order() -> None:
    spans = [("g", "c", 50, 60), ("g", "a", 0, 100), ("g", "b", 10, 20)]
    assert judge(spans) == (1, 1)
    assert judge([]) == (0, 0)


def test_producer_i_sends_in_group_i_mod_n() -> None:
    assert [group_of(i, 3) for i in range(5)] == [f"mqusers.g{k}" for k in (0, 1, 2, 0, 1)]


def run(shared: bool, offsets: dict[str, int] | None = None, ahead: int = 0) -> dict[str, Any]:
    """Two producers in two groups, two consumers on two processes; ``shared``: g1 goes to both at once;
    ``ahead``: how far w3's clock is ahead of w2's."""
    sent, first, second = SentLedger("w1"), ReceiveLedger("w2"), ReceiveLedger("w3")
    a = first.subscription("a", Q, "queue", 0)
    b = second.subscription("b", Q, "queue", 0)
    for producer, group in (("p0", "mqusers.g0"), ("p1", "mqusers.g1")):
        stream = sent.producer(Q, producer, group=group)
        for seq in range(1, 11):
            stream.record(seq, S + seq * MS)
    for seq in range(1, 11):
        a.record("p0", seq)
        a.seen("p0", 2 * S + seq * MS)
        sub = b if shared and seq % 2 else a
        sub.record("p1", seq)
        sub.seen("p1", 2 * S + seq * MS + (ahead if sub is b else 0))
    audit = Audit()
    for ledger in (sent, first, second):
        audit.merge(json.loads(json.dumps(ledger.drain())))
    again = Audit()
    again.merge(json.loads(json.dumps(audit.snapshot())))
    assert again.verdict(1000 * S, 5 * S, offsets) == audit.verdict(1000 * S, 5 * S, offsets)
    return again.verdict(1000 * S, 5 * S, offsets)[Q]


def test_the_audit_counts_the_groups_and_the_ones_two_consumers_had() -> None:
    fig = run(shared=False)
    assert (fig["groups"], fig["group_violations"], fig["received"], fig["lost"]) == (2, 0, 20, 0)
    fig = run(shared=True)
    assert (fig["groups"], fig["group_violations"], fig["received"], fig["lost"]) == (2, 1, 20, 0)


def test_spans_are_compared_on_one_clock() -> None:
    # w3's clock runs 1 s ahead: its receipts, shifted back, interleave with w2's; unshifted they would not.
    assert run(shared=True, offsets={"w3": S}, ahead=S)["group_violations"] == 1
    assert run(shared=True, ahead=S)["group_violations"] == 0
