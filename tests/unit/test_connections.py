"""The run's connections: opened per second, refused, closed, and the open files and broker count at the end."""

from __future__ import annotations

from typing import Any

from mqusers.measure.book import Book
from mqusers.measure.connections import connection_figures
from mqusers.options.settings import Settings
from mqusers.report.build import RunFacts, build_report
from mqusers.report.reportformats import format_summary, report_document
from mqusers.run.ending import DrainOutcome
from mqusers.run.health import Health
from mqusers.run.verdicts import overall
from tests.unit.fakehealth import FakeProbe, PlantedCpu

BROKER = "stomp://127.0.0.1:61613"


def churned(
    opened: int, refused: int, closed: int, unreceipted: int, span: tuple[float, float] = (100.0, 110.0)
) -> Book:
    book = Book()
    for failed, times in ((None, opened), (ValueError("broker ERROR: bad login"), refused)):
        for _ in range(times):
            book.on_request("STOMP", f"connect {BROKER}", 1.5, 0, failed)
    for failed, times in ((None, closed), (ValueError("no RECEIPT within 10s"), unreceipted)):
        for _ in range(times):
            book.on_request("STOMP", f"disconnect {BROKER}", 0.5, 0, failed)
    for tally in book.tallies.values():
        tally.first, tally.last = span
    return book


def test_connections_per_second_are_the_opened_over_the_connects_span() -> None:
    figures = connection_figures(churned(1_000, 7, 990, 3).tallies, [(40, 40), (12, 12)], {"connections": 0})
    assert figures == {"opened": 1_000, "failed": 7, "per_s": 100.0, "closed": 990, "close_failed": 3,
                       "open_files_start": 52, "open_files_end": 52, "broker_connections_end": 0}  # fmt: skip


def test_an_unknown_figure_stays_unknown_rather_than_a_partial_sum() -> None:
    figures = connection_figures(churned(10, 0, 10, 0).tallies, [(40, 41), (None, 12)], {})
    assert (figures["open_files_start"], figures["open_files_end"], figures["broker_connections_end"]) == (
        None, 41 + 12, None)  # fmt: skip
    assert connection_figures({}, [], {})["per_s"] == 0.0


def report_of(book: Book, files: tuple[int | None, int | None], broker: dict[str, Any]) -> Any:
    process = {**{"node": "local", "verdict": "ok", "cpu_percent_max": 10.0, "loop_lag_ms_max": 1.0,
                  "loop_lag_ms_p99": 1.0, "seconds": 10, "saturated_s": 0, "contended_s": 0, "blocked": {}},
               "open_files_start": files[0], "open_files_end": files[1]}  # fmt: skip
    facts = RunFacts("r1", 0.0, 10.0, "time", DrainOutcome(True, 1.0, "all arrived"),
                     generator=overall({"local": process}), broker={"broker": broker})  # type: ignore[dict-item]  # fmt: skip
    return build_report(book, {}, facts, Settings())


def test_the_summary_says_the_churn_and_that_files_and_connections_came_back() -> None:
    report = report_of(churned(500, 2, 500, 0), (40, 40), {"connections": 0})
    summary = " ".join(format_summary(report).split())
    assert ("connections: 500 opened (50.0/s), 2 failed; 500 closed with the broker's receipt, 0 without; open "
            "files 40 at the start, 40 at the end; the broker's own count at the end: 0") in summary  # fmt: skip
    assert "more open files" not in summary
    assert report_document(report)["connections"]["per_s"] == 50.0


def test_files_left_open_are_a_note_and_a_broker_without_a_count_says_so() -> None:
    report = report_of(churned(500, 0, 500, 0), (40, 45), {})
    summary = " ".join(format_summary(report).split())
    assert "the generator holds 5 more open files than at the start (40 then, 45 after the Users were gone)" in summary
    assert "the broker reports no connection count" in summary


def test_a_run_without_churn_has_no_connections_line() -> None:
    report = report_of(churned(3, 0, 0, 0), (40, 40), {"connections": 3})
    assert "connections:" not in format_summary(report)


def test_the_monitor_reads_open_files_at_its_start_and_at_the_finish() -> None:
    readings = iter([17, 19])
    health = Health("local", cpu=PlantedCpu(), probe=FakeProbe(), files=lambda: next(readings))
    health.start()
    assert (health.report()["open_files_start"], health.report()["open_files_end"]) == (17, None)
    health.finish()
    assert (health.report()["open_files_start"], health.report()["open_files_end"]) == (17, 19)
