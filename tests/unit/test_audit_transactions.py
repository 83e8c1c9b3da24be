"""The audit's transactions: an aborted transaction's messages are expected never to arrive ("aborted",
never "lost"), one that arrives is ``aborted_delivered``; committed ones follow the usual rules; a COMMIT
without its RECEIPT leaves its messages unconfirmed. Each verdict is held to a plain computation."""

import json
from typing import Any

from mqusers.audit.audit import Audit
from mqusers.audit.ledgers import ReceiveLedger, SentLedger

S, MS = 1_000_000_000, 1_000_000
Q, T = "/queue/tx", "/topic/tx"
#: 10 transactions of 10 messages; the 4th and the 8th aborted (a ratio of 0.25).
ABORTED = {*range(31, 41), *range(71, 81)}


def verdict(*ledgers: Any, settled: bool = True) -> Any:
    audit = Audit()
    for ledger in ledgers:
        audit.merge(json.loads(json.dumps(ledger.drain())))
    return audit.verdict(1000 * S, 5 * S, settled=settled)


def send(sent: SentLedger, destination: str = Q, aborted: set[int] = ABORTED) -> None:
    stream = sent.producer(destination, "w1.p.1")
    for seq in range(1, 101):
        stream.record(seq, S + seq * 10 * MS)  # a checkpoint every 10 seqs
    for seq in aborted:
        stream.aborted.add(seq)


def test_aborted_messages_are_expected_never_to_arrive_and_committed_ones_all_arrive() -> None:
    sent, received = SentLedger("w1"), ReceiveLedger("w2")
    send(sent)
    sub = received.subscription("w2/1", Q, "queue", joined_ns=0)
    for seq in sorted(set(range(1, 101)) - ABORTED):
        sub.record(b"w1.p.1", seq)
    fig = verdict(sent, received)[Q]
    assert (fig["sent"], fig["aborted"], fig["expected"], fig["received"]) == (100, 20, 80, 80)
    assert (fig["lost"], fig["unreceived"], fig["unexpected"], fig["aborted_delivered"]) == (0, 0, 0, 0)


def test_an_aborted_message_that_arrives_is_a_violation_of_its_own_and_a_missing_committed_one_is_lost() -> None:
    sent, received = SentLedger("w1"), ReceiveLedger("w2")
    send(sent)
    sub = received.subscription("w2/1", Q, "queue", joined_ns=0)
    for seq in sorted(set(range(1, 101)) - ABORTED - {50}):
        sub.record(b"w1.p.1", seq)
    sub.record(b"w1.p.1", 35)  # planted: a seq of the 4th transaction, which was aborted
    sub.record(b"w1.p.1", 100)  # delivered twice: a duplicate, as ever
    fig = verdict(sent, received)[Q]
    assert (fig["aborted_delivered"], fig["lost"], fig["duplicated"], fig["unexpected"]) == (1, 1, 1, 0)
    assert (fig["expected"], fig["received"]) == (80, 80)  # 79 committed ones and the aborted 35
    assert fig["by_subscription"][0]["aborted_delivered"] == 0  # a queue's share is only its deliveries


def test_a_commit_without_its_receipt_leaves_its_messages_unconfirmed_not_lost() -> None:
    sent, received = SentLedger("w1"), ReceiveLedger("w2")
    send(sent)
    sent.producer(Q, "w1.p.1").unconfirmed.add_range(91, 100)  # the connection was cut before the RECEIPT
    sub = received.subscription("w2/1", Q, "queue", joined_ns=0)
    for seq in sorted(set(range(1, 91)) - ABORTED):
        sub.record(b"w1.p.1", seq)
    fig = verdict(sent, received)[Q]
    assert (fig["unconfirmed"], fig["lost"], fig["unreceived"], fig["aborted"]) == (10, 0, 0, 20)


def test_aborted_missing_below_the_last_received_is_never_lost_nor_evidence_of_loss() -> None:
    """Only 1..30 arrived, and aborted 35: no committed message above 30 came, so 41..100 are unreceived."""
    sent, received = SentLedger("w1"), ReceiveLedger("w2")
    send(sent)
    sub = received.subscription("w2/1", Q, "queue", joined_ns=0)
    for seq in [*range(1, 31), 35]:
        sub.record(b"w1.p.1", seq)
    fig = verdict(sent, received)[Q]
    assert (fig["lost"], fig["unreceived"], fig["aborted_delivered"]) == (0, 50, 1)


def test_each_topic_subscription_that_gets_an_aborted_message_counts_even_one_that_joined_after_it() -> None:
    sent, received = SentLedger("w1"), ReceiveLedger("w2")
    send(sent, T)
    early = received.subscription("w2/1", T, "topic", joined_ns=0)
    late = received.subscription("w2/2", T, "topic", joined_ns=S + 605 * MS)  # after seqs up to 60 were sent
    for seq in sorted(set(range(1, 101)) - ABORTED):
        early.record(b"w1.p.1", seq)
        if seq > 60:
            late.record(b"w1.p.1", seq)
    early.record(b"w1.p.1", 72)
    late.record(b"w1.p.1", 33)  # sent and aborted before it joined: a violation all the same
    fig = verdict(sent, received)[T]
    assert (fig["aborted_delivered"], fig["unexpected"], fig["lost"]) == (2, 0, 0)
    assert fig["aborted"] == 20  # what the producer aborted, once
    assert sorted(s["aborted_delivered"] for s in fig["by_subscription"]) == [1, 1]


def test_aborted_seqs_survive_any_merge_order_and_the_snapshot() -> None:
    sent, received = SentLedger("w1"), ReceiveLedger("w2")
    stream = sent.producer(Q, "w1.p.1")
    drains = []
    for seq in range(1, 101):
        stream.record(seq, S + seq * 10 * MS)  # a checkpoint every 10 seqs
        if seq in ABORTED:
            stream.aborted.add(seq)
        if seq % 25 == 0:
            drains.append(json.loads(json.dumps(sent.drain())))
    sub = received.subscription("w2/1", Q, "queue", joined_ns=0)
    for seq in sorted(set(range(1, 101)) - ABORTED):
        sub.record(b"w1.p.1", seq)
    audit = Audit()
    for delta in [*reversed(drains), received.drain()]:
        audit.merge(delta)
    again = Audit()
    again.merge(json.loads(json.dumps(audit.snapshot())))
    for judged in (audit, again):
        fig = judged.verdict(1000 * S, 5 * S)[Q]
        assert (fig["aborted"], fig["expected"], fig["lost"], fig["aborted_delivered"]) == (20, 80, 0, 0)


def test_a_put_only_fill_still_counts_what_it_aborted() -> None:
    sent = SentLedger("w1")
    send(sent)
    fig = verdict(sent)[Q]
    assert (fig["sent"], fig["aborted"], fig["expected"]) == (100, 20, 0)
