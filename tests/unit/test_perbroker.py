"""Consumers per broker: the audit carries each subscription's broker to the master, the report sums by it."""

from mqusers.audit.audit import Audit
from mqusers.audit.ledgers import ReceiveLedger, SentLedger
from mqusers.report.networkbrokers import network_notes, network_table
from mqusers.report.perbroker import by_broker, spread_table

S = 1_000_000_000
T = "/topic/t"
A, B = "stomp://127.0.0.1:61640", "stomp://127.0.0.1:61642"


def test_each_subscriptions_broker_travels_from_a_worker_to_the_verdict_and_its_snapshot() -> None:
    sent, received = SentLedger("w1"), ReceiveLedger("w2")
    stream = sent.producer(T, "p")
    for seq in range(1, 11):
        stream.record(seq, seq * S)
    at_a = received.subscription("s-a", T, "topic", 0, broker=A)
    at_b = received.subscription("s-b", T, "topic", 0, broker=B)
    local = received.subscription("s-local", T, "topic", 0)
    for seq in range(1, 11):
        at_a.record("p", seq)
        local.record("p", seq)
    for seq in (*range(1, 6), 5):
        at_b.record("p", seq)
    at_b.probes, at_b.probes_sent = 2, 3  # a subscriber across a network waited for its demand
    audit = Audit()
    audit.merge(sent.drain())
    audit.merge(received.drain(packed=True))
    again = Audit()
    again.merge(audit.snapshot())
    for whole in (audit, again):
        subs = whole.verdict(100 * S, 5 * S)[T]["by_subscription"]
        assert {s["key"]: s["broker"] for s in subs} == {"s-a": A, "s-b": B, "s-local": ""}
        assert (whole.verdict(100 * S, 5 * S)[T]["probes"], whole.verdict(100 * S, 5 * S)[T]["probes_sent"]) == (2, 3)
        assert by_broker(subs) == [
            {"broker": A, "subscriptions": 1, "received": 10, "duplicated": 0, "lost": 0, "unreceived": 0, "probes": 0},
            {"broker": B, "subscriptions": 1, "received": 5, "duplicated": 1, "lost": 0, "unreceived": 5, "probes": 2},
        ]


def test_the_table_gives_each_brokers_share_and_nothing_without_brokers() -> None:
    rows = [{"destination": "/queue/q", "by_broker": [
        {"broker": A, "subscriptions": 2, "received": 1_500, "duplicated": 0, "lost": 0, "unreceived": 0},
        {"broker": B, "subscriptions": 1, "received": 500, "duplicated": 0, "lost": 0, "unreceived": 0},
    ]}, {"destination": "/queue/elsewhere", "by_broker": []}]  # fmt: skip
    assert spread_table(rows) == [
        ["consumers at", "subscriptions", "received", "duplicated", "lost", "unreceived", "share"],
        [f"/queue/q {A}", "2", "1,500", "0", "0", "0", "75.0 %"],
        [f"/queue/q {B}", "1", "500", "0", "0", "0", "25.0 %"],
    ]
    assert spread_table([{"destination": "/queue/q", "by_broker": []}]) == []


def test_each_consumers_brokers_queue_counts_are_held_against_what_its_consumers_received() -> None:
    rows = [{"destination": "/queue/q", "by_broker": [
        {"broker": A, "subscriptions": 2, "received": 1_000, "duplicated": 0, "lost": 0, "unreceived": 0},
        {"broker": B, "subscriptions": 2, "received": 2_000, "duplicated": 0, "lost": 0, "unreceived": 0},
    ]}, {"destination": T, "by_broker": [
        {"broker": B, "subscriptions": 1, "received": 1_500, "duplicated": 0, "lost": 0, "unreceived": 0, "probes": 3},
    ]}]  # fmt: skip
    at_b = {"enqueued": 2_000, "dequeued": 2_000, "depth": 0, "unacked": 0, "consumers": 2, "comparable": True}
    topic = {"enqueued": 1_503, "dequeued": 1_503, "depth": 0, "unacked": 0, "consumers": 1, "comparable": True}
    broker = {"network": [{"address": B, "source": "activemq", "destinations": {"/queue/q": at_b, T: topic}},
                          {"address": "stomp://127.0.0.1:61644", "source": None, "note": "refused"}]}  # fmt: skip
    assert network_table(broker, rows) == [
        ["consumers' broker", "enqueued", "dequeued", "received", "depth", "unacked", "consumers"],
        [f"/queue/q {B}", "2,000", "2,000", "2,000", "0", "0", "2"],
        [f"{T} {B}", "1,503", "1,503", "1,500", "0", "0", "1"],
    ]
    assert network_notes(broker, rows) == [
        f"broker figures at {B}: its counts agree with mqusers' (/queue/q, {T}: dequeued against what the "
        "consumers there received)",
        "broker figures at stomp://127.0.0.1:61644: none (refused)",
    ]  # the topic's 1,503 dequeued: 1,500 messages and 3 probes
    at_b.update(dequeued=2_010, unacked=4)
    topic["dequeued"] = 1_504
    assert network_notes(broker, rows)[:2] == [
        f"/queue/q at {B}: the broker dequeued 2,010, mqusers' consumers there received 2,000: 6 unexplained",
        f"{T} at {B}: the broker dequeued 1,504, mqusers' consumers there received 1,500 and 3 probes: 1 unexplained",
    ]
    assert network_table({"network": []}, rows) == [] and network_notes({}, rows) == []
