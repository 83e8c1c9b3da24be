import csv

from mqusers.measure.book import Book
from mqusers.options import Settings
from mqusers.report import destination_rows, format_summary, gate_failures, write_csv


def book_of(received_ms: list[float], sent: int, errors: int = 0) -> Book:
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
    return book


def test_rows_rates_and_latency() -> None:
    [row] = destination_rows(book_of([1.0] * 99 + [50.0], sent=100), duration_s=10)
    assert (row["sent"], row["received"], row["errors"]) == (100, 100, 0)
    assert row["receive_rate_msgs"] == 10.0
    assert row["receive_rate_mbit"] == 100 * 100 * 8 / 10 / 1e6
    assert row["latency_ms"]["p50"] == 1.0 and abs(row["latency_ms"]["max"] - 50.0) < 0.05


def test_gates_name_the_destination_the_figure_and_the_option() -> None:
    rows = destination_rows(book_of([1.0] * 98 + [50.0, 50.0], sent=100, errors=2), duration_s=10)
    failures = gate_failures(rows, Settings(max_p99_ms=5, max_errors=1, min_rate=100))
    assert failures == [
        "/queue/a: p99 50.015 ms > --mq-max-p99-ms 5",
        "/queue/a: 2 errors > --mq-max-errors 1",
        "/queue/a: 10.2 msg/s received < --mq-min-rate 100",
    ]
    assert gate_failures(rows, Settings(max_p99_ms=100, max_errors=2, min_rate=1)) == []


def test_csv_has_one_row_per_destination(tmp_path) -> None:  # type: ignore[no-untyped-def]
    rows = destination_rows(book_of([2.0, 4.0], sent=2), duration_s=1)
    path = tmp_path / "r.csv"
    write_csv(str(path), rows)
    [line] = list(csv.DictReader(path.open()))
    assert (line["destination"], line["sent"], line["received"]) == ("/queue/a", "2", "2")
    assert float(line["latency_max_ms"]) == rows[0]["latency_ms"]["max"]


def test_summary_table() -> None:
    book = book_of([1.0], sent=1, errors=1)
    text = format_summary(destination_rows(book, 1.0), book, 1.0, "run1")
    assert "run run1" in text and "/queue/a" in text and "error x" in text
