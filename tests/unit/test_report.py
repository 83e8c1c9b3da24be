import csv
import re
from typing import Any

from hdrh.histogram import HdrHistogram

from mqusers.measure.book import Book
from mqusers.measure.series import Series
from mqusers.options.parsing import parse_broker_url
from mqusers.options.settings import Settings
from mqusers.report.build import RunFacts, build_report, rows_of, shortfall
from mqusers.report.gates import gate_failures
from mqusers.report.reportformats import CSV_COLUMNS, format_summary, report_document, write_csv
from mqusers.run.ending import DrainOutcome
from mqusers.run.verdicts import overall


def book_of(received_ms: list[float], sent: int, errors: int = 0, span: tuple[float, float] = (100.0, 110.0)) -> Book:
    book = Book()
    for _ in range(sent):
        book.on_request(
            request_type="STOMP", name="send /queue/a", response_time=0.01, response_length=100, exception=None
        )
    for ms in received_ms:
        book.on_request(
            request_type="STOMP", name="receive /queue/a", response_time=ms, response_length=100, exception=None
        )
    for _ in range(errors):
        book.on_request(
            request_type="STOMP", name="error x", response_time=0, response_length=0, exception=ValueError()
        )
        book.on_request(
            request_type="STOMP", name="receive /queue/a", response_time=0, response_length=1, exception=ValueError()
        )
    # Fixed times instead of the clock: first send at span[0], last receive at span[1].
    for name, tally in book.tallies.items():
        tally.first, tally.last = span[0], span[1] if name.startswith("receive") else span[0] + 1
    return book


def facts(verdict: str = "ok") -> RunFacts:
    generator = {**overall({}), "verdict": verdict, "sentence": f"{verdict}: its words"}
    return RunFacts("run1", 0.0, 60.0, "time", DrainOutcome(True, 1.0, "no delivery for 5 s"), generator=generator)


def test_each_rate_is_over_the_span_its_own_messages_took() -> None:
    # Sends from 100 to 101 s, receives from 100 to 110 s (a backlog drained after the sends).
    [row] = rows_of(book_of([1.0] * 99 + [50.0], sent=100, span=(100.0, 110.0)))
    t = row.totals
    assert (t.send_span_s, t.receive_span_s, t.span_s) == (1.0, 10.0, 10.0)  # the run lasted 60 s
    assert (t.sent, t.received, t.errors) == (100, 100, 0)
    assert t.send_rate_msgs == 100.0 and t.receive_rate_msgs == 10.0 and t.throughput_msgs == 10.0
    assert t.send_rate_mbit == 100 * 100 * 8 / 1 / 1e6 and t.receive_rate_mbit == 100 * 100 * 8 / 10 / 1e6
    assert row.latency_ms["p50"] == 1.0 and abs(row.latency_ms["max"] - 50.0) < 0.05
    document = row.document()  # the JSON report's and the CSV's row
    assert set(document) == {*CSV_COLUMNS, "latency_ms", "negative_latencies", "by_subscription", "by_broker"}
    assert (document["send_span_s"], document["send_rate_msgs"], document["receive_rate_msgs"]) == (1.0, 100.0, 10.0)
    assert document["lost"] == 0


def test_a_put_only_row_has_send_rates_in_both_units_and_no_receive_rate() -> None:
    book = book_of([], sent=500)  # sends from 100 to 101 s, nothing received
    [row] = rows_of(book)
    t = row.totals
    assert (t.send_span_s, t.send_rate_msgs, t.send_rate_mbit) == (1.0, 500.0, 500 * 100 * 8 / 1e6)
    assert (t.receive_span_s, t.receive_rate_msgs, t.receive_rate_mbit) == (0.0, 0.0, 0.0)
    summary = format_summary(build_report(book, None, facts(), Settings()))
    lines = summary.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("destination"))
    cells = list(zip(_columns(lines[at]), lines[at + 1].split(), strict=True))
    assert cells[2:5] == [("send s", "1.000"), ("sent/s", "500.0"), ("Mbit/s", "0.40")], summary
    assert cells[6:9] == [("recv s", "0.000"), ("recv/s", "0.0"), ("Mbit/s", "0.00")], summary


def _columns(header: str) -> list[str]:
    """A console table's column names (two spaces or more apart; a name may hold one space)."""
    return [name for name in re.split(r"\s{2,}", header.strip()) if name]


def test_gates_name_the_destination_the_figure_and_the_option() -> None:
    book = book_of([1.0] * 98 + [50.0, 50.0], sent=100, errors=2)
    failures = gate_failures(build_report(book, None, facts(), Settings(max_p99_ms=5, max_errors=3, min_rate=100)))
    assert failures == [
        "/queue/a: p99 50.015 ms > --mq-max-p99-ms 5",
        "/queue/a: 10.2 msg/s received < --mq-min-rate 100",
        "4 errors in all operations > --mq-max-errors 3",  # the ERROR frames ("error x") count too
    ]
    assert gate_failures(build_report(book, None, facts(), Settings(max_p99_ms=100, max_errors=4, min_rate=1))) == []


def test_saturation_gate() -> None:
    book = book_of([1.0], sent=1)
    assert gate_failures(build_report(book, None, facts("saturated"), Settings())) == []
    for verdict in ("saturated", "contended"):  # either way the latency figures are partly the generator's
        assert gate_failures(build_report(book, None, facts(verdict), Settings(fail_on_saturation=True))) == [
            f"the load generator's verdict is {verdict} and --mq-fail-on-saturation is set"
        ]
    assert gate_failures(build_report(book, None, facts("broker-slow"), Settings(fail_on_saturation=True))) == []


def test_a_run_with_producers_that_sent_nothing_fails_a_gate_unless_it_only_consumes() -> None:
    received_only = book_of([1.0] * 5, sent=0)  # another run's backlog, drained
    producing = RunFacts("run1", 0.0, 60.0, "time", DrainOutcome(True, 0.0, "nothing was sent by this run"),
                         produces=True)  # fmt: skip
    assert gate_failures(build_report(received_only, None, producing, Settings())) == [
        "nothing was sent: the run has producers and not one message of theirs went out"
    ]
    assert gate_failures(build_report(Book(), None, producing, Settings(warmup=5))) == [
        "nothing was sent after the 5 s warm-up: the run has producers and not one message of theirs went out"
    ]
    assert gate_failures(build_report(received_only, None, facts(), Settings())) == []  # consume-only
    assert gate_failures(build_report(book_of([], sent=1), None, producing, Settings())) == []


def test_consumers_only_that_drained_no_queue_fail_and_topic_subscribers_alone_pass() -> None:
    consuming = RunFacts("run1", 0.0, 60.0, "time", DrainOutcome(True, 0.0, "nothing was sent by this run"),
                         consumes=True)  # fmt: skip

    def subscribed(destination: str) -> Book:
        book = Book()
        book.on_request(request_type="STOMP", name=f"subscribe {destination}", response_time=1.0,
                        response_length=0, exception=None)  # fmt: skip
        return book

    empty = build_report(subscribed("/queue/a"), None, consuming, Settings())
    assert [row.destination for row in empty.rows] == ["/queue/a"]  # its row, with its zeros
    assert gate_failures(empty) == [
        "nothing was received: the run has consumers only and not one message reached them (a get-only run drains "
        "what an earlier run left: fill the queue first, docs/scenarios.md)"
    ]
    assert gate_failures(build_report(subscribed("/topic/t"), None, consuming, Settings())) == []  # durable sign-up
    assert gate_failures(build_report(book_of([1.0], sent=0), None, consuming, Settings())) == []  # it drained one


def test_shortfall_of_the_target_rate_is_one_line() -> None:
    book = book_of([], sent=1000)
    book.tallies["send /queue/a"].last = 110.0  # 1000 sends over 10 s
    assert shortfall(book, Settings(total_rate=100)) is None
    line = shortfall(book, Settings(total_rate=500))
    assert line is not None and "500 msg/s asked, 100.0 msg/s sent (80 % short)" in line


def test_csv_has_one_row_per_destination(tmp_path) -> None:  # type: ignore[no-untyped-def]
    rows = rows_of(book_of([2.0, 4.0], sent=2))
    path = tmp_path / "r.csv"
    write_csv(str(path), rows)
    [line] = list(csv.DictReader(path.open()))
    assert (line["destination"], line["sent"], line["received"], line["foreign"]) == ("/queue/a", "2", "2", "0")
    assert float(line["latency_max_ms"]) == rows[0].latency_ms["max"]


def test_summary_table_and_notes() -> None:
    book = book_of([1.0], sent=1, errors=1)
    verdict = {"/queue/a": {"unreceived": 7, "foreign": 2, "other_run": 3}}
    text = format_summary(build_report(book, verdict, facts(), Settings()))
    assert "run run1" in text and "/queue/a" in text and "error x" in text
    assert "7 unreceived (still queued at the broker or lost" in text
    assert "2 foreign and 3 other runs' messages" in text
    assert "ended by time" in text and "drain: no delivery for 5 s" in text
    assert "warm-up" not in text
    warmed = format_summary(build_report(book, verdict, facts(), Settings(warmup=5.0)))
    assert "the 5 s warm-up left out (of Locust's tables too)" in warmed


def first_screen(**settings: Any) -> list[str]:
    """The summary of a 1-destination run as a user reads it: 1,234,567 sent, latency up to 12.5 s."""
    book = book_of([0.266] * 98 + [3.5, 12_500.0], sent=100)
    book.tallies["send /queue/a"].count = book.tallies["receive /queue/a"].count = 1_234_567
    run = facts()
    run.scenario = {"locustfile": "queue_balance.py", "server": "ActiveMQ/5.17.2", "users": {"Producer": 3,
                    "Worker": 3}, "rate": "1,000 msg/s asked per producer", "size": 1024}  # fmt: skip
    report = build_report(book, {}, run, Settings(broker=parse_broker_url("stomp://127.0.0.1:61613"), **settings))
    return format_summary(report, ["report.json", "report.html", "locust_stats.csv"]).splitlines()


def test_the_first_screen_says_what_ran_what_happened_latency_verdicts_and_files_in_100_columns() -> None:
    lines = first_screen(warmup=5.0)
    text = "\n".join(lines)
    assert len(lines) <= 25 and max(map(len, lines)) < 100, text
    assert lines[0] == "mqusers summary: run run1, queue_balance.py on ActiveMQ/5.17.2 at stomp://127.0.0.1:61613"
    assert lines[1] == "load: 6 users (3 Producer, 3 Worker), 1,000 msg/s asked per producer, 1,024 B messages, 60.0 s"
    assert "5 s warm-up" in lines[2]
    traffic = next(i for i, line in enumerate(lines) if line.startswith("destination"))
    assert lines[traffic].split() == ["destination", "sent", "send", "s", "sent/s", "Mbit/s", "received", "recv", "s",
                                      "recv/s", "Mbit/s", "errors"]  # fmt: skip
    assert lines[traffic + 1].split()[:2] == ["/queue/a", "1,234,567"]  # thousands separators
    assert "audit: nothing lost, unreceived, duplicated, reordered or redelivered" in lines
    latency = next(i for i, line in enumerate(lines) if line.startswith("latency"))
    assert lines[latency].split() == ["latency", "count", "p50", "ms", "p90", "ms", "p99", "ms", "p99.9", "ms", "max",
                                      "ms"]  # fmt: skip
    # µs digits and thousands separators: 0.266 ms, 12.5 s written as 12,5xx.xxx ms
    receive = lines[latency + 1].split()
    assert receive[:4] == ["receive", "/queue/a", "1,234,567", "0.266"] and receive[-1].startswith("12,5")
    assert lines[-2].startswith("generator: ok")
    assert lines[-1] == "files written: report.json, report.html, locust_stats.csv"


def test_an_audit_that_found_something_is_a_table() -> None:
    book = book_of([1.0], sent=3)
    lines = format_summary(build_report(book, {"/queue/a": {"lost": 2, "reordered": 1}}, facts(), Settings()))
    header = next(line for line in lines.splitlines() if line.startswith("audit"))
    assert header.split() == ["audit", "lost", "unreceived", "unconfirmed", "dup", "dup-reconnect", "reord", "redeliv"]
    assert "/queue/a     2           0            0    0              0      1        0" in lines


def test_the_summary_says_which_clock_offsets_were_corrected_with() -> None:
    clocks = {
        "w1": {"offset_ms": 0.1, "error_ms": 0.2, "rtt_ms": 0.4, "applied_ms": 0.0},
        "w2": {"offset_ms": 250.0, "error_ms": 0.2, "rtt_ms": 0.4, "applied_ms": 250.0},
    }
    run = facts()
    run.clocks = clocks
    lines = format_summary(build_report(book_of([1.0], sent=1), {}, run, Settings())).splitlines()
    assert (
        "clocks against the master, ms: w1 +0.100 ± 0.200 (within its error: not corrected), w2 +250.000 ± 0.200"
        in (" ".join(line.strip() for line in lines))
    )
    # A hundred workers: one range for those within their error, the corrected named, the line stays short.
    run.clocks = {f"w{i:03d}": {"offset_ms": i / 100, "error_ms": 0.2 + i / 1000, "rtt_ms": 0.4, "applied_ms": 0.0}
                  for i in range(100)}  # fmt: skip
    run.clocks["w042"] = {"offset_ms": -80.0, "error_ms": 0.3, "rtt_ms": 0.6, "applied_ms": -80.0}
    text = " ".join(line.strip() for line in format_summary(build_report(book_of([1.0], sent=1), {}, run, Settings())
                                                            ).splitlines())  # fmt: skip
    assert ("clocks against the master, ms: 99 of 100 workers within their error, not corrected (offsets +0.000 to "
            "+0.990, errors ± 0.200 to 0.299); w042 -80.000 ± 0.300") in text, text  # fmt: skip


def test_the_json_carries_each_operations_histogram_and_the_series() -> None:
    book = book_of([1.0] * 90 + [7.5] * 10, sent=100)
    series = Series()
    series.add_second("local", 1_700_000_000, 12.0, 0.5)
    document = report_document(build_report(book, None, facts(), Settings(), series))
    assert document["kind"] == "run"
    received = HdrHistogram.decode(document["histograms"]["receive /queue/a"].encode("ascii"))
    assert received.get_total_count() == 100 and received.get_value_at_percentile(95) == 7_503  # µs, slot top
    assert set(document["histograms"]) == set(book.tallies)
    assert document["series"]["generators"]["local"] == {"t": [1_700_000_000], "cpu_percent": [12.0],
                                                         "loop_lag_ms": [0.5]}  # fmt: skip


def test_a_lost_worker_is_named_fails_a_gate_and_its_messages_are_not_lost() -> None:
    book = book_of([1.0] * 90, sent=100)
    worker = {"worker": "host-b_9f2c", "host": "host-b", "process": "ab12", "last_heartbeat_s": 7.9,
              "last_report_s": 6.0, "reported": {"sent": 1500, "received": 1400}}  # fmt: skip
    run = facts()
    run.lost_workers = [worker]
    verdict = {"/queue/a": {"lost": 0, "worker_lost": 10, "by_subscription": []}}
    report = build_report(book, verdict, run, Settings(max_lost=0))
    assert gate_failures(report) == ["worker host-b_9f2c was lost mid-test: its last figures are unknown"]
    assert report.notes[1] == (
        "worker host-b_9f2c (host host-b) was lost: last heartbeat at 7.9 s, last report at 6.0 s, with 1,500 sent "
        "and 1,400 received until then; what it sent or received after is worker-lost, not lost"
    )
    assert any(n.startswith("/queue/a: 10 worker-lost") for n in report.notes)
    document = report_document(report)
    assert document["lost_workers"] == [worker] and document["destinations"][0]["worker_lost"] == 10
    assert "worker-lost" in format_summary(report, [])


def test_a_lost_message_fails_the_run_by_default_and_unreceived_says_it_does_not() -> None:
    """Settings() as the command line gives them: no --mq-max-lost, yet one lost message is a failed gate."""
    assert Settings().max_lost == 0
    book = book_of([1.0] * 90, sent=100)
    lossy = build_report(book, {"/queue/a": {"lost": 1, "by_subscription": []}}, facts(), Settings())
    assert gate_failures(lossy) == ["/queue/a: 1 lost > --mq-max-lost 0"]
    raised = build_report(book, {"/queue/a": {"lost": 1, "by_subscription": []}}, facts(), Settings(max_lost=1))
    assert gate_failures(raised) == []
    # Unreceived and unconfirmed are not loss: the run passes, and its note says why.
    unsure = build_report(book, {"/queue/a": {"unreceived": 9, "unconfirmed": 1, "by_subscription": []}}, facts(),
                          Settings())  # fmt: skip
    assert gate_failures(unsure) == []
    assert any("neither fails the run, only lost does (--mq-max-lost)" in note for note in unsure.notes), unsure.notes
