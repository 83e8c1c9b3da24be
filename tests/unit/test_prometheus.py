"""The Prometheus endpoint: the schema's families, the same figures as the InfluxDB lines, its options and its end."""

from __future__ import annotations

import locust  # noqa: F401  (gevent first)

import dataclasses
import logging
import socket
from collections.abc import Iterator
from typing import Any

import gevent
import pytest
import requests
from gevent.event import Event
from prometheus_client.parser import text_string_to_metric_families

from mqusers.options.parsing import OptionError
from mqusers.sinks import schema
from mqusers.sinks.influx import attach
from mqusers.sinks.listener import InfluxSink
from mqusers.sinks.prometheus import Endpoint
from mqusers.sinks.sinkoptions import InfluxSettings, PrometheusSettings, add_influx_arguments, read_prometheus_settings
from tests import broker_samples
from tests.unit.fake_influx import Ctx, Store, environment, parse

DESTINATION = "/queue/a"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def scrape(url: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Sample name -> labels -> value, read back by prometheus-client's own parser of the text format."""
    response = requests.get(url, timeout=5)
    response.raise_for_status()
    samples: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def run_local(sink: InfluxSink, ctx: Ctx) -> None:
    """Two intervals of sends and receives, broker samples of every source, then the run's end."""
    env = sink.environment
    closed = Event()  # set once the ticker has emitted an interval holding this test's operations
    emit = sink.emit

    def emitted(found: list[schema.Point]) -> None:
        emit(found)
        if any(p.measurement is schema.OPS for p in found):
            closed.set()

    sink.emit = emitted  # type: ignore[method-assign]
    env.events.test_start.fire(environment=env)
    for index in range(40):
        if index == 20:  # half in one interval, half in a later one
            closed.clear()
            assert closed.wait(timeout=10), "no interval closed"
        for name, ms in ((f"receive {DESTINATION}", 0.5 + index / 10), (f"send {DESTINATION}", 0.1)):
            error = RuntimeError("x") if index == 0 and name.startswith("send") else None
            env.events.request.fire(request_type="STOMP", name=name, response_time=ms, response_length=100,
                                    exception=error, context={})  # fmt: skip
    for sampled in ctx.broker_listeners:  # the sources' shapes hold every broker figure between them
        sampled(broker_samples.activemq(1_700_000_002_000_000_000, 0, DESTINATION))
        sampled(broker_samples.rabbitmq(1_700_000_002_000_000_000, 0, DESTINATION, alarms=("memory",)))
        sampled(broker_samples.artemis(1_700_000_002_000_000_000, 0, DESTINATION))
    ctx.shipping.complete()  # what mqusers' test_stop does once the run's figures are all in


@pytest.fixture
def both() -> Iterator[tuple[InfluxSink, Store]]:
    """A local runner's listener writing to a fake InfluxDB and serving /metrics, after a short run."""
    env, store, ctx = environment(), Store(), Ctx()
    audit = {DESTINATION: {name: index for index, name in enumerate(schema.AUDIT_FIELDS)}}
    endpoint = Endpoint(PrometheusSettings(port=free_port(), linger=10))
    settings = InfluxSettings(url="http://h", interval=0.1)
    sink = InfluxSink(env, ctx, settings, audit=lambda: audit, send=store.send, endpoint=endpoint)
    sink.start()
    run_local(sink, ctx)
    yield sink, store
    if sink.endpoint is not None:  # a test that did not close it: no scrape to wait for
        sink.endpoint.settings = dataclasses.replace(sink.endpoint.settings, linger=0)
    sink.close()
    env.runner.quit()


def test_the_exposed_names_are_the_schemas(both: tuple[InfluxSink, Store]) -> None:
    sink, _ = both
    assert sink.endpoint is not None
    exposed = scrape(sink.endpoint.url)
    assert set(exposed) == {family.sample for family in schema.PROMETHEUS.values()}
    # Every numeric field of every measurement has a family; text (events, alarm names) has none.
    numeric = {(m.name, f) for m in schema.MEASUREMENTS.values() for f, kind in m.fields.items() if kind != "str"}
    assert {(f.measurement.name, f.field) for f in schema.PROMETHEUS.values() if not f.per_second} == numeric
    rates = {f.name for f in schema.PROMETHEUS.values() if f.per_second}
    assert rates == {f"{name}_{schema.RATE}" for name in schema.INTERVAL_MEASUREMENTS}
    for family in schema.PROMETHEUS.values():
        assert family.sample.startswith("mqusers_") and family.sample.endswith("_total") == (family.kind == "counter")
        for labels in exposed[family.sample]:
            assert [key for key, _ in labels] == sorted(family.measurement.tags), family.name


def labels_of(tags: dict[str, str], measurement: str) -> tuple[tuple[str, str], ...]:
    declared = schema.MEASUREMENTS[measurement].tags
    return tuple(sorted((tag, tags.get(tag, "")) for tag in declared))


def number(text: str) -> float:
    return float(text[:-1] if text.endswith("i") else text)


def test_the_figures_are_the_influxdb_lines_figures(both: tuple[InfluxSink, Store]) -> None:
    sink, store = both
    assert sink.endpoint is not None
    exposed = scrape(sink.endpoint.url)
    sums: dict[tuple[str, Any], float] = {}
    last: dict[tuple[str, Any], float] = {}
    for name, tags, fields, _ in parse([line for line in store.lines if not line.startswith("mqusers_event")]):
        labels = labels_of(tags, name)
        for field, text in fields.items():
            [family] = [f for f in schema.PROMETHEUS.values() if (f.measurement.name, f.field) == (name, field)
                        and not f.per_second] or [None]  # fmt: skip
            if family is None:
                continue  # text: no family
            key = (family.sample, labels)
            sums[key] = sums.get(key, 0.0) + number(text)
            last[key] = number(text)
        if name in schema.INTERVAL_MEASUREMENTS:
            last[(f"{name}_rate", labels)] = number(fields["count"]) / number(fields["interval_s"])
    checked = 0
    for (sample, labels), value in last.items():
        family = schema.PROMETHEUS[sample.removesuffix("_total")]
        expected = sums[(sample, labels)] if family.summed else value
        assert exposed[sample][labels] == pytest.approx(expected, rel=1e-12), (sample, labels)
        checked += 1
    assert checked == sum(len(series) for series in exposed.values())  # nothing exposed that no line holds
    receive = labels_of({"run": "run-1", "scenario": "pubsub", "operation": "receive", "destination": DESTINATION},
                        schema.MERGED.name)  # fmt: skip
    assert exposed["mqusers_merged_count_total"][receive] == 40
    send = labels_of({"run": "run-1", "scenario": "pubsub", "operation": "send", "destination": DESTINATION},
                     schema.SUMMARY.name)  # fmt: skip
    assert (exposed["mqusers_summary_count"][send], exposed["mqusers_summary_errors"][send]) == (40, 1)


def test_the_endpoint_waits_for_a_scrape_of_the_final_figures_then_stops(
    both: tuple[InfluxSink, Store], caplog: pytest.LogCaptureFixture
) -> None:
    sink, _ = both
    assert sink.endpoint is not None
    url = sink.endpoint.url
    with caplog.at_level(logging.INFO):
        closing = gevent.spawn(sink.close)
        for _ in range(100):  # each scrape is one request; the close returns after one that started after it
            if closing.ready():
                break
            try:
                scrape(url)
            except requests.ConnectionError:
                break
        closing.join(timeout=10)
    assert closing.successful() and "the last one read the final figures" in caplog.text
    with pytest.raises(requests.ConnectionError):
        requests.get(url, timeout=5)


def test_without_a_scrape_the_end_waits_at_most_the_linger(caplog: pytest.LogCaptureFixture) -> None:
    env = environment()
    endpoint = Endpoint(PrometheusSettings(port=free_port(), linger=0.2))
    sink = InfluxSink(env, Ctx(), None, endpoint=endpoint)  # Prometheus only: no writer
    sink.start()
    try:
        env.events.test_start.fire(environment=env)
        with caplog.at_level(logging.INFO):
            closing = gevent.spawn(sink.close)
            assert closing.join(timeout=10) is None and closing.successful()
    finally:
        env.runner.quit()
    assert sink.writer is None
    assert "no scrape read the final figures within --prometheus-linger (0.2 s)" in caplog.text


def prometheus_parser() -> Any:
    from locust.argument_parser import get_parser

    parser = get_parser(default_config_files=[])
    if "--prometheus-port" not in parser._option_string_actions:
        add_influx_arguments(parser.add_argument_group("sinks"))
    return parser


def test_options_are_off_by_default_and_a_bad_value_or_a_taken_port_is_one_line() -> None:
    parser = prometheus_parser()
    assert read_prometheus_settings(parser.parse_args([])) is None
    assert read_prometheus_settings(parser.parse_args(["--prometheus-port", "9646"])) == PrometheusSettings(9646)
    for bad in (["--prometheus-port", "70000"], ["--prometheus-port", "x"], ["--prometheus-port", "1",
                                                                             "--prometheus-linger", "-1"]):  # fmt: skip
        with pytest.raises(OptionError, match=r"^--prometheus-") as refused:
            read_prometheus_settings(parser.parse_args(bad))
        assert "\n" not in str(refused.value)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OptionError, match=f"^--prometheus-port: cannot listen on 127.0.0.1:{port}: "):
            Endpoint(PrometheusSettings(port=port))


def test_attach_starts_the_listener_for_prometheus_alone_and_binds_before_the_test() -> None:
    env = environment()
    env.parsed_options = prometheus_parser().parse_args(["--prometheus-port", str(free_port()), "--headless"])
    try:
        sink = attach(env, Ctx())
        assert sink is not None and sink.writer is None and sink.endpoint is not None
        assert requests.get(sink.endpoint.url, timeout=5).status_code == 200  # serving before any test
        assert attach(env, Ctx()) is sink
        sink.endpoint.settings = PrometheusSettings(sink.endpoint.settings.port, linger=0)
        sink.close()
    finally:
        env.runner.quit()
    plain = environment()
    plain.parsed_options = prometheus_parser().parse_args(["--headless"])
    try:
        assert attach(plain, Ctx()) is None
    finally:
        plain.runner.quit()


def test_starting_the_endpoint_never_yields_to_the_loop() -> None:
    # A worker's test may start (its spawn message handled) whenever init yields: the endpoint is bound
    # at init, and a yield there once let a test start before the listener was waiting for it.
    ran: list[int] = []
    gevent.spawn(ran.append, 1)
    endpoint = Endpoint(PrometheusSettings(port=free_port(), linger=0))
    try:
        assert ran == []
    finally:
        endpoint.server.stop()
