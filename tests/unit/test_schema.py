"""The schema: names, tags that cannot explode, and line protocol that InfluxDB parses as meant."""

from __future__ import annotations

import random
import re
import typing

import pytest
from hdrh.histogram import HdrHistogram

from mqusers.brokers import model
from mqusers.measure.book import Book, new_histogram
from mqusers.sinks import schema
from mqusers.sinks.windows import figures, tally_fields

IDENTIFIER = re.compile(r"[a-z][a-z0-9_]*")
ALLOWED_TAGS = {
    schema.RUN,
    schema.SCENARIO,
    schema.WORKER,
    schema.OPERATION,
    schema.DESTINATION,
    schema.KIND,
    schema.SOURCE,
}


def test_every_measurement_is_tagged_by_run_and_scenario_and_nothing_unbounded() -> None:
    # Every measurement defined is registered, once: a dict keyed by name would hide a duplicate name.
    defined = [value for value in vars(schema).values() if isinstance(value, schema.Measurement)]
    assert sorted(m.name for m in defined) == sorted(schema.MEASUREMENTS)
    for measurement in schema.MEASUREMENTS.values():
        assert measurement.name.startswith("mqusers_")
        assert {schema.RUN, schema.SCENARIO} <= set(measurement.tags) <= ALLOWED_TAGS
        assert measurement.fields and not set(measurement.fields) & set(measurement.tags)
        assert measurement.doc


def test_names_need_no_quoting_and_a_field_name_has_one_type_everywhere() -> None:
    # InfluxDB reserves "_"-prefixed names and "time"; lower-case identifiers need no escaping anywhere.
    types: dict[str, set[str]] = {}
    for measurement in schema.MEASUREMENTS.values():
        for name in (measurement.name, *measurement.tags, *measurement.fields):
            assert IDENTIFIER.fullmatch(name) and name != "time", name
        for name, kind in measurement.fields.items():
            types.setdefault(name, set()).add(kind)
    # A field read from several measurements (a count, the users) must not be an int in one, a float in another.
    assert {name: kinds for name, kinds in types.items() if len(kinds) > 1} == {}


def test_an_intervals_figures_fill_exactly_the_declared_latency_and_count_fields() -> None:
    # A percentile declared but not computed would be an empty graph; computed but not declared, a KeyError.
    for name, percentile in schema.PERCENTILE_FIELDS.items():
        assert name == f"p{percentile:g}".replace(".", "") and name in schema.LATENCY
    book = Book()
    for ms in (0.5, 1.0, 7.25):
        book.on_request(request_type="STOMP", name="receive /q", response_time=ms, response_length=1, exception=None)
    tally = book.tallies["receive /q"]
    assert set(figures(tally.histogram)) == set(schema.LATENCY)
    assert set(tally_fields(tally)) == set(schema.COUNTS) | set(schema.LATENCY)


def declared_types(figures: type) -> dict[str, schema.FieldType]:
    kinds: dict[type, schema.FieldType] = {int: "int", float: "float", str: "str"}
    return {name: kinds[kind] for name, kind in typing.get_type_hints(figures).items() if kind in kinds}


def test_broker_fields_are_the_models_figures_under_the_same_names_and_types() -> None:
    # A figure the model adds but the schema lacks would never be streamed; the reverse, an empty panel.
    assert declared_types(model.DestinationFigures) == schema.BROKER_DESTINATION_FIELDS
    assert declared_types(model.JvmFigures) == schema.JVM_FIELDS
    # The alarms list is the one figure that is not a number: a count and the names.
    assert typing.get_type_hints(model.BrokerFigures)["alarms"] == list[str]
    # The instance (which broker process answered) only tells the report of a restart.
    broker = {**declared_types(model.BrokerFigures), "alarms": "int", "alarm_names": "str"}
    assert broker.pop("instance") == "str"
    assert broker == schema.BROKER_FIELDS
    assert schema.BROKER.fields == {**schema.BROKER_FIELDS, **schema.JVM_FIELDS}
    assert not set(schema.BROKER_FIELDS) & set(schema.JVM_FIELDS)


def test_line_types_sorted_tags_and_millisecond_timestamp() -> None:
    tags = {schema.RUN: "r1", schema.WORKER: "w1", schema.SCENARIO: "pubsub", "operation": "receive"}
    tags[schema.DESTINATION] = "/topic/a"
    fields = {"count": 3, "p50": 0.25, "interval_s": 1.0}
    text = schema.line(schema.OPS, tags, fields, 1_700_000_000_000)
    assert text == (
        "mqusers_ops,destination=/topic/a,operation=receive,run=r1,scenario=pubsub,worker=w1 "
        "count=3i,p50=0.25,interval_s=1.0 1700000000000"
    )


def test_line_escapes_separators_and_leaves_out_empty_tags_and_non_finite_numbers() -> None:
    tags = {schema.RUN: "a b,c=d", schema.SCENARIO: "", schema.WORKER: "back\\slash"}
    text = schema.line(schema.PROCESSES, tags, {"cpu_percent": float("nan"), "users": 2}, 5)
    assert text == "mqusers_process,run=a\\ b\\,c\\=d,worker=back/slash users=2i 5"
    event = schema.line(schema.EVENTS, {schema.KIND: "phase"}, {"text": 'say "hi"\\\nnow'}, 6)
    assert event == 'mqusers_event,kind=phase text="say \\"hi\\"\\\\ now" 6'


def test_line_refuses_names_outside_the_schema() -> None:
    with pytest.raises(KeyError, match="no tag 'exception'"):
        schema.line(schema.OPS, {"exception": "boom"}, {"count": 1}, 0)
    with pytest.raises(KeyError, match="no field 'message_id'"):
        schema.line(schema.OPS, {}, {"message_id": 1}, 0)
    with pytest.raises(ValueError, match="at least one field"):
        schema.line(schema.OPS, {}, {"p50": float("inf")}, 0)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fast_figures_equal_hdrhistograms_own_methods(seed: int) -> None:
    rng = random.Random(seed)
    book = Book()
    for _ in range(rng.randint(1, 20_000)):
        ms = rng.lognormvariate(rng.uniform(-2, 3), rng.uniform(0.1, 2.0))
        book.on_request(request_type="STOMP", name="receive /q", response_time=ms, response_length=1, exception=None)
    histogram = book.tallies["receive /q"].histogram
    # Also as the master sees it: decoded from a worker's report (a truncated counts array).
    decoded = HdrHistogram.decode(histogram.encode())
    for hist in (histogram, decoded):
        got = figures(hist)
        assert got["mean"] == pytest.approx(hist.get_mean_value() / 1000.0)
        assert got["max"] == hist.get_max_value() / 1000.0
        for key, percentile in schema.PERCENTILE_FIELDS.items():
            assert got[key] == hist.get_value_at_percentile(percentile) / 1000.0


def test_figures_of_an_empty_histogram_are_absent() -> None:
    assert figures(new_histogram()) == {}
