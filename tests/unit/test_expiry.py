"""Expiry (``--mq-ttl``) against independent truths: what each broker is sent, and the audit's arithmetic.

Each audit test builds what really happened (when each seq was sent, which the broker dropped as
expired, which arrived and when) and compares the verdict with a plain count of it: a missing message
certainly past its expiry by the end is expired, never lost; a delivery after its expiry, on the
producer's clock, is delivered_expired.
"""

import json
import time
from typing import Any

import pytest

from mqusers.audit.audit import Audit
from mqusers.audit.ledgers import CHECKPOINT_NS, EXPIRY_GRACE_NS, ReceiveLedger, SentLedger, Subscription
from mqusers.coordination.messages import Follower
from mqusers.measure.book import Book
from mqusers.options.parsing import OptionError, parse_ttl
from mqusers.options.settings import Settings
from mqusers.report.brokerreport import cross_check
from mqusers.report.build import AUDIT_KEYS, RunFacts, build_report
from mqusers.report.gates import gate_failures
from mqusers.report.reportformats import format_summary
from mqusers.run.ending import DrainOutcome
from mqusers.stomp.dialects import ACTIVEMQ, ARTEMIS, RABBITMQ
from mqusers.stomp.framing import FrameParser
from mqusers.stomp.receiver import Receiver
from mqusers.stomp.wire import SendFrames
from tests.unit.fake_client import connected, environment, message

S, MS = 1_000_000_000, 1_000_000
Q, T = "/queue/expiry", "/topic/expiry"
TTL = 500 * MS


def verdict(*ledgers: Any, now: int, offsets: dict[str, int] | None = None, settled: bool = True) -> Any:
    audit = Audit()
    for ledger in ledgers:
        audit.merge(json.loads(json.dumps(ledger.drain())))
    return audit.verdict(now, 0, offsets, settled=settled)


def backlog(n: int, dropped: set[int], ttl: int = TTL, kind: str = "queue") -> tuple[SentLedger, ReceiveLedger]:
    """Seqs 1..n sent 10 ms apart from 1 s; the broker drops ``dropped``, the consumer gets the rest."""
    sent, received = SentLedger("w1"), ReceiveLedger("w2")
    destination = Q if kind == "queue" else T
    sub = received.subscription("w2/1", destination, kind, joined_ns=0)
    producer = sent.producer(destination, "w1.p.1", ttl_ns=ttl)
    for seq in range(1, n + 1):
        producer.record(seq, S + (seq - 1) * 10 * MS)
        if seq not in dropped:
            sub.record(b"w1.p.1", seq)
    return sent, received


@pytest.mark.parametrize("kind", ["queue", "topic"])
def test_messages_the_broker_dropped_past_their_expiry_are_expired_not_lost(kind: str) -> None:
    """The first 60 sat in a backlog past their 500 ms and the broker dropped them; 61..100 arrived."""
    sent, received = backlog(100, set(range(1, 61)), kind=kind)
    fig = verdict(sent, received, now=10 * S)[Q if kind == "queue" else T]
    assert (fig["expired"], fig["lost"], fig["unreceived"], fig["in_flight"]) == (60, 0, 0, 0)
    assert (fig["received"], fig["expected"], fig["delivered_expired"]) == (40, 100, 0)
    if kind == "topic":
        assert fig["by_subscription"][0]["expired"] == 60
    # The same run without a time-to-live: those 60 were lost (later ones arrived, the consumers went idle).
    sent, received = backlog(100, set(range(1, 61)), ttl=0, kind=kind)
    fig = verdict(sent, received, now=10 * S)[Q if kind == "queue" else T]
    assert (fig["expired"], fig["lost"]) == (0, 60)


def test_only_what_was_certainly_sent_a_ttl_before_the_end_is_expired() -> None:
    """Seqs 1..100 go out 10 ms apart from 1.00 s to 1.99 s; the broker "dropped" 5, 40 and 80.

    At the end, 2 s, those sent before 1.5 s are past their 500 ms: 5 and 40 are expired. 80 (sent at
    1.79 s) still had 290 ms to live: it is lost (later ones arrived). Ending at 1.9 s, 40 (sent at 1.39 s)
    is 10 ms past its expiry, but within a checkpoint interval (100 ms) of it: not certainly, so lost.
    """
    sent, received = backlog(100, {5, 40, 80})
    fig = verdict(sent, received, now=2 * S)[Q]
    assert (fig["expired"], fig["lost"]) == (2, 1)
    assert CHECKPOINT_NS == 100 * MS
    sent, received = backlog(100, {5, 40, 80})
    fig = verdict(sent, received, now=int(1.9 * S))[Q]
    assert (fig["expired"], fig["lost"]) == (1, 2)


def test_an_unconfirmed_missing_message_stays_unconfirmed_and_a_lost_workers_is_worker_lost() -> None:
    sent, received = backlog(100, {5, 6})
    sent.producer(Q, "w1.p.1").unconfirmed.add(6)
    fig = verdict(sent, received, now=10 * S)[Q]
    assert (fig["expired"], fig["unconfirmed"], fig["lost"]) == (1, 1, 0)
    sent, received = backlog(100, {5, 6})
    audit = Audit()
    audit.merge(json.loads(json.dumps({**sent.drain(), **received.drain()})))
    fig = audit.verdict(10 * S, 0, lost_processes=frozenset({"w1"}))[Q]
    assert (fig["expired"], fig["worker_lost"]) == (0, 2)  # it may never have sent them


def test_the_producers_clock_offset_moves_the_end_onto_its_clock() -> None:
    """Producer w1's clock runs 1 s ahead of the master's: at the master's 1.6 s it reads 2.6 s, so seq 95,
    which it stamped 1.94 s, is 660 ms old: expired. Taken on the master's clock it would look sent after
    the end: not expired, and in flight."""
    sent, received = backlog(100, {95})
    fig = verdict(sent, received, now=int(1.6 * S), offsets={"w1": S})[Q]
    assert (fig["expired"], fig["lost"]) == (1, 0)
    sent, received = backlog(100, {95})
    fig = verdict(sent, received, now=int(1.6 * S))[Q]
    assert (fig["expired"], fig["lost"], fig["in_flight"]) == (0, 0, 1)


def test_late_deliveries_are_counted_per_destination_and_subscription_and_still_received() -> None:
    sent, a, b = SentLedger("w1"), ReceiveLedger("w2"), ReceiveLedger("w3")
    subs = [a.subscription("w2/1", T, "topic", 0), b.subscription("w3/1", T, "topic", 0)]
    for seq in range(1, 11):
        sent.producer(T, "w1.p", ttl_ns=TTL).record(seq, S + seq * MS)
        for sub in subs:
            sub.record(b"w1.p", seq)
    subs[0].record_late(b"w1.p")
    subs[1].record_late("w1.p")  # str and bytes ids are one producer
    subs[1].record_late(b"w1.p")
    fig = verdict(sent, a, b, now=10 * S)[T]
    assert (fig["delivered_expired"], fig["received"], fig["lost"], fig["expired"]) == (3, 20, 0, 0)
    assert sorted(s["delivered_expired"] for s in fig["by_subscription"]) == [1, 2]


def test_a_snapshot_keeps_the_ttl_and_the_late_deliveries() -> None:
    sent, received = backlog(100, set(range(1, 11)))
    received.subscription("w2/1", Q, "queue", None).record_late(b"w1.p.1")
    audit = Audit()
    audit.merge(json.loads(json.dumps({**sent.drain(), **received.drain()})))
    again = Audit()
    again.merge(json.loads(json.dumps(audit.snapshot())))
    assert {k: again.verdict(10 * S, 0)[Q][k] for k in ("expired", "delivered_expired", "lost")} == {
        "expired": 10,
        "delivered_expired": 1,
        "lost": 0,
    }


def receiver_with(ttl_ns: int, offsets: dict[str, int] | None = None, own: int = 0) -> tuple[Receiver, Subscription]:
    client, _ = connected(environment())
    clock = Follower()
    clock.offsets, clock.own_offset_ns = offsets or {}, own
    receiver = Receiver(client, Q, "auto", run_id="run", clock=clock, ttl_ns=ttl_ns)
    receiver.audit = Subscription("k", Q, "queue", False)
    return receiver, receiver.audit


def deliver_aged(receiver: Receiver, age_ns: int, producer: bytes = b"w1.p") -> None:
    headers, body, now = message(b"x" * 10, 0)
    headers.update({b"mq-producer": producer, b"mq-seq": b"1", b"mq-sent-ns": b"%d" % (now - age_ns)})
    receiver(headers, body, now)


def test_the_receiver_counts_a_delivery_after_its_expiry_and_its_grace() -> None:
    receiver, sub = receiver_with(TTL)
    deliver_aged(receiver, TTL - 10 * MS)  # before its expiry: normal
    deliver_aged(receiver, TTL + EXPIRY_GRACE_NS // 2)  # within the grace: the broker's dispatch was in time
    assert sum(s.late for s in sub._streams.values()) == 0
    deliver_aged(receiver, TTL + EXPIRY_GRACE_NS + 10 * MS)
    assert sum(s.late for s in sub._streams.values()) == 1
    receiver, sub = receiver_with(0)  # no time-to-live: nothing is late however old
    deliver_aged(receiver, 3600 * S)
    assert sum(s.late for s in sub._streams.values()) == 0


def test_the_receiver_judges_on_the_producers_clock() -> None:
    """The producer's process w1 runs 2 s behind the master, this one 0: its stamp reads 2 s early, so a
    message 1.5 s old by the stamps is really -0.5 s old... and one 2.3 s old by the stamps is 300 ms old."""
    receiver, sub = receiver_with(TTL, offsets={"w1": -2 * S, "w2": 0}, own=0)
    deliver_aged(receiver, int(2.3 * S))
    assert sum(s.late for s in sub._streams.values()) == 0
    deliver_aged(receiver, int(2.6 * S))  # 600 ms old: 100 ms past its 500 ms
    assert sum(s.late for s in sub._streams.values()) == 1
    receiver, sub = receiver_with(TTL)  # no offsets measured: the stamps as they are
    deliver_aged(receiver, int(2.3 * S))
    assert sum(s.late for s in sub._streams.values()) == 1


def parsed(data: bytes) -> list[dict[bytes, bytes]]:
    frames: list[dict[bytes, bytes]] = []
    FrameParser(lambda command, headers, body, _: frames.append(headers)).feed(data, 0)
    return frames


def test_each_dialect_stamps_its_own_expiry_header() -> None:
    """ActiveMQ and Artemis: ``expires``, the epoch ms of the send plus the TTL, per message (a burst's
    too); RabbitMQ: ``expiration``, the TTL, constant."""
    assert ACTIVEMQ.expiry_headers(500) == ARTEMIS.expiry_headers(500) == {}
    assert RABBITMQ.expiry_headers(500) == {"expiration": "500"} and RABBITMQ.expiry_headers(0) == {}
    frames = SendFrames(Q, b"body", "run", "p", {}, (ACTIVEMQ.expiry_header, 500))
    sent_ns = 1_700_000_000_123_456_789
    one, burst = parsed(frames.frame(7, sent_ns)), parsed(frames.frames(8, 3, sent_ns))
    receipted = parsed(frames.frame_with(11, sent_ns, b"receipt:r1\n"))
    for headers in (*one, *burst, *receipted):
        assert headers[b"expires"] == b"%d" % (1_700_000_000_123 + 500)
        assert headers[b"mq-sent-ns"] == b"%d" % sent_ns
    assert [h[b"mq-seq"] for h in burst] == [b"8", b"9", b"10"] and receipted[0][b"receipt"] == b"r1"
    data = frames.frames(8, 3, sent_ns)
    assert frames.whole(8, sent_ns, len(data)) == 3 and frames.whole(8, sent_ns, len(data) - 1) == 2
    plain = SendFrames(Q, b"body", "run", "p", RABBITMQ.expiry_headers(500))
    assert parsed(plain.frame(1, sent_ns))[0][b"expiration"] == b"500"
    assert b"expires" not in parsed(plain.frame(1, sent_ns))[0]


@pytest.mark.parametrize(("text", "ms"), [("500ms", 500), ("2s", 2000), ("1.5m", 90_000), ("250", 250), ("0", 0)])
def test_the_ttl_option_reads_ms_s_and_m(text: str, ms: int) -> None:
    assert parse_ttl(text) == ms


@pytest.mark.parametrize("text", ["-1s", "soon", "0.2ms", "2d", "25h"])
def test_a_bad_ttl_is_one_line_naming_the_option(text: str) -> None:
    with pytest.raises(OptionError, match=r"^--mq-ttl: "):
        parse_ttl(text)


def test_the_report_shows_expired_and_fails_the_gate_on_a_late_delivery() -> None:
    book, now = Book(), time.time()
    book.on_request("STOMP", "send " + Q, 1.0, 10, None)
    book.on_request("STOMP", "receive " + Q, 1.0, 10, None)
    facts = RunFacts("r", now - 1, now, "time", DrainOutcome(True, 0.1, "all arrived"))
    assert {"expired", "delivered_expired"} <= set(AUDIT_KEYS)
    figures = {"sent": 1, "received": 1, "expired": 3, "delivered_expired": 0, "by_subscription": []}
    report = build_report(book, {Q: figures}, facts, Settings())
    assert gate_failures(report) == []
    summary = format_summary(report)
    assert "expired" in summary and "3 expired (not delivered and past their time-to-live: not lost)" in summary
    report = build_report(book, {Q: {**figures, "delivered_expired": 2}}, facts, Settings())
    assert gate_failures(report) == [f"{Q}: 2 delivered after their expiry (--mq-ttl)"]
    assert "dlv-expired" in format_summary(report)


def test_the_brokers_expired_count_is_checked_against_the_audits() -> None:
    """ActiveMQ 5.17.2's figures of a real run (locustfiles/expiry.py, 1 s TTL, 3 s backlog): its dequeueCount
    counts the expired too; then the broker expiring fewer (some still queued, or not), more, or none at all."""
    row = {"destination": Q, "sent": 1127, "received": 790, "distinct": 790, "expired": 337}
    broker = {"enqueued": 1127, "dequeued": 1127, "expired": 337, "depth": 0, "unacked": 0, "comparable": True}
    assert cross_check({"destinations": {Q: broker}}, [row]) == []
    fewer = {**broker, "expired": 330, "dequeued": 1120}
    assert cross_check({"destinations": {Q: fewer}}, [row]) == [
        f"{Q}: the broker expired 330, mqusers counted 337 expired (0 still held at the end): 7 unexplained"
    ]
    assert cross_check({"destinations": {Q: {**fewer, "depth": 7}}}, [row]) == []  # not swept yet
    more = {**broker, "expired": 340, "dequeued": 1130, "enqueued": 1130}
    assert f"{Q}: the broker expired 340, mqusers counted 337 expired (0 still held at the end): 3 unexplained" in (
        cross_check({"destinations": {Q: more}}, [{**row, "sent": 1130}])
    )
    rabbit = {"enqueued": 1127, "dequeued": 790, "depth": 0, "unacked": 0, "comparable": True}
    assert cross_check({"destinations": {Q: rabbit}}, [row]) == [
        f"{Q}: the broker reports no expired count; the 337 expired are mqusers' own"
    ]


def test_the_html_audit_table_has_the_expiry_columns_only_when_a_destination_has_some() -> None:
    from mqusers.report.htmlrun import run_section

    row = {"destination": Q, "sent": 10, "received": 7, "send_rate_msgs": 1.0, "send_rate_mbit": 0.0,
           "receive_rate_msgs": 1.0, "receive_rate_mbit": 0.0, "latency_ms": {}}  # fmt: skip
    plain = run_section(0, None, {"destinations": [row]})
    assert "delivered expired" not in plain and ">expired<" not in plain
    html = run_section(0, None, {"destinations": [{**row, "expired": 3, "delivered_expired": 1}]})
    assert "delivered expired" in html and ">expired<" in html
