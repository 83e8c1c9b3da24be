"""The listener without a store: options, the bounded writer, the master's merge, a local runner's points."""

from __future__ import annotations

import locust  # noqa: F401  (gevent first)
from locust.argument_parser import get_parser
from locust.event import Events

import argparse
import logging
import random
import re
from pathlib import Path
from typing import Any

import pytest
from gevent.event import Event

from mqusers.measure.book import Book
from mqusers.measure.totals import destination_rows
from mqusers.options.parsing import OptionError
from mqusers.sinks import schema
from mqusers.sinks.lines import ShippedInterval
from mqusers.sinks.listener import InfluxSink
from mqusers.sinks.sinkoptions import InfluxSettings, add_influx_arguments, read_influx_settings
from mqusers.sinks.windows import IntervalBook, IntervalMerger, RunTotals, drain, figures, tallies_of
from mqusers.sinks.writer import LineWriter, StoreRejected
from tests import broker_samples
from tests.unit.fake_influx import Ctx, Store, environment, parse


def fire(
    book_or_events: Book | IntervalBook | Events, name: str, ms: float = 1.0, error: Exception | None = None
) -> None:
    target = book_or_events.request.fire if isinstance(book_or_events, Events) else book_or_events.on_request
    target(request_type="STOMP", name=name, response_time=ms, response_length=100, exception=error, context={})


# ------------------------------------------------------------------------------------------ options


def influx_parser() -> Any:
    """Locust's parser with the ``--influx-*`` group, whether or not mqusers' plugin registers it."""
    parser = get_parser(default_config_files=[])
    if "--influx-url" not in parser._option_string_actions:
        add_influx_arguments(parser.add_argument_group("influx"))
    return parser


def test_options_parse_from_the_command_line_and_the_token_from_env_stays_out_of_the_web_ui(monkeypatch) -> None:
    monkeypatch.setenv("LOCUST_INFLUX_TOKEN", "s3cret")
    parser = influx_parser()
    settings = read_influx_settings(parser.parse_args(["--influx-url", "http://127.0.0.1:8086/"]))
    assert settings == InfluxSettings(url="http://127.0.0.1:8086", token="s3cret")
    assert "s3cret" not in repr(settings)
    actions = {a.dest: a for a in parser._actions if a.dest.startswith("influx_")}
    assert actions["influx_token"].is_secret and actions["influx_token"].env_var == "LOCUST_INFLUX_TOKEN"
    assert not any(a.include_in_web_ui for a in actions.values())
    assert all(a.type is str for a in actions.values())


def test_listener_is_off_without_a_url_and_bad_values_are_one_line() -> None:
    assert read_influx_settings(argparse.Namespace(influx_url="")) is None
    for values, message in [
        ({"influx_url": "udp://x"}, "--influx-url: 'udp://x' is not an http(s) URL"),
        ({"influx_url": "http://u:p@h"}, "credentials do not belong in the URL"),
        ({"influx_interval": "0.01"}, "--influx-interval: '0.01' must be at least 0.1"),
        ({"influx_buffer": "lots"}, "--influx-buffer: 'lots' is not a whole number"),
        ({"influx_token_file": "/nonexistent/token"}, "--influx-token-file: cannot read"),
    ]:
        options = argparse.Namespace(**{"influx_url": "http://127.0.0.1:8086", **values})
        with pytest.raises(OptionError, match=re.escape(message)):
            read_influx_settings(options)


def test_token_file_wins(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("from-file\n")
    options = argparse.Namespace(influx_url="http://h:1", influx_token="env", influx_token_file=str(tmp_path / "token"))
    settings = read_influx_settings(options)
    assert settings is not None and settings.token == "from-file"


# ------------------------------------------------------------------------------------------- writer


def test_writer_keeps_lines_while_the_store_is_down_drops_the_oldest_beyond_the_bound(tmp_path: Path) -> None:
    store = Store()
    copy = tmp_path / "copy.lp"
    writer = LineWriter(store.send, capacity=5, batch=2, flush_every=60, copy_to=str(copy))
    store.failure = ConnectionRefusedError("refused")
    writer.add(f"m f={i}i {i}" for i in range(8))
    assert writer.flush(timeout=0.01) is False
    assert (writer.buffered, writer.stats.overflowed) == (5, 3)
    assert writer.stats.failures >= 1 and "refused" in writer.stats.last_error
    store.failure = None
    assert writer.flush(timeout=5) is True
    assert store.lines == [f"m f={i}i {i}" for i in range(3, 8)]  # oldest first, none twice
    assert writer.stats.written == 5
    assert writer.close(timeout=1) == 0
    assert copy.read_text().splitlines() == [f"m f={i}i {i}" for i in range(8)]


def test_writer_drops_and_counts_what_the_store_rejects(caplog: pytest.LogCaptureFixture) -> None:
    store = Store()
    store.failure = StoreRejected("HTTP 401 Unauthorized from http://h")
    writer = LineWriter(store.send, capacity=100, batch=10, flush_every=60)
    writer.add(["m f=1i 1", "m f=2i 2"])
    with caplog.at_level(logging.WARNING):
        assert writer.flush(timeout=1) is True
    assert (writer.stats.rejected, writer.stats.dropped, writer.buffered) == (2, 2, 0)
    assert "HTTP 401" in caplog.text


def test_flusher_greenlet_sends_in_the_background_and_close_waits_for_it() -> None:
    store = Store()
    # No timed flush within the test: only a full batch, then close, can send.
    writer = LineWriter(store.send, capacity=100, batch=3, flush_every=60)
    writer.start()
    writer.add(["a f=1i 1", "a f=2i 2", "a f=3i 3"])
    assert store.took.wait(timeout=5), "a full batch did not wake the flusher"
    assert store.lines == ["a f=1i 1", "a f=2i 2", "a f=3i 3"]
    writer.add(["a f=4i 4"])
    assert writer.close(timeout=1) == 0
    assert store.lines[3:] == ["a f=4i 4"] and writer.stats.written == 4


# ------------------------------------------------------------------------------------ intervals


def test_master_merges_workers_intervals_by_start_time_and_counts_late_ones() -> None:
    merger = IntervalMerger(interval_ms=1000, grace_ms=2000)
    for worker in ("w1", "w2"):
        book = IntervalBook()
        for ms in (1.0, 2.0, 3.0):
            fire(book, "receive /queue/a", ms)
        merger.add(worker, 5000, 1.0, drain(book)[1])
    assert merger.ready(now_ms=7999) == []
    [merged] = merger.ready(now_ms=8000)
    assert (merged.ts_ms, merged.sources, merged.tallies["receive /queue/a"].count) == (5000, 2, 6)
    assert merger.add("w3", 5000, 1.0, {}) is False and merger.late == 1


def test_backlog_counts_fan_out_on_topics() -> None:
    book = IntervalBook()
    for _ in range(10):
        fire(book, "send /topic/t")
        fire(book, "send /queue/q")
    for _ in range(2):
        fire(book, "subscribe /topic/t")
    for _ in range(15):
        fire(book, "receive /topic/t")
    for _ in range(7):
        fire(book, "receive /queue/q")
    totals = RunTotals()
    totals.add(tallies_of(drain(book)[1]))
    rows = {row.destination: row for row in destination_rows(totals.tallies)}
    assert (rows["/topic/t"].sent, rows["/topic/t"].subscriptions, rows["/topic/t"].backlog) == (10, 2, 5)
    assert (rows["/queue/q"].received, rows["/queue/q"].backlog) == (7, 3)


# ------------------------------------------------------------------------------------- listener


def test_local_runner_writes_own_and_merged_points_a_summary_and_events(caplog: pytest.LogCaptureFixture) -> None:
    env, store = environment(), Store()
    audit = {"/queue/a": dict.fromkeys(schema.AUDIT_FIELDS, 0)}
    ctx = Ctx()
    sink = InfluxSink(env, ctx, InfluxSettings(url="http://h", interval=0.1), audit=lambda: audit, send=store.send)
    sink.start()
    closed = Event()  # set when the ticker hands over an interval holding this test's operations
    add = sink.writer.add

    def handed(lines: list[str]) -> None:
        add(lines)
        if any(line.startswith(f"{schema.OPS.name},") for line in lines):
            closed.set()

    sink.writer.add = handed  # type: ignore[method-assign]
    env.events.test_start.fire(environment=env)
    for index in range(50):
        if index == 25:  # half in one interval, half in a later one: wait for the boundary between
            closed.clear()
            assert closed.wait(timeout=10), "no interval closed"
        fire(env.events, "receive /queue/a", ms=0.5 + index / 100)
        fire(env.events, "send /queue/a", ms=0.1, error=RuntimeError("x") if index == 0 else None)
    for annotate in ctx.annotations:  # what a fault and an outage do, at their own times
        annotate("fault", "fault at 5s: kill -STOP 1", 1_700_000_000_123_456_789)
        annotate("outage", "/queue/a: producer p 2.00 s without service", 1_700_000_001_000_000_000)
    # What the broker sampler does each interval; the sources' shapes hold every broker figure between them.
    for sampled in ctx.broker_listeners:
        sampled(broker_samples.activemq(1_700_000_002_000_000_000, 0, "/queue/a"))
        sampled(broker_samples.rabbitmq(1_700_000_002_000_000_000, 0, "/queue/a", alarms=("memory",)))
        sampled(broker_samples.artemis(1_700_000_002_000_000_000, 0, "/queue/a"))
    ctx.shipping.complete()  # what mqusers' test_stop does once the run's figures are all in
    with caplog.at_level(logging.INFO):
        sink.close()
    points = parse(store.lines)
    marks = [(p[1]["kind"], p[3]) for p in points if p[0] == "mqusers_event" and p[1]["kind"] in ("fault", "outage")]
    assert marks == [("fault", 1_700_000_000_123), ("outage", 1_700_000_001_000)]
    ops = [p for p in points if p[0] == "mqusers_ops" and p[1]["operation"] == "receive"]
    merged = [p for p in points if p[0] == "mqusers_merged" and p[1]["operation"] == "receive"]
    assert len(ops) >= 2 and sum(int(p[2]["count"][:-1]) for p in ops) == 50
    assert sum(int(p[2]["count"][:-1]) for p in merged) == 50
    assert all(p[1]["worker"] == "local" and p[1]["run"] == "run-1" and p[1]["scenario"] == "pubsub" for p in ops)
    assert all(p[3] % 100 == 0 for p in ops)  # interval starts, aligned on the interval
    [summary] = [p for p in points if p[0] == "mqusers_summary" and p[1]["operation"] == "send"]
    assert (summary[2]["count"], summary[2]["errors"]) == ("50i", "1i")
    assert {p[1]["kind"] for p in points if p[0] == "mqusers_event"} >= {"test_start", "test_stop"}
    # Every measurement and every field the schema declares is written: none is a promise no panel can keep.
    written: dict[str, set[str]] = {}
    for name, _, fields, _ in points:
        written.setdefault(name, set()).update(fields)
    assert written == {m.name: set(m.fields) for m in schema.MEASUREMENTS.values()}
    assert {p[1]["kind"] for p in points if p[0] == schema.EVENTS.name} <= set(schema.EVENT_KINDS)
    assert "0 dropped" in caplog.text


def test_master_merges_what_workers_ship_into_one_series(caplog: pytest.LogCaptureFixture) -> None:
    env, store = environment("master"), Store()
    sink = InfluxSink(env, Ctx(), InfluxSettings(url="http://h", interval=1), send=store.send)
    sink.start()
    try:
        env.events.test_start.fire(environment=env)
        for worker in ("w1", "w2"):
            book = IntervalBook()
            for _ in range(30):
                fire(book, "receive /topic/t", 2.0)
            shipped = [ShippedInterval(ts_ms=1_000, duration_s=1.0, tallies=drain(book)[1]),
                       ShippedInterval(ts_ms=2_000, duration_s=1.0, tallies={})]  # fmt: skip
            sink.receive_intervals(shipped, worker)
        sink.finish()
        sink.close()
    finally:
        env.runner.quit()
    points = parse(store.lines)
    merged, silent = (p for p in points if p[0] == "mqusers_merged")
    assert (merged[2]["count"], merged[2]["sources"], merged[3]) == ("60i", "2i", 1_000)
    # Both workers reported a second, quiet interval: a zero, so a stall is not a gap on the graph.
    assert (silent[2]["count"], silent[3]) == ("0i", 2_000)
    assert "worker" not in merged[1]
    assert not [p for p in points if p[0] == "mqusers_ops"]  # the master has no Users of its own
    assert schema.MERGED.name in {p[0] for p in points}


def test_interval_book_gives_the_same_tallies_as_a_book() -> None:
    rng = random.Random(11)
    fast, exact = IntervalBook(), Book()
    for index in range(20_000):
        name = f"receive /queue/{index % 3}"
        ms = -1.0 if index % 997 == 0 else rng.lognormvariate(-0.5, 0.8)
        error = RuntimeError("x") if index % 1009 == 0 else None
        for book in (fast, exact):
            book.on_request(request_type="STOMP", name=name, response_time=ms, response_length=7, exception=error)
            book.on_request(request_type="GET", name="/api", response_time=ms, response_length=3, exception=error)
    taken = fast.take()
    assert set(taken) == set(exact.tallies) == {"receive /queue/0", "receive /queue/1", "receive /queue/2", "GET /api"}
    assert fast.take() == {}
    for name, tally in taken.items():
        truth = exact.tallies[name]
        assert (tally.count, tally.failures, tally.bytes, tally.negative) == (
            truth.count, truth.failures, truth.bytes, truth.negative
        )  # fmt: skip
        assert tally.histogram.get_total_count() == truth.histogram.get_total_count()
        assert figures(tally.histogram) == figures(truth.histogram)
