"""Destination patterns: what one names, how Users share it, its audit folded, its worst and distributions."""

import csv
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mqusers import StompConsumerUser, StompProducerUser
from mqusers.audit.audit import Audit
from mqusers.audit.ledgers import ReceiveLedger, SentLedger
from mqusers.measure.book import Book
from mqusers.measure.perdestination import Spread
from mqusers.options.destpattern import PatternError, label_of, parse_pattern, patterns_in, share
from mqusers.options.settings import Settings
from mqusers.report.build import Row, RunReport, rows_of
from mqusers.report.gates import gate_failures
from mqusers.report.manydest import destination_table, distribution, fold_verdict, pattern_section, section_lines
from mqusers.report.reportformats import write_csv
from mqusers.sinks.schema import AUDIT_FIELDS
from mqusers.stomp.receiver import Receiver
from mqusers.users.base import lanes
from mqusers.wiring.admission import pattern_problem
from mqusers.wiring.plugin import _audit_totals
from tests.unit.fake_client import connected, environment, message

P = "/queue/orders.{0..9}"
MS = 1_000_000


def test_a_pattern_names_each_destination_of_its_range_and_finds_each_ones_index() -> None:
    pattern = parse_pattern("/queue/t.{7..11}.in")
    assert pattern is not None and len(pattern) == 5
    assert pattern.names() == [f"/queue/t.{n}.in" for n in (7, 8, 9, 10, 11)]
    assert [pattern.index_of(n) for n in ("/queue/t.7.in", "/queue/t.11.in", "/queue/t.12.in", "/queue/t.07.in")] == [
        0, 4, None, None]  # fmt: skip
    padded = parse_pattern("/topic/d.{000..999}")
    assert padded is not None and padded.name(7) == "/topic/d.007" and padded.index_of("/topic/d.7") is None
    assert parse_pattern("/queue/plain") is None


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("/queue/a.{3..1}", "'/queue/a.{3..1}': the range {3..1} ends before it starts"),
        ("/queue/a.{x..1}", "'/queue/a.{x..1}' is not a destination pattern; use one range of whole numbers"),
        ("/queue/{0..1}.{0..1}", "'/queue/{0..1}.{0..1}' is not a destination pattern"),
        ("/queue/a.{0..1", "'/queue/a.{0..1' is not a destination pattern"),
        ("/queue/a.{0..100000}", "'/queue/a.{0..100000}' names 100,001 destinations; use at most 100,000"),
    ],
)
def test_a_bad_pattern_says_why_in_one_line(text: str, line: str) -> None:
    with pytest.raises(PatternError) as caught:
        parse_pattern(text)
    assert str(caught.value).startswith(line) and "\n" not in str(caught.value)


@pytest.mark.parametrize(("count", "users"), [(10, 1), (10, 3), (10, 10), (3, 7), (1, 4), (10_000, 7)])
def test_every_destination_has_a_user_and_none_has_two_while_there_are_enough(count: int, users: int) -> None:
    taken = [d for index in range(users) for d in share(count, index, users)]
    assert sorted(set(taken)) == list(range(count))
    if users <= count:
        assert len(taken) == count  # each exactly once
    else:
        assert all(len(share(count, index, users)) == 1 for index in range(users))
    # A User beyond the count (a shape, the web UI adding users) takes a share again, never nothing.
    assert len(share(count, users, users)) >= 1


def test_labels_map_each_destination_to_its_pattern_and_leave_the_rest() -> None:
    patterns = patterns_in([P, "/queue/x", "GET /api", 3])
    assert list(patterns) == [P]
    assert label_of("/queue/orders.4", patterns) == P and label_of("/queue/orders.40", patterns) == "/queue/orders.40"


def _audit(lost_at: dict[str, int], count: int = 5) -> dict[str, dict[str, Any]]:
    """Two producers each send ``count`` to each of the pattern's 10 queues, one consumer reads them all
    but the seqs ``lost_at`` names (destination -> a seq of producer p0 that never arrives)."""
    sent, received = SentLedger("w1"), ReceiveLedger("w2")
    for index in range(10):
        destination = f"/queue/orders.{index}"
        sub = received.subscription("w2/0", destination, "queue", 0)
        for producer in ("w1.P.0", "w1.P.1"):
            stream = sent.producer(destination, producer)
            for seq in range(1, count + 1):
                stream.record(seq, seq * MS)
                if not (producer == "w1.P.0" and lost_at.get(destination) == seq):
                    sub.record(producer, seq)
    audit = Audit()
    audit.merge({**sent.drain(), **received.drain()})
    return audit.verdict(10**12, 0)


def test_the_audit_folds_into_the_patterns_row_and_names_the_destination_that_lost() -> None:
    verdict = _audit({"/queue/orders.3": 2, "/queue/orders.8": 4})
    folded = fold_verdict(verdict, [P])
    assert set(folded) == {P}
    row = folded[P]
    assert (row["sent"], row["received"], row["lost"], row["subscriptions"]) == (100, 98, 2, 10)
    assert [s["key"] for s in row["by_subscription"]] == ["w2/0"]  # one consumer: one entry, not ten
    assert row["by_subscription"][0]["received"] == 98 and row["copies"] == 1
    pattern = parse_pattern(P)
    assert pattern is not None
    spread = Spread()
    slow = spread.spot("/queue/orders.5")
    for micros in (100, 200, 90_000):
        slow.record(micros, 1_000 * MS)
    fast = spread.spot("/queue/orders.3")
    fast.record(50, 2_000 * MS)
    fast.record(60, 4_000 * MS)
    spread.fold()
    section = pattern_section(pattern, destination_table(pattern, verdict, spread.figures()))
    # Most lost first (a tie: the name), then the highest p99 among the rest.
    assert [(w["destination"], w["lost"]) for w in section["worst"][:3]] == [
        ("/queue/orders.3", 1), ("/queue/orders.8", 1), ("/queue/orders.5", 0)]  # fmt: skip
    assert section["worst"][2]["p99_ms"] == pytest.approx(90.111)  # the slot's top: up to 6 % above 90 ms
    capped = destination_table(pattern, verdict, spread.figures(), max_ms=90.0)  # the pattern's exact max
    assert max(line["p99_ms"] or 0.0 for line in capped) == 90.0
    assert (section["destinations"], section["sent_to"], section["subscribed"], section["with_loss"]) == (10, 10, 10, 2)
    # Over the pattern's span (1 s to 4 s): 3 in 3 s, 2 in 3 s; a burst at one instant is not 3,000/s.
    assert section["receive_rate_msgs"]["max"] == pytest.approx(1.0)
    assert sorted(w["receive_rate_msgs"] for w in section["worst"])[-2] == pytest.approx(2 / 3)
    assert section["receive_rate_msgs"]["min"] == 0.0  # eight destinations had no timed delivery
    assert section["p99_ms"]["min"] == pytest.approx(0.061) and len(section["worst"]) == 10  # 60 µs: slot 60-61
    head, worst, spread_table = section_lines(section)
    assert isinstance(head, str) and head.startswith(f"{P}: 10 destinations, 10 sent to, 10 subscribed, 2 with loss")
    assert worst[1][:4] == ["/queue/orders.3", "10", "9", "1"] and spread_table[1][0] == "p99 ms"


def test_a_plain_destination_keeps_its_own_verdict() -> None:
    verdict = _audit({})
    assert fold_verdict(verdict, ["/queue/orders.1"]) == verdict


def test_distribution_points_are_nearest_rank() -> None:
    assert distribution([5.0, 1.0, 3.0, 2.0, 4.0]) == {"min": 1.0, "p50": 3.0, "p90": 5.0, "max": 5.0}
    assert distribution([]) == {"min": None, "p50": None, "p90": None, "max": None}


def test_spreads_shipped_by_two_processes_merge_to_one_processes_figures() -> None:
    one, a, b = Spread(), Spread(), Spread()
    samples = [(micros, (i + 1) * MS) for i, micros in enumerate(range(100, 5_000, 37))]
    for index, (micros, at) in enumerate(samples):
        one.spot("/topic/t.1").record(micros, at)
        (a if index % 2 else b).spot("/topic/t.1").record(micros, at)
    one.fold()
    merged = Spread()
    for part in (a, b):
        merged.merge(part.drain(), "w")
    assert merged.figures() == one.figures()
    assert one.figures()["/topic/t.1"]["received"] == len(samples)
    assert a.drain() == {}  # drained: nothing twice


def test_a_pattern_gate_holds_each_destination_to_it_not_their_sum() -> None:
    verdict = _audit({"/queue/orders.3": 2, "/queue/orders.8": 4})
    pattern = parse_pattern(P)
    assert pattern is not None
    section = pattern_section(pattern, destination_table(pattern, verdict, {}))
    report = RunReport(SimpleNamespace(lost_workers=[], produces=False, consumes=False, generator={"verdict": "ok"}),  # type: ignore[arg-type]
                       Settings(max_lost=1), [_row(P)], [], [], 0, patterns=[section])  # fmt: skip
    assert gate_failures(report) == []  # 2 lost in all, at most 1 on each destination
    report = RunReport(report.facts, Settings(max_lost=0), [_row(P)], [], [], 0, patterns=[section])
    assert gate_failures(report) == ["/queue/orders.3: 1 lost > --mq-max-lost 0"]


def _row(destination: str) -> Row:
    book = Book()
    for operation in ("send", "receive"):
        book.on_request("STOMP", f"{operation} {destination}", 1.0, 10, None)
    return rows_of(book)[0]


def test_a_receiver_of_a_patterns_destination_names_its_events_after_the_pattern() -> None:
    env = environment()
    client, _ = connected(env)
    spread = Spread()
    receiver = Receiver(client, "/queue/orders.4", "auto", run_id="run", label=P, spot=spread.spot("/queue/orders.4"))
    for sent_ns in (1_000 * MS, 1_001 * MS):
        receiver(*message(b"x" * 10, sent_ns))
    assert client.recorder is not None
    client.recorder.flush()
    assert env.stats.get(f"receive {P}", "STOMP").num_requests == 2  # one Locust row for the pattern
    assert env.stats.get("receive /queue/orders.4", "STOMP").num_requests == 0
    spread.fold()
    assert spread.figures()["/queue/orders.4"]["received"] == 2


class _Durable(StompConsumerUser):
    destination = P
    durable = True


class _Sender(StompProducerUser):
    destination = P


@pytest.mark.parametrize(
    ("classes", "settings", "line"),
    [
        ([_Durable, _Sender], Settings(), "_Durable.destination: a destination pattern takes no durable subscriptions"),
        ([_Sender], Settings(destination="/queue/a.{2..1}"), "--mq-destination: '/queue/a.{2..1}': the range"),
        ([_Durable], Settings(destination="/queue/plain"), None),
        ([_Sender], Settings(), None),
    ],
)
def test_what_a_pattern_cannot_run_with_is_refused_before_load(
    classes: list[type], settings: Settings, line: str | None
) -> None:
    env = SimpleNamespace(runner=SimpleNamespace(user_classes=classes))
    problem = pattern_problem(env, settings)  # type: ignore[arg-type]
    assert problem == line if line is None else problem is not None and problem.startswith(line)


def test_the_csv_has_a_line_per_destination_after_the_patterns_row(tmp_path: Path) -> None:
    verdict = _audit({"/queue/orders.3": 2})
    pattern = parse_pattern(P)
    assert pattern is not None
    spread = Spread()
    spread.spot("/queue/orders.3").record(1_500, 1_000 * MS)
    spread.fold()
    tables = {P: destination_table(pattern, verdict, spread.figures())}
    path = tmp_path / "run.csv"
    write_csv(str(path), [_row(P)], tables)
    with path.open(encoding="utf-8") as handle:
        lines = list(csv.DictReader(handle))
    assert [line["destination"] for line in lines] == [P, *pattern.names()]
    three = lines[4]
    assert (three["sent"], three["received"], three["lost"], three["latency_p99_ms"]) == ("10", "1", "1", "1.535")
    assert lines[1]["received"] == "0" and lines[1]["latency_p99_ms"] == "" and lines[1]["span_s"] == ""


@pytest.mark.parametrize(("workers", "users"), [(1, 3), (2, 2), (3, 4), (4, 1)])
def test_workers_split_the_destinations_and_their_users_share_each_part(workers: int, users: int) -> None:
    taken = [d for worker in range(workers) for index in range(users)
             for d in lanes("/queue/o.{0..99}", index, users, (worker, workers))]  # fmt: skip
    assert sorted(taken) == sorted(f"/queue/o.{n}" for n in range(100))  # each exactly once
    assert lanes("/queue/plain", 3, 4, (1, 2)) == ["/queue/plain"]


def test_the_live_audit_totals_are_one_point_per_pattern_not_one_per_destination() -> None:
    book = Book()
    book.on_request("STOMP", f"send {P}", 1.0, 10, None)
    sent, received = SentLedger("w1"), ReceiveLedger("w2")
    for index in range(10):
        destination = f"/queue/orders.{index}"
        received.subscription("w2/0", destination, "queue", 0).record("w1.P.0", 2)  # seq 1 never arrives
        stream = sent.producer(destination, "w1.P.0")
        stream.record(1, MS)
        stream.record(2, 2 * MS)
    audit = Audit()
    audit.merge({**sent.drain(), **received.drain()})
    ctx = SimpleNamespace(settings=Settings(drain=0.0), book=book, audit=audit)
    totals = _audit_totals(ctx)  # type: ignore[arg-type]
    assert totals == {P: {**dict.fromkeys(AUDIT_FIELDS, 0), "lost": 10}}
