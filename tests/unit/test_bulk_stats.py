"""Locust's statistics fed in bulk equal per-event logging of the same recorded stream.

The stream: successes (name, µs, size, epoch ns) and failures of several operations over several
seconds. Per-event: every success and failure fired through ``events.request`` of a runner whose
clock is the stream's (``time.time`` patched). Bulk: successes recorded in a
:class:`~mqusers.measure.recorder.Recorder` (failures fired through it), flushed now and then, and
:func:`mqusers.run.locust_stats.add_batches` into another runner's stats. Both must agree on every
field Locust shows or ships to a master.
"""

from __future__ import annotations

from locust.env import Environment
from locust.event import Events
from locust.stats import RequestStats, StatsEntry

import random
from collections.abc import Iterator
from typing import Any

import pytest

from mqusers.measure.book import Book
from mqusers.measure.names import REQUEST_TYPE
from mqusers.measure.recorder import Recorder, second_of
from mqusers.run.locust_stats import PER_SECOND_KEPT_S, add_batches, trim_per_second
from mqusers.sinks.windows import IntervalBook

NAMES = ("send /queue/a", "receive /queue/a", "receive /topic/b")
T0_NS = 1_764_000_000_000_000_000


def stream(seed: int, count: int = 20_000) -> Iterator[tuple[str, int, int, int, str | None]]:
    """(name, µs, size, now ns, error or None), in time order over ~4 s, latencies from 0 to ~2 s,
    a few negative (clocks out of step) and a few failures; some events right at second boundaries."""
    rng = random.Random(seed)
    now = T0_NS + 999_999_000
    for index in range(count):
        now += rng.choice((1, 100, 1_000, 250_000))
        if index % 997 == 0:
            now = (now // 1_000_000_000 + 1) * 1_000_000_000 - rng.choice((0, 1, 120))  # a boundary
        micros = int(rng.lognormvariate(6, 2)) if index % 50 else -rng.randrange(1, 3_000)
        error = "broker ERROR: queue full" if index % 333 == 0 else None
        yield rng.choice(NAMES), min(micros, 2_000_000), rng.choice((0, 100, 1024)), now, error


def runner_stats() -> Environment:
    env = Environment(events=Events())
    env.create_local_runner()
    env.stats.use_response_times_cache = True  # the web UI's "current" percentiles
    env.stats.total = StatsEntry(env.stats, "Aggregated", "", use_response_times_cache=True)
    return env


def fire_failure(fire: Any, name: str, size: int, error: str) -> None:
    fire(request_type=REQUEST_TYPE, name=name, response_time=0.0, response_length=size,
         exception=RuntimeError(error), context={})  # fmt: skip


def entry_fields(entry: StatsEntry) -> dict[str, Any]:
    return {
        "num_requests": entry.num_requests,
        "num_none_requests": entry.num_none_requests,
        "num_failures": entry.num_failures,
        "min_response_time": entry.min_response_time,
        "max_response_time": entry.max_response_time,
        "num_reqs_per_sec": dict(entry.num_reqs_per_sec),
        "num_fail_per_sec": dict(entry.num_fail_per_sec),
        "response_times": dict(entry.response_times),
        "total_content_length": entry.total_content_length,
        "last_request_timestamp": entry.last_request_timestamp,
        "cache": {t: (dict(c.response_times), c.num_requests) for t, c in (entry.response_times_cache or {}).items()},
    }


def all_fields(stats: RequestStats) -> dict[str, Any]:
    fields = {key: entry_fields(entry) for key, entry in stats.entries.items()}
    fields["Aggregated"] = entry_fields(stats.total)
    fields["errors"] = {key: error.occurrences for key, error in stats.errors.items()}
    return fields


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_bulk_update_equals_per_event_logging(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [T0_NS / 1e9]
    monkeypatch.setattr("time.time", lambda: clock[0])  # Locust's clock: the stream's
    per_event, bulk = runner_stats(), runner_stats()
    direct = Recorder(per_event.events.request.fire, per_message=True)
    recorder = Recorder(bulk.events.request.fire)
    recorder.add_consumer(lambda batches: add_batches(bulk.stats, batches))
    rng = random.Random(seed)
    for index, (name, micros, size, now_ns, error) in enumerate(stream(seed)):
        clock[0] = now_ns / 1e9
        if error is None:
            direct.operation(name).record(micros, size, now_ns)
            recorder.operation(name).record(micros, size, now_ns)
        else:
            fire_failure(direct.fire, name, size, error)
            fire_failure(recorder.fire, name, size, error)
        if rng.random() < 0.002 or index % 4000 == 0:
            recorder.flush()  # the flusher's 0.2 s, at arbitrary points of the stream
    recorder.flush()

    expected, got = all_fields(per_event.stats), all_fields(bulk.stats)
    assert got == expected
    for key, entry in [*per_event.stats.entries.items(), ("Aggregated", per_event.stats.total)]:
        other = bulk.stats.total if key == "Aggregated" else bulk.stats.entries[key]
        # The same float sum in another order: equal up to the last bits.
        assert other.total_response_time == pytest.approx(entry.total_response_time, rel=1e-12)
        assert other.get_response_time_percentile(0.99) == entry.get_response_time_percentile(0.99)


def test_the_book_and_the_interval_book_get_the_same_figures_in_bulk() -> None:
    direct_book, bulk_book = Book(), Book()
    direct_intervals, bulk_intervals = IntervalBook(), IntervalBook()
    direct = Recorder(lambda **event: (direct_book.on_request(**event), direct_intervals.on_request(**event)),
                      per_message=True)  # fmt: skip
    recorder = Recorder(lambda **_: None)
    recorder.add_consumer(bulk_book.add_batches)
    recorder.add_consumer(bulk_intervals.add_batches)
    for name, micros, size, now_ns, error in stream(7, 5_000):
        if error is None:
            direct.operation(name).record(micros, size, now_ns)
            recorder.operation(name).record(micros, size, now_ns)
    recorder.flush()
    direct_intervals_tallies, bulk_intervals_tallies = direct_intervals.take(), bulk_intervals.take()
    for name in NAMES:
        for mine, theirs in ((bulk_book.tallies[name], direct_book.tallies[name]),
                             (bulk_intervals_tallies[name], direct_intervals_tallies[name])):  # fmt: skip
            assert (mine.count, mine.bytes, mine.negative) == (theirs.count, theirs.bytes, theirs.negative)
            assert mine.histogram.encode() == theirs.histogram.encode()


def test_batches_are_cut_at_locusts_seconds_and_come_in_time_order() -> None:
    recorder = Recorder(lambda **_: None)
    got: list[tuple[str, int, int, int]] = []
    recorder.add_consumer(lambda batches: got.extend((b.name, b.second, b.count, b.bytes) for b in batches))
    boundary = T0_NS + 2_000_000_000
    a, b = recorder.operation("a"), recorder.operation("b")
    a.record(5, 10, boundary - 2_000)
    b.record(6, 1, boundary - 1_000)
    a.record_many(7, 10, boundary + 1_000, 3)
    b.record(8, 1, boundary + 2_000)
    recorder.flush()
    second = second_of(boundary - 2_000)
    assert got == [("a", second, 1, 10), ("b", second, 1, 1), ("a", second + 1, 3, 30), ("b", second + 1, 1, 1)]
    recorder.flush()
    assert len(got) == 4  # nothing twice


def test_a_failure_flushes_what_came_before_it() -> None:
    seen: list[str] = []
    recorder = Recorder(lambda **event: seen.append(f"event {event['name']}"))
    recorder.add_consumer(lambda batches: seen.extend(f"batch {b.name}" for b in batches))
    recorder.operation("receive /queue/a").record(1, 1, T0_NS)
    fire_failure(recorder.fire, "receive /queue/a", 1, "corrupt")
    assert seen == ["batch receive /queue/a", "event receive /queue/a"]


def test_per_second_counts_are_trimmed_to_the_last_minute_and_locusts_current_figures_keep(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stats = RequestStats()
    now = 1_700_000_000
    clock = [0.0]
    monkeypatch.setattr("locust.stats.time.time", lambda: clock[0])
    for second in range(now - 300, now + 1):
        clock[0] = float(second)
        stats.log_request(REQUEST_TYPE, "send /queue/a", 1.0, 10)
        stats.log_error(REQUEST_TYPE, "send /queue/a", RuntimeError("x"))
    entry = stats.get("send /queue/a", REQUEST_TYPE)
    before = (entry.current_rps, entry.current_fail_per_sec, stats.total.current_rps, entry.num_requests)
    trim_per_second(stats, now)
    for per_second in (entry.num_reqs_per_sec, entry.num_fail_per_sec, stats.total.num_reqs_per_sec):
        assert min(per_second) == now - PER_SECOND_KEPT_S and max(per_second) == now
    assert (entry.current_rps, entry.current_fail_per_sec, stats.total.current_rps, entry.num_requests) == before


def test_locusts_chart_history_is_kept_only_where_something_draws_it() -> None:
    from types import SimpleNamespace

    from mqusers.run.locust_stats import HISTORY_KEPT, history_drawn, trim_history

    stats = RequestStats()
    stats.history.extend({"time": str(i)} for i in range(720))  # an hour of Locust's 5 s chart points
    trim_history(stats)
    assert [point["time"] for point in stats.history] == [str(i) for i in range(720 - HISTORY_KEPT, 720)]
    headless = SimpleNamespace(headless=True, html_file=None, worker=False)
    assert not history_drawn(headless) and not history_drawn(SimpleNamespace(headless=False, worker=True))
    assert history_drawn(SimpleNamespace(headless=False, html_file=None, worker=False))  # the web UI's charts
    assert history_drawn(SimpleNamespace(headless=True, html_file="r.html", worker=False))  # Locust's report
