"""A broker-metrics sample as points: only the figures the source reported, declared names, escaped tags; the
sink writes them on the master or local runner, never on a worker, never raising into the sampler."""

from __future__ import annotations

import locust  # noqa: F401  (gevent first)

import logging
import re

import pytest

from mqusers.brokers.model import BrokerSample
from mqusers.sinks import schema
from mqusers.sinks.listener import InfluxSink
from mqusers.sinks.points import broker_points
from mqusers.sinks.sinkoptions import InfluxSettings
from tests import broker_samples
from tests.unit.fake_influx import Ctx, Store, environment

TAGS = {schema.RUN: "r1", schema.SCENARIO: "pubsub"}
TS_NS = 1_700_000_000_123_456_789
_FIELD = re.compile(r'([a-z_]+)=("(?:[^"\\]|\\.)*"|[^,]+)')


def fields(line: str) -> dict[str, str]:
    """A line's fields (tags and measurement carry no unescaped space in these tests)."""
    body = re.split(r"(?<!\\) ", line)[1]
    return dict(_FIELD.findall(body))


def test_an_activemq_sample_writes_its_figures_exactly_at_the_samples_millisecond() -> None:
    sample = broker_samples.activemq(TS_NS, 2, "/queue/orders")
    broker, destination = [p.line() for p in broker_points(TAGS, sample, TS_NS // 1_000_000)]
    assert broker == (
        "mqusers_broker,run=r1,scenario=pubsub,source=activemq "
        "memory_percent=3.0,store_percent=0.5,temp_percent=0.0,connections=5i,memory_bytes=1202000i,store_bytes=33554432i,"
        "heap_used_mb=182.5,heap_committed_mb=512.0,gc_count=42i,gc_seconds=0.808,threads=61i,cpu_percent=35.0 "
        "1700000000123"
    )
    assert destination == (
        "mqusers_broker_destination,destination=/queue/orders,run=r1,scenario=pubsub,source=activemq "
        "enqueued=10400i,dequeued=10397i,dispatched=10399i,expired=0i,depth=3i,unacked=2i,consumers=3i,"
        "producers=2i,memory_percent=0.25 1700000000123"
    )


def test_figures_a_source_does_not_report_are_absent_never_zero() -> None:
    sample = broker_samples.rabbitmq(TS_NS, 0, "/queue/orders")
    broker, destination = [p.line() for p in broker_points(TAGS, sample, 1)]
    assert set(fields(broker)) == {"memory_percent", "connections", "memory_bytes", "fd_used", "fd_total", "alarms",
                                   "alarm_names"}  # fmt: skip
    assert fields(broker)["alarms"] == "0i" and fields(broker)["alarm_names"] == '""'  # reported: none
    assert set(fields(destination)) == set(sample["destinations"]["/queue/orders"])
    # Nothing at all about the broker, a destination it does not know yet: no point rather than an empty one.
    quiet: BrokerSample = {"ts_ns": TS_NS, "source": "activemq", "broker": {}, "jvm": None, "destinations": {}}
    quiet["destinations"] = {"/queue/new": {}, "/queue/known": {"depth": 0}}
    [only] = [p.line() for p in broker_points(TAGS, quiet, 1)]
    assert (
        only == "mqusers_broker_destination,destination=/queue/known,run=r1,scenario=pubsub,source=activemq depth=0i 1"
    )
    # A JVM without a broker figure still gets its point; NaN (no such figure in line protocol) is left out.
    quiet["jvm"] = {"threads": 12, "cpu_percent": float("nan")}
    assert (
        broker_points(TAGS, quiet, 1)[0].line() == "mqusers_broker,run=r1,scenario=pubsub,source=activemq threads=12i 1"
    )


def test_alarms_are_a_count_and_the_sorted_names() -> None:
    sample = broker_samples.rabbitmq(TS_NS, 0, "/queue/orders", alarms=("memory", "disk"))
    assert fields(broker_points(TAGS, sample, 1)[0].line())["alarms"] == "2i"
    assert fields(broker_points(TAGS, sample, 1)[0].line())["alarm_names"] == '"disk,memory"'


def test_destinations_are_escaped_sorted_and_only_declared_names_are_written() -> None:
    sample = broker_samples.rabbitmq(TS_NS, 0, "/queue/b")
    sample["destinations"]["/topic/a b,c=d"] = {"depth": 1}
    sample["destinations"]["/queue/b"]["bogus"] = 1  # type: ignore[typeddict-unknown-key]
    sample["broker"]["uptime"] = 5  # type: ignore[typeddict-unknown-key]
    _, first, second = [p.line() for p in broker_points(TAGS, sample, 1)]
    assert first.startswith("mqusers_broker_destination,destination=/queue/b,")
    assert second.startswith(r"mqusers_broker_destination,destination=/topic/a\ b\,c\=d,run=r1,")
    for line in [p.line() for p in broker_points(TAGS, sample, 1)]:
        measurement = schema.MEASUREMENTS[line.split(",", 1)[0]]
        assert set(fields(line)) <= set(measurement.fields)


def test_the_sink_writes_a_sample_on_a_local_runner_and_never_raises_into_the_sampler(
    caplog: pytest.LogCaptureFixture,
) -> None:
    env, store, ctx = environment(), Store(), Ctx()
    sink = InfluxSink(env, ctx, InfluxSettings(url="http://h", interval=60), send=store.send)
    sink.start()
    assert ctx.broker_listeners == [sink.broker_sample]
    for listener in ctx.broker_listeners:
        listener(broker_samples.activemq(TS_NS, 0, "/queue/a"))
    broken = broker_samples.activemq(TS_NS, 0, "/queue/a")
    del broken["source"]  # type: ignore[misc]
    with caplog.at_level(logging.WARNING):
        sink.broker_sample(broken)
        sink.broker_sample(broken)
    assert caplog.text.count("a broker sample was not written") == 1
    sink.close()
    sink.broker_sample(broker_samples.activemq(TS_NS, 1, "/queue/a"))  # after close: nothing, no error
    broker = [line for line in store.lines if line.startswith(("mqusers_broker,", "mqusers_broker_destination,"))]
    assert len(broker) == 2 and all(line.endswith(" 1700000000123") for line in broker)
    assert all(",run=run-1,scenario=pubsub,source=activemq" in line for line in broker)


def test_a_worker_writes_no_broker_points() -> None:
    env, store, ctx = environment(), Store(), Ctx()
    sink = InfluxSink(env, ctx, InfluxSettings(url="http://h", interval=60), send=store.send)
    sink.role = "worker"  # what a WorkerRunner makes it: the master samples the broker, not a worker
    sink.start()
    assert ctx.broker_listeners == []
    sink.broker_sample(broker_samples.activemq(TS_NS, 0, "/queue/a"))
    sink.close()
    assert not [line for line in store.lines if line.startswith("mqusers_broker")]
