"""Transactions beside the audit: which ones abort, their frames, what each COMMIT or ABORT became, the report."""

from __future__ import annotations

import csv
from argparse import Namespace
from fractions import Fraction

import gevent
import pytest

from mqusers.measure.book import Book, Tally
from mqusers.measure.transactionfigures import transaction_figures
from mqusers.options.parsing import OptionError, parse_broker_url
from mqusers.options.settings import Settings, read_settings
from mqusers.report.brokerreport import cross_check
from mqusers.report.build import RunFacts, build_report
from mqusers.report.gates import gate_failures
from mqusers.report.reportformats import format_summary, report_document, write_csv
from mqusers.report.transactionsreport import aborted_delivered, transactions_sentence
from mqusers.run.ending import DrainOutcome
from mqusers.stomp.acktransactions import AckTransactions
from mqusers.stomp.client import ClientConfig, Sent
from mqusers.stomp.wire import transaction_frame, transaction_line
from mqusers.users.transactions import aborts
from tests.unit.fake_client import ADDRESS, connected, environment, publisher
from tests.unit.memory_transport import parse


def test_the_aborted_share_is_exact_and_evenly_spread() -> None:
    for text in ("0", "0.1", "0.25", "0.3", "1/3", "0.5", "0.999", "1"):
        ratio = Fraction(text)
        chosen = [k for k in range(1, 1001) if aborts(k, ratio)]
        for n in (1, 7, 10, 100, 999, 1000):  # any first n transactions hold exactly floor(n * ratio)
            assert sum(k <= n for k in chosen) == int(n * ratio), (text, n)
    assert [k for k in range(1, 13) if aborts(k, Fraction(1, 4))] == [4, 8, 12]


def test_the_frames_say_begin_send_in_it_commit_with_a_receipt() -> None:
    assert parse(transaction_frame(b"BEGIN", b"p-tx1")) == (b"BEGIN", {b"transaction": b"p-tx1"}, b"")
    assert parse(transaction_frame(b"COMMIT", b"p-tx1", b"r9")) == (
        b"COMMIT", {b"transaction": b"p-tx1", b"receipt": b"r9"}, b"")  # fmt: skip
    env = environment()
    client, connection = connected(env)
    assert client.begin(b"p-tx1", "begin /queue/a")
    client.publish(publisher(client), 1, extra=transaction_line(b"p-tx1"))
    begin, send = (parse(frame) for frame in connection.sent)
    assert begin == (b"BEGIN", {b"transaction": b"p-tx1"}, b"")
    assert (send[0], send[1][b"transaction"], send[1][b"mq-seq"]) == (b"SEND", b"p-tx1", b"1")


def test_a_commit_answered_is_confirmed_timed_and_one_unanswered_or_refused_is_unconfirmed() -> None:
    env = environment()
    client, connection = connected(env, ClientConfig(parse_broker_url(ADDRESS), timeout=0.2))
    commit = client.operation("commit /queue/a")
    ending = gevent.spawn(client.end_transaction, b"p-tx1", True, commit)
    command, headers, _ = connection.answer_receipt()
    assert (command, headers[b"transaction"]) == (b"COMMIT", b"p-tx1")
    assert ending.get(timeout=1) is Sent.CONFIRMED
    # No RECEIPT within --mq-timeout: the broker may have committed or not.
    assert client.end_transaction(b"p-tx2", True, commit) is Sent.UNCONFIRMED
    assert connection.next_frame()[1][b"transaction"] == b"p-tx2"
    refusing = gevent.spawn(client.end_transaction, b"p-tx3", True, commit)
    receipt = connection.next_frame()[1][b"receipt"]
    connection.feed(b"ERROR\nreceipt-id:%s\nmessage:no such transaction\n\n\x00" % receipt)
    assert refusing.get(timeout=0.1) is Sent.UNCONFIRMED  # at once, not after the timeout
    client.recorder.flush()
    tally = env.stats.entries[("commit /queue/a", "STOMP")]
    assert (tally.num_requests, tally.num_failures) == (3, 2)


def test_an_abort_never_written_is_failed_and_a_begin_on_a_dead_connection_says_so() -> None:
    env = environment()
    client, connection = connected(env)
    connection.drop()
    assert client.end_transaction(b"p-tx1", False, client.operation("abort /queue/a")) is Sent.FAILED
    assert not client.begin(b"p-tx2", "begin /queue/a")
    assert env.stats.entries[("begin /queue/a", "STOMP")].num_failures == 1


def tally(count: int, failures: int, first: float, last: float) -> Tally:
    t = Tally()
    t.count, t.failures, t.first, t.last = count, failures, first, last
    return t


def test_the_report_counts_transactions_per_second_and_the_violation_fails_the_run() -> None:
    tallies = {"commit /queue/a": tally(31, 1, 100.0, 110.0), "abort /queue/a": tally(10, 0, 101.0, 109.0),
               "send /queue/a": tally(400, 0, 100.0, 110.0)}  # fmt: skip
    rows = [{"aborted": 100, "aborted_delivered": 2}, {"aborted": 0, "aborted_delivered": 0}]
    figures = transaction_figures(tallies, rows)
    assert figures == {"committed": 30, "commit_failed": 1, "aborted": 10, "abort_failed": 0, "per_s": 4.0,
                       "messages_aborted": 100, "aborted_delivered": 2}  # fmt: skip
    assert transaction_figures({"send /queue/a": tallies["send /queue/a"]}, rows) is None
    assert transactions_sentence(figures) == [
        "transactions: 40 ended (4.0/s): 30 committed, 10 aborted, 1 COMMIT or ABORT without the broker's receipt; "
        "100 messages aborted, 2 of them delivered"]  # fmt: skip
    assert aborted_delivered({"/queue/a": rows[0], "/queue/b": rows[1]}) == [
        "/queue/a: 2 messages of aborted transactions delivered (of 100 aborted): the broker did not hold the ABORT"
    ]


def test_the_broker_check_compares_enqueued_with_what_was_committed() -> None:
    broker = {"destinations": {"/queue/a": {"enqueued": 300, "dequeued": 300, "unacked": 0}}}
    row = {"destination": "/queue/a", "sent": 400, "received": 300, "distinct": 300}
    assert cross_check(broker, [{**row, "aborted": 100}]) == []
    assert cross_check(broker, [row]) == ["/queue/a: the broker enqueued 300, mqusers sent 400 (0 unconfirmed): "
                                          "100 unexplained"]  # fmt: skip
    assert cross_check(broker, [{**row, "aborted": 90}]) == [
        "/queue/a: the broker enqueued 300, mqusers sent 400 (0 unconfirmed, 90 of them aborted): 10 unexplained"
    ]


def test_acks_go_in_transactions_of_n_each_committed_and_a_flush_commits_the_rest() -> None:
    env = environment()
    client, connection = connected(env, ClientConfig(parse_broker_url(ADDRESS), timeout=1.0))
    acks = AckTransactions(client, "/queue/a", 3)
    frames = b"".join(acks.ack(b"m%d" % i) for i in range(1, 6)) + acks.commit() + acks.commit()
    client.send_raw(frames)  # as the reader greenlet writes them: one buffer after a read
    sent = [parse(frame + b"\x00") for frame in connection.sent[0].split(b"\x00") if frame]
    assert [(c, h.get(b"transaction"), h.get(b"id")) for c, h, _ in sent] == [
        (b"BEGIN", b"mq-tx-1", None), (b"ACK", b"mq-tx-1", b"m1"), (b"ACK", b"mq-tx-1", b"m2"),
        (b"ACK", b"mq-tx-1", b"m3"), (b"COMMIT", b"mq-tx-1", None),
        (b"BEGIN", b"mq-tx-3", None), (b"ACK", b"mq-tx-3", b"m4"), (b"ACK", b"mq-tx-3", b"m5"),
        (b"COMMIT", b"mq-tx-3", None),
    ]  # fmt: skip
    for _, headers, _ in (sent[4], sent[8]):
        connection.feed(b"RECEIPT\nreceipt-id:%s\n\n\x00" % headers[b"receipt"])
    gevent.sleep(0.01)
    client.recorder.flush()
    commits = env.stats.entries[("commit-acks /queue/a", "STOMP")]
    assert (commits.num_requests, commits.num_failures) == (2, 0)


def test_acks_in_transactions_need_acks() -> None:
    with pytest.raises(OptionError, match="--mq-tx-ack sends ACKs in transactions: --mq-ack auto sends none"):
        read_settings(Namespace(mq_tx_ack="10", mq_ack="auto"), "stomp://h:1")
    assert read_settings(Namespace(mq_tx_ack="10", mq_ack="client"), "stomp://h:1").tx_ack == 10
    paced = Namespace(mq_tx_ack="10", mq_backlog_drain_rate="100", mq_backlog_messages="1000")
    with pytest.raises(OptionError, match="--mq-tx-ack and --mq-backlog-drain-rate both decide when ACKs go"):
        read_settings(paced, "stomp://h:1")


def test_a_new_connection_begins_anew_and_has_nothing_of_the_old_to_commit() -> None:
    env = environment()
    client, _ = connected(env)
    acks = AckTransactions(client, "/queue/a", 10)
    assert acks.ack(b"m1").startswith(b"BEGIN\ntransaction:mq-tx-1\n")
    client.generation += 1  # what a reconnect does: the broker rolled the open transaction back
    assert acks.commit() == b""
    assert acks.ack(b"m2").startswith(b"BEGIN\ntransaction:mq-tx-2\n")


def test_an_aborted_message_delivered_fails_the_gates_and_shows_in_the_summary_json_and_csv(tmp_path) -> None:
    book = Book()
    for _ in range(20):
        book.on_request("STOMP", "send /queue/a", 0.01, 100, None)
    book.on_request("STOMP", "commit /queue/a", 0.5, 0, None)
    book.on_request("STOMP", "abort /queue/a", 0.5, 0, None)
    verdict = {"/queue/a": {"aborted": 10, "aborted_delivered": 1, "received": 11, "by_subscription": []}}
    facts = RunFacts("t1", 1_700_000_000.0, 1_700_000_010.0, "time", DrainOutcome(True, 1.0, "all arrived"))
    report = build_report(book, verdict, facts, Settings())  # no gate asked for
    line = "/queue/a: 1 messages of aborted transactions delivered (of 10 aborted): the broker did not hold the ABORT"
    assert gate_failures(report) == [line]
    summary = format_summary(report)
    assert "aborted-deliv" in summary and line in " ".join(summary.split())
    assert "transactions: 2 ended" in summary
    document = report_document(report)
    assert (document["destinations"][0]["aborted"], document["transactions"]["aborted_delivered"]) == (10, 1)
    write_csv(str(tmp_path / "r.csv"), report.rows)
    with (tmp_path / "r.csv").open() as handle:
        [row] = csv.DictReader(handle)
    assert (row["aborted"], row["aborted_delivered"]) == ("10", "1")
