import random

from hdrh.histogram import HdrHistogram
from hypothesis import given, settings
from hypothesis import strategies as st

from mqusers.measure.book import HIGHEST_US, LOWEST_US, Book, new_histogram, percentile_plot, record_grouped, walk
from mqusers.measure.totals import destination_rows
from mqusers.report.build import operation_rows


def fire(book: Book, name: str, ms: float, error: Exception | None = None) -> None:
    book.on_request(request_type="STOMP", name=name, response_time=ms, response_length=10, exception=error)


def test_merged_percentiles_equal_one_histogram_of_all_samples() -> None:
    rng = random.Random(7)
    samples = [rng.lognormvariate(0, 1.2) for _ in range(30_000)]
    workers = [Book(), Book(), Book()]
    for index, ms in enumerate(samples):
        fire(workers[index % 3], "receive /queue/a", ms)
    master = Book()
    for worker in workers:
        master.merge(worker.drain())
    truth = HdrHistogram(1, 3_600_000_000, 3)
    for ms in samples:
        truth.record_value(max(1, int(ms * 1000)))
    merged = master.tallies["receive /queue/a"]
    assert merged.count == 30_000
    for percentile in (50, 90, 99, 99.9, 99.99):
        assert merged.histogram.get_value_at_percentile(percentile) == truth.get_value_at_percentile(percentile)
    figures = merged.latency_ms()
    assert figures["p50"] == truth.get_value_at_percentile(50) / 1000
    assert figures["max"] == truth.get_max_value() / 1000


def test_microsecond_resolution() -> None:
    book = Book()
    for ms in (0.120, 0.121, 0.450):
        fire(book, "receive /queue/a", ms)
    figures = book.tallies["receive /queue/a"].latency_ms()
    assert abs(figures["p50"] - 0.121) < 0.001
    assert abs(figures["max"] - 0.450) < 0.001


def test_failures_negatives_and_other_request_types() -> None:
    book = Book()
    fire(book, "receive /queue/a", 1.0)
    fire(book, "receive /queue/a", -3.0)
    fire(book, "receive /queue/a", 0.0, RuntimeError("corrupt"))
    book.on_request(request_type="GET", name="/receive", response_time=1.0, response_length=0, exception=None)
    book.on_request(request_type="receive", name="/queue/a", response_time=1.0, response_length=0, exception=None)
    tally = book.tallies["receive /queue/a"]
    assert (tally.count, tally.failures, tally.negative, tally.histogram.get_total_count()) == (3, 1, 1, 1)
    # Other request types are tallied apart, never under a STOMP name, even one spelled like it.
    assert list(book.tallies) == ["receive /queue/a", "GET /receive", "RECEIVE /queue/a"]
    assert [row["name"] for row in operation_rows(book)] == ["GET /receive", "RECEIVE /queue/a"]
    assert [row.destination for row in destination_rows(book.tallies)] == ["/queue/a"]


def test_drain_starts_afresh() -> None:
    book = Book()
    fire(book, "send /queue/a", 0.01)
    assert "send /queue/a" in book.drain()
    assert book.drain() == {}


def test_the_percentile_plot_gives_hdrhs_own_values_and_ends_at_the_maximum() -> None:
    rng = random.Random(3)
    histogram = new_histogram()
    for _ in range(5_000):
        histogram.record_value(rng.randint(100, 30_000))
    histogram.record_value(2_000_000)
    points = percentile_plot(histogram)
    assert points[0][0] == 1.0 and points[-1] == (5_001.0, histogram.get_max_value() / 1000.0)
    for x, ms in points[:-1]:
        assert ms == histogram.get_value_at_percentile(100 * (1 - 1 / x)) / 1000.0
    assert [x for x, _ in points] == sorted(x for x, _ in points)
    assert percentile_plot(new_histogram()) == []


def test_a_blocked_producers_sends_are_spread_until_it_was_last_seen_blocked() -> None:
    book = Book()
    for _ in range(1000):  # written into socket buffers within a few ms, then the broker stopped reading
        fire(book, "send /queue/a", 0.0)
    tally = book.tallies["send /queue/a"]
    [burst] = destination_rows(book.tallies)
    assert burst.span_s < 1.0
    [row] = destination_rows(book.tallies, {"/queue/a": tally.first + 4.0, "/queue/other": tally.first + 99})
    assert row.span_s == 4.0 and row.send_rate_msgs == 250.0
    [row] = destination_rows(book.tallies, {"/queue/a": tally.first - 1})  # seen blocked before the last send
    assert row.span_s == burst.span_s


@given(st.lists(st.tuples(st.integers(-5, 2 * HIGHEST_US), st.integers(1, 1000)), max_size=60))
def test_grouped_recording_leaves_what_record_value_per_sample_leaves(samples: list[tuple[int, int]]) -> None:
    """Counts, total, min and max, and the encoding: hdrh's own record_value is the truth (clipped as a Tally)."""
    grouped, truth = new_histogram(), new_histogram()
    micros: dict[int, int] = {}
    for value, count in samples:
        micros[value] = micros.get(value, 0) + count
    negative = record_grouped(grouped, micros)
    for value, count in micros.items():
        if value >= 0:
            truth.record_value(min(max(value, LOWEST_US), HIGHEST_US), count)
    assert negative == sum(count for value, count in micros.items() if value < 0)
    assert list(grouped.counts) == list(truth.counts)
    assert grouped.get_total_count() == truth.get_total_count()
    assert (grouped.get_min_value(), grouped.get_max_value()) == (truth.get_min_value(), truth.get_max_value())
    assert grouped.encode() == truth.encode()


@settings(max_examples=25)  # hdrh's own figures, the truth here, walk every counter in Python
@given(st.lists(st.integers(min_value=1, max_value=HIGHEST_US), min_size=1, max_size=300))
def test_one_walk_gives_hdrhs_own_mean_and_percentiles(values: list[int]) -> None:
    histogram = new_histogram()
    for value in values:
        histogram.record_value(value)
    percentiles = (0.0, 1.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99, 100.0)
    mean, at = walk(histogram, percentiles)
    assert mean == histogram.get_mean_value()
    assert at == [histogram.get_value_at_percentile(p) for p in percentiles]


def test_one_walk_of_an_empty_histogram_is_zeros() -> None:
    assert walk(new_histogram(), (50.0, 99.0)) == (0.0, [0, 0])
