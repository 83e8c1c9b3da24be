"""NACKs: which deliveries a consumer refuses (by seq, exact), the frames it writes, and the audit's arithmetic:
a NACKed message redelivered is received once (``redelivered``, never a duplicate, flagged or not), one that
never comes back is ``dead_lettered``, never lost."""

import csv
import json
import re
import time
from fractions import Fraction
from typing import Any

import pytest

from mqusers.audit.audit import Audit
from mqusers.audit.ledgers import ReceiveLedger, SentLedger
from mqusers.measure.book import Book
from mqusers.options.parsing import OptionError
from mqusers.options.settings import Settings, read_settings
from mqusers.options.table import OPTIONS
from mqusers.report.brokerreport import cross_check
from mqusers.report.build import RunFacts, build_report
from mqusers.report.gates import gate_failures
from mqusers.report.htmlrun import run_section
from mqusers.report.reportformats import format_summary, report_document, write_csv
from mqusers.run.ending import DrainOutcome
from mqusers.stomp.nacks import NackCounts, as_ratio, chosen, chosen_up_to
from mqusers.stomp.receiver import Receiver
from tests.unit.fake_client import connected, deliver, environment, message

S = 1_000_000_000
Q, T = "/queue/nack", "/topic/nack"


@pytest.mark.parametrize("ratio", ["0.1", "0.25", "0.333", "1", "0.07", "0"])
def test_the_chosen_seqs_are_exactly_floor_n_times_the_ratio_and_spread_evenly(ratio: str) -> None:
    r = as_ratio(float(ratio))
    for n in (1, 9, 10, 99, 1000, 1237):
        picked = [seq for seq in range(1, n + 1) if chosen(seq, r)]
        assert len(picked) == chosen_up_to(n, r) == int(n * Fraction(ratio))
    if ratio == "0.1":
        assert [seq for seq in range(1, 51) if chosen(seq, r)] == [10, 20, 30, 40, 50]


def test_a_chosen_message_is_nacked_k_times_then_accepted_and_its_redeliveries_are_known() -> None:
    counts, sub = NackCounts(as_ratio(0.5), times=3), ReceiveLedger("w").subscription("w/1", Q, "queue", 0)
    # seq 1 is not chosen (0.5: seqs 2, 4, ...): accepted at once.
    assert not counts.deliver(sub, "p", 1, False)
    # seq 2: NACKed three times (the broker's flag as Artemis gives it: only the first), then accepted.
    assert [counts.deliver(sub, "p", 2, flag) for flag in (False, True, False, False)] == [True, True, True, False]
    entry = sub._drain("w")
    assert entry is not None
    (stream,) = entry["streams"]
    assert (stream["nacks"], stream["redelivered"], entry["deliveries"]) == (3, 1, 5)
    assert stream["flagged"] == [[2, 2]] and stream["seqs"] == [[[1, 1]]]


def run(deliveries: list[tuple[str, list[int]]], n: int, *, settled: bool = True) -> dict[str, Any]:
    """Producer ``p`` sends seqs 1..n to Q; each (process, seqs) delivers those seqs, in order, to a
    consumer of that process NACKing 1 in 10 once (``NackCounts``, one per process as mqusers shares it)."""
    sent = SentLedger("w0")
    for seq in range(1, n + 1):
        sent.producer(Q, "p").record(seq, S + seq)
    audit = Audit()
    audit.merge(json.loads(json.dumps(sent.drain())))
    ledgers: dict[str, ReceiveLedger] = {}
    counts: dict[str, NackCounts] = {}
    for process, seqs in deliveries:
        ledger = ledgers.setdefault(process, ReceiveLedger(process))
        sub = ledger.subscription(f"{process}/1", Q, "queue", 0)
        for seq in seqs:
            counts.setdefault(process, NackCounts(Fraction(1, 10), 1)).deliver(sub, "p", seq, False)
    for ledger in ledgers.values():
        audit.merge(json.loads(json.dumps(ledger.drain())))
    again = Audit()  # the master's snapshot carries the NACKs too
    again.merge(json.loads(json.dumps(audit.snapshot())))
    figures = again.verdict(1000 * S, 5 * S, settled=settled)[Q]
    assert figures == audit.verdict(1000 * S, 5 * S, settled=settled)[Q]
    return figures


def test_nacked_messages_that_never_come_back_are_dead_lettered_not_lost() -> None:
    """ActiveMQ: a NACK sends the message to ActiveMQ.DLQ at once; 100 sent, 10 NACKed."""
    fig = run([("w1", list(range(1, 101)))], 100)
    assert (fig["received"], fig["nacks"], fig["dead_lettered"], fig["lost"], fig["unreceived"]) == (90, 10, 10, 0, 0)
    assert (fig["redelivered"], fig["duplicated"]) == (0, 0)


def test_a_nacked_message_redelivered_unflagged_is_a_redelivery_not_a_duplicate() -> None:
    """RabbitMQ requeues; Artemis-like flags (none here) do not matter: the consumer knows it NACKed."""
    fig = run([("w1", [*range(1, 101), *range(10, 101, 10)])], 100)
    assert (fig["received"], fig["nacks"], fig["redelivered"], fig["duplicated"], fig["dead_lettered"]) == (
        100, 10, 10, 0, 0)  # fmt: skip
    assert fig["lost"] == 0


def test_each_process_nacks_a_chosen_message_k_times_itself_and_an_accepted_one_again_is_a_duplicate() -> None:
    """Redeliveries of 10 and 20 reach process w2, which NACKs each once more itself (counts are per process),
    then takes them, as a redelivery; after that the broker's flag alone says: 20 unflagged twice more is one
    duplicate (the audit's rule: a message received flagged and once unflagged is no duplicate)."""
    fig = run([("w1", list(range(1, 101))), ("w2", [10, 10, 20, 20, 20, 20])], 100)
    assert (fig["received"], fig["nacks"], fig["duplicated"], fig["dead_lettered"]) == (92, 12, 1, 8)
    assert (fig["redelivered"], fig["lost"]) == (2, 0)


def test_before_the_consumers_settle_a_missing_nacked_message_is_unreceived() -> None:
    fig = run([("w1", list(range(1, 101)))], 100, settled=False)
    assert (fig["dead_lettered"], fig["unreceived"], fig["lost"]) == (0, 10, 0)


def test_a_topic_subscriptions_nacks_are_its_own() -> None:
    sent, ledger = SentLedger("w"), ReceiveLedger("w")
    for seq in range(1, 21):
        sent.producer(T, "p").record(seq, 2 * S + seq)
    subs = [ledger.subscription(f"w/{i}", T, "topic", S) for i in range(2)]
    counts = NackCounts(Fraction(1, 10), 1)
    for seq in range(1, 21):
        counts.deliver(subs[0], "p", seq, False)  # NACKs 10 and 20: dead-lettered
        subs[1].record("p", seq)
    audit = Audit()
    audit.merge(json.loads(json.dumps({**sent.drain(), **ledger.drain()})))
    fig = audit.verdict(1000 * S, 5 * S)[T]
    assert (fig["expected"], fig["received"], fig["nacks"], fig["dead_lettered"], fig["lost"]) == (40, 38, 2, 2, 0)
    by_key = {sub["key"]: sub for sub in fig["by_subscription"]}
    assert (by_key["w/0"]["dead_lettered"], by_key["w/1"]["dead_lettered"]) == (2, 0)


def test_the_receiver_writes_a_nack_for_a_chosen_message_and_an_ack_for_the_rest() -> None:
    client, connection = connected(environment())
    sub = ReceiveLedger("w").subscription("w/1", Q, "queue", 0)
    receiver = Receiver(client, Q, "client-individual", run_id="run", nacks=NackCounts(Fraction(1, 2), 1))
    receiver.audit = sub
    client.route("s", receiver)
    for seq, ack in ((1, b"a1"), (2, b"a2"), (2, b"a3")):
        headers, body, _ = message(b"m", time.time_ns(), ack=ack)
        deliver(connection, ({**headers, b"mq-producer": b"p", b"mq-seq": b"%d" % seq}, body))
    frames = [connection.next_frame() for _ in range(3)]
    assert [(command, headers[b"id"]) for command, headers, _ in frames] == [
        (b"ACK", b"a1"), (b"NACK", b"a2"), (b"ACK", b"a3")]  # fmt: skip
    entry = sub._drain("w")
    assert entry is not None
    assert (entry["streams"][0]["nacks"], entry["streams"][0]["redelivered"]) == (1, 1)


def settings(*args: str) -> Any:
    from argparse import ArgumentParser

    parser = ArgumentParser()
    for option in OPTIONS:
        parser.add_argument(f"--{option.name}", dest=option.name.replace("-", "_"), default=None)
    return read_settings(parser.parse_args(args), "stomp://h:1")


def test_nack_needs_client_individual_acks_and_a_ratio_from_0_to_1() -> None:
    assert settings("--mq-nack-ratio", "0.1", "--mq-ack", "client-individual").nack_ratio == 0.1
    with pytest.raises(OptionError, match=r"--mq-nack-ratio: NACK needs --mq-ack client-individual, not client$"):
        settings("--mq-nack-ratio", "0.1", "--mq-ack", "client")
    with pytest.raises(OptionError, match=r"--mq-nack-ratio: '1\.5' must be at least 0 and at most 1"):
        settings("--mq-nack-ratio", "1.5")
    with pytest.raises(OptionError, match="--mq-nack-times: '0' must be at least 1"):
        settings("--mq-nack-times", "0")


def test_the_broker_check_counts_dead_letters_as_dequeued() -> None:
    """ActiveMQ 5.17.2: 1,984 sent, 198 NACKed to ActiveMQ.DLQ; the queue's dequeued counts them too."""
    broker = {"destinations": {"/queue/a": {"enqueued": 1984, "dequeued": 1984, "unacked": 0}}}
    row = {"destination": "/queue/a", "sent": 1984, "received": 1984, "distinct": 1786}
    assert cross_check(broker, [{**row, "dead_lettered": 198}]) == []
    assert cross_check(broker, [row]) == [
        "/queue/a: the broker dequeued 1,984, mqusers received 1,786 distinct (0 unacknowledged at the end): "
        "198 unexplained (another consumer on this destination?)"
    ]


def test_nacks_and_dead_letters_show_in_the_summary_json_csv_and_html_only_when_there_are_some(tmp_path: Any) -> None:
    book = Book()
    for _ in range(20):
        book.on_request("STOMP", "send /queue/a", 0.01, 100, None)
        book.on_request("STOMP", "receive /queue/a", 0.01, 100, None)
    facts = RunFacts("t1", 1_700_000_000.0, 1_700_000_010.0, "time", DrainOutcome(True, 1.0, "all arrived"))
    nacked = {"received": 18, "nacks": 2, "dead_lettered": 2, "by_subscription": []}
    report = build_report(book, {"/queue/a": nacked}, facts, Settings())
    assert gate_failures(report) == []  # a dead letter is no loss
    summary = format_summary(report)
    assert re.search(r"nacks +dead-lettered\n/queue/a .* 2 +2\n", summary), summary
    document = report_document(report)
    assert (document["destinations"][0]["nacks"], document["destinations"][0]["dead_lettered"]) == (2, 2)
    write_csv(str(tmp_path / "r.csv"), report.rows)
    with (tmp_path / "r.csv").open() as handle:
        [row] = csv.DictReader(handle)
    assert (row["nacks"], row["dead_lettered"]) == ("2", "2")
    assert "dead lettered" in run_section(0, None, json.loads(json.dumps(document)))
    plain = build_report(book, {"/queue/a": {"received": 20, "by_subscription": []}}, facts, Settings())
    assert "nacks" not in format_summary(plain)
    assert "dead lettered" not in run_section(0, None, report_document(plain))
