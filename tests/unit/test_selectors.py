"""Selectors: the labels producers stamp, the selectors consumers take, and the audit that knows both."""

import json
from typing import Any

import pytest

from mqusers.audit.audit import Audit
from mqusers.audit.ledgers import ReceiveLedger, SentLedger
from mqusers.options.parsing import OptionError
from mqusers.options.selectors import check, expression, label_of, parse_select, selected

S, MS = 1_000_000_000, 1_000_000
Q, T = "/queue/sel", "/topic/sel"


def verdict(*ledgers: Any) -> dict[str, Any]:
    audit = Audit()
    for ledger in ledgers:
        audit.merge(json.loads(json.dumps(ledger.drain())))
    return audit.verdict(1000 * S, 5 * S)


def send(sent: SentLedger, destination: str, producer: str, label: str, n: int) -> None:
    stream = sent.producer(destination, producer, label)
    for seq in range(1, n + 1):
        stream.record(seq, S + seq * MS)


@pytest.mark.parametrize(
    ("select", "labels", "ordinal", "takes"),
    [("all", 3, 5, ("L0", "L1", "L2")), ("own", 3, 5, ("L2",)), ("L0,L2", 3, 1, ("L0", "L2")), ("none", 3, 1, None)],
)
def test_each_consumer_selects_its_labels(
    select: str, labels: int, ordinal: int, takes: tuple[str, ...] | None
) -> None:
    assert selected(parse_select(select), labels, ordinal) == takes


def test_the_selector_is_jms_sql_on_the_label_property() -> None:
    assert expression(("L0", "L2")) == "mqlabel IN ('L0', 'L2')"
    assert label_of(7, 3) == "L1"


@pytest.mark.parametrize(
    ("value", "labels", "words"),
    [
        ("L0;L1", 2, "is not all, own, none or labels such as L0,L2"),
        ("L1,L1", 2, "names a label twice"),
        ("L2", 2, "L2 is not one of the 2 labels L0 to L1"),
        ("own", 0, "producers need labels: add --mq-labels N"),
    ],
)
def test_a_selection_the_labels_cannot_satisfy_is_one_line(value: str, labels: int, words: str) -> None:
    with pytest.raises(OptionError, match=words):
        check(labels, parse_select(value))


def test_a_queue_group_leaves_what_no_selector_takes_as_not_selected_never_lost() -> None:
    sent, received = SentLedger("w1"), ReceiveLedger("w1")
    send(sent, Q, "p0", "L0", 100)
    send(sent, Q, "p1", "L1", 60)
    sub = received.subscription("c0", Q, "queue", 0, selects=("L0",))
    for seq in range(1, 101):
        sub.record("p0", seq)
    fig = verdict(sent, received)[Q]
    assert (fig["sent"], fig["expected"], fig["received"], fig["lost"], fig["unreceived"]) == (160, 100, 100, 0, 0)
    assert (fig["not_selected"], fig["selector_violations"]) == (60, 0)


def test_a_delivery_the_selector_does_not_take_is_a_violation_not_a_receipt() -> None:
    sent, received = SentLedger("w1"), ReceiveLedger("w2")
    send(sent, Q, "p0", "L0", 10)
    send(sent, Q, "p1", "L1", 10)
    taker, other = (received.subscription(f"c{i}", Q, "queue", 0, selects=(f"L{i}",)) for i in range(2))
    for seq in range(1, 11):
        taker.record("p0", seq)
        other.record("p1", seq)
    taker.record("p1", 3)  # the broker let an L1 message through an L0 selector
    fig = verdict(sent, received)[Q]
    assert (fig["selector_violations"], fig["not_selected"], fig["lost"]) == (1, 0, 0)
    by_key = {sub["key"]: sub for sub in fig["by_subscription"]}
    assert (by_key["c0"]["selector_violations"], by_key["c0"]["received"], by_key["c1"]["received"]) == (1, 10, 10)


def test_topic_subscriptions_expect_only_the_producers_they_select() -> None:
    sent, received = SentLedger("w1"), ReceiveLedger("w1")
    send(sent, T, "p0", "L0", 40)
    send(sent, T, "p1", "L1", 30)
    everything = received.subscription("all", T, "topic", 0)
    own = received.subscription("own", T, "topic", 0, selects=("L1",))
    for seq in range(1, 41):
        everything.record("p0", seq)
    for seq in range(1, 31):
        everything.record("p1", seq)
        own.record("p1", seq)
    own.record("p0", 7)  # planted: an L0 message through an L1 selector
    fig = verdict(sent, received)[T]
    assert (fig["expected"], fig["received"], fig["lost"], fig["unexpected"]) == (100, 100, 0, 0)
    assert (fig["not_selected"], fig["selector_violations"]) == (40, 1)


def test_a_snapshot_keeps_labels_selectors_and_each_subscriptions_share() -> None:
    sent, received = SentLedger("w1"), ReceiveLedger("w2")
    send(sent, Q, "p0", "L0", 5)
    sub = received.subscription("c1", Q, "queue", 0, selects=("L1",))
    sub.record("p0", 2)
    audit = Audit()
    audit.merge(json.loads(json.dumps(sent.drain())))
    audit.merge(json.loads(json.dumps(received.drain())))
    again = Audit()
    again.merge(json.loads(json.dumps(audit.snapshot())))
    assert again.snapshot() == audit.snapshot()
    fig = again.verdict(1000 * S, 5 * S)[Q]
    assert (fig["not_selected"], fig["selector_violations"], fig["received"]) == (5, 1, 0)
