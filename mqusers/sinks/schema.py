"""Every measurement, tag and field name mqusers writes to a time-series store, and their encoding.

This module is the one source of truth: the InfluxDB listener only writes points through
:func:`line`, which refuses any name not declared here, and the Grafana dashboards are generated
from these constants (the repository's ``tools/dashboards.py``) and checked against them by the tests.

Tags are low-cardinality by construction: run id, worker (Locust's unique ``client_id``, or
``local`` / ``master``), operation, destination, scenario (locustfile stem), event kind and a
broker-metrics source (``activemq``, ``rabbitmq``, ``artemis``). Never exception text, message ids or anything
else that grows per message.

Latency fields are milliseconds (float, microsecond resolution); counts are integers. The
timestamp of an interval point is the start of its interval, in milliseconds since the epoch; a
broker point's is the time its broker-metrics sample was taken.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, NamedTuple

FieldType = Literal["int", "float", "str"]
FieldValue = int | float | str

# ------------------------------------------------------------------------------------------ tags

RUN = "run"
SCENARIO = "scenario"
WORKER = "worker"
OPERATION = "operation"
DESTINATION = "destination"
KIND = "kind"
#: The broker-metrics source that sampled a broker point (:attr:`mqusers.brokers.model.BrokerSample.source`).
SOURCE = "source"

# ---------------------------------------------------------------------------------------- fields

#: Per-operation counters of one interval (or one whole run, in the summary).
COUNTS: dict[str, FieldType] = {"count": "int", "errors": "int", "bytes": "int", "negative": "int"}
#: Latency of the successful samples, from the interval's HdrHistogram, in milliseconds.
LATENCY: dict[str, FieldType] = {
    "mean": "float",
    "p50": "float",
    "p90": "float",
    "p99": "float",
    "p999": "float",
    "max": "float",
}
#: field name -> percentile, for the percentile fields of :data:`LATENCY`.
PERCENTILE_FIELDS: dict[str, float] = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p999": 99.9}
#: What the audit (loss and duplicate detection) reports per destination, as running totals.
#: ``aborted``: messages of aborted transactions (never to arrive); ``aborted_delivered``: those that did;
#: ``not_selected``: what no selector takes; ``selector_violations``: deliveries a selector does not take;
#: ``expired``: not delivered and past their time-to-live; ``delivered_expired``: delivered after it;
#: ``group_violations``: message groups two consumers had at once; ``nacks``, ``redelivered``,
#: ``dead_lettered``: NACKed deliveries, redeliveries received, NACKed never to come back.
AUDIT_FIELDS: dict[str, FieldType] = {"lost": "int", "duplicated": "int", "in_flight": "int", "aborted": "int",
                                      "aborted_delivered": "int", "not_selected": "int",
                                      "selector_violations": "int", "expired": "int",
                                      "delivered_expired": "int", "group_violations": "int", "nacks": "int",
                                      "redelivered": "int", "dead_lettered": "int"}  # fmt: skip

#: The broker as a whole (:class:`mqusers.brokers.model.BrokerFigures`), under the model's names; its
#: ``alarms`` list becomes a count and the names, sorted and comma-separated ("" when there are none);
#: its ``instance`` (which process answered) is for the report's restart check, not a figure to chart.
BROKER_FIELDS: dict[str, FieldType] = {
    "memory_percent": "float",
    "store_percent": "float",
    "temp_percent": "float",
    "disk_percent": "float",
    "connections": "int",
    "memory_bytes": "int",
    "store_bytes": "int",
    "fd_used": "int",
    "fd_total": "int",
    "alarms": "int",
    "alarm_names": "str",
}
#: The broker's JVM (:class:`mqusers.brokers.model.JvmFigures`), under the model's names.
JVM_FIELDS: dict[str, FieldType] = {
    "heap_used_mb": "float",
    "heap_committed_mb": "float",
    "gc_count": "int",
    "gc_seconds": "float",
    "threads": "int",
    "cpu_percent": "float",
}
#: One destination as the broker sees it (:class:`mqusers.brokers.model.DestinationFigures`): counters
#: cumulative since the broker started (a rate is their derivative), gauges as sampled.
BROKER_DESTINATION_FIELDS: dict[str, FieldType] = {
    "enqueued": "int",
    "dequeued": "int",
    "dispatched": "int",
    "expired": "int",
    "killed": "int",
    "depth": "int",
    "unacked": "int",
    "consumers": "int",
    "producers": "int",
    "memory_percent": "float",
    "memory_bytes": "int",
    "store_bytes": "int",
    "paging": "int",
    "pages": "int",
    "publish_rate": "float",
    "deliver_rate": "float",
    "ack_rate": "float",
}

EVENT_KINDS = ("test_start", "spawning_complete", "test_stop", "cpu_warning", "phase", "fault", "outage")


@dataclass(frozen=True)
class Measurement:
    """One measurement: its tags and typed fields. ``doc`` says who writes it and when."""

    name: str
    tags: tuple[str, ...]
    fields: Mapping[str, FieldType]
    doc: str


OPS = Measurement(
    "mqusers_ops",
    (RUN, SCENARIO, WORKER, OPERATION, DESTINATION),
    {**COUNTS, **LATENCY, "interval_s": "float"},
    "every process with Users, per interval x operation x destination: that process's own figures",
)
MERGED = Measurement(
    "mqusers_merged",
    (RUN, SCENARIO, OPERATION, DESTINATION),
    {**COUNTS, **LATENCY, "interval_s": "float", "sources": "int"},
    "master (or local runner), per interval x operation x destination: all workers' histograms merged",
)
DESTINATIONS = Measurement(
    "mqusers_destination",
    (RUN, SCENARIO, DESTINATION),
    {"sent": "int", "received": "int", "subscriptions": "int", "backlog": "int", "errors": "int"},
    "master (or local), per interval x destination: running totals since test start; backlog = expected - "
    "received, expected = sent (queue) or sent x successful subscriptions (topic)",
)
RUNS = Measurement(
    "mqusers_run",
    (RUN, SCENARIO),
    {"users": "int", "workers": "int", "cpu_max_percent": "float", "late_intervals": "int"},
    "master (or local), per interval: users, connected workers, the busiest worker's CPU",
)
PROCESSES = Measurement(
    "mqusers_process",
    (RUN, SCENARIO, WORKER),
    {
        "users": "int",
        "cpu_percent": "float",
        "memory_mb": "float",
        "loop_lag_max_ms": "float",
        "loop_lag_mean_ms": "float",
        "points_buffered": "int",
        "points_dropped": "int",
    },
    "every process, per interval: its own Users, CPU, memory, gevent loop lag and listener buffer",
)
AUDIT = Measurement(
    "mqusers_audit",
    (RUN, SCENARIO, DESTINATION),
    AUDIT_FIELDS,
    "master (or local), per interval x destination, when an audit source is attached: running totals",
)
SUMMARY = Measurement(
    "mqusers_summary",
    (RUN, SCENARIO, OPERATION, DESTINATION),
    {**COUNTS, **LATENCY, "rate": "float", "mbit": "float", "duration_s": "float"},
    "master (or local), once at test stop, per operation x destination: exact whole-run figures",
)
EVENTS = Measurement(
    "mqusers_event",
    (RUN, SCENARIO, WORKER, KIND),
    {"text": "str"},
    "annotations: test start/stop, spawning complete, phase changes, faults (master or local), CPU warnings and "
    "connection outages (the process that saw them, at the outage's start)",
)

BROKER = Measurement(
    "mqusers_broker",
    (RUN, SCENARIO, SOURCE),
    {**BROKER_FIELDS, **JVM_FIELDS},
    "master (or local), once per broker-metrics sample, at the sample's time: the broker's own figures and, when "
    "a local broker PID is given or the broker is Artemis, its JVM's; only the figures the source reports "
    "(absent, never zero)",
)
BROKER_DESTINATIONS = Measurement(
    "mqusers_broker_destination",
    (RUN, SCENARIO, SOURCE, DESTINATION),
    BROKER_DESTINATION_FIELDS,
    "master (or local), once per broker-metrics sample x destination the broker knows, at the sample's time: "
    "the broker's counters (cumulative since it started) and gauges; only the figures the source reports",
)

MEASUREMENTS: dict[str, Measurement] = {
    m.name: m for m in (OPS, MERGED, DESTINATIONS, RUNS, PROCESSES, AUDIT, SUMMARY, EVENTS, BROKER, BROKER_DESTINATIONS)
}

# ---------------------------------------------------------------------------------- Prometheus

#: The interval measurements: each point's counts add to a Prometheus counter, and the interval's rate is a gauge.
INTERVAL_MEASUREMENTS = (OPS.name, MERGED.name)
#: Fields that are running totals already (since test start, or since the broker started): counters at their
#: last value. Every other number is a gauge at its last value (the audit's totals too: in flight goes down).
RUNNING_TOTALS: dict[str, tuple[str, ...]] = {
    DESTINATIONS.name: ("sent", "received", "errors"),
    BROKER_DESTINATIONS.name: ("enqueued", "dequeued", "dispatched", "expired", "killed"),
    BROKER.name: ("gc_count", "gc_seconds"),
}
#: Fields whose name would break Prometheus' conventions (a gauge ending in ``_total``), renamed there only.
PROMETHEUS_RENAMES = {"fd_total": "fd_limit"}
#: An interval measurement's derived gauge: the last interval's ``count`` per second of its ``interval_s``.
RATE = "rate"


@dataclass(frozen=True)
class Family:
    """One Prometheus metric family: a measurement's numeric field, labelled by the measurement's tags.

    Named ``<measurement>_<field>`` (:data:`PROMETHEUS_RENAMES` aside), latency fields with ``_ms`` (the
    schema's milliseconds, the report's figures); a counter's samples end in ``_total``. Text (events,
    alarm names) has no family.
    """

    name: str
    kind: Literal["counter", "gauge"]
    measurement: Measurement
    field: str
    summed: bool  # a counter each point adds to (an interval's count); else the last point's value
    per_second: bool = False  # the field divided by the point's interval_s (an interval's rate)

    @property
    def sample(self) -> str:
        return self.name + "_total" if self.kind == "counter" else self.name


def _families() -> dict[str, Family]:
    found: dict[str, Family] = {}
    for m in MEASUREMENTS.values():
        interval = m.name in INTERVAL_MEASUREMENTS
        for name, kind in m.fields.items():
            if kind == "str":
                continue
            summed = interval and name in COUNTS
            counter = summed or name in RUNNING_TOTALS.get(m.name, ())
            family = f"{m.name}_{PROMETHEUS_RENAMES.get(name, name)}{'_ms' if name in LATENCY else ''}"
            found[family] = Family(family, "counter" if counter else "gauge", m, name, summed)
        if interval:
            found[f"{m.name}_{RATE}"] = Family(f"{m.name}_{RATE}", "gauge", m, "count", False, per_second=True)
    return found


#: Every Prometheus family the endpoint can expose, by name (the one place their names come from).
PROMETHEUS: dict[str, Family] = _families()

# ------------------------------------------------------------------------------ line protocol

# A backslash only escapes in front of a special character, so one at the end of a tag value would
# swallow the separator after it: tags carry none (destinations and URLs cannot hold one anyway).
_MEASUREMENT_ESCAPES = str.maketrans({",": "\\,", " ": "\\ ", "\n": " ", "\\": "/"})
_TAG_ESCAPES = str.maketrans({",": "\\,", "=": "\\=", " ": "\\ ", "\n": " ", "\\": "/"})
_STRING_ESCAPES = str.maketrans({'"': '\\"', "\\": "\\\\", "\n": " "})


def _field(name: str, kind: FieldType, value: FieldValue) -> str:
    if kind == "str":
        return f'{name}="{str(value).translate(_STRING_ESCAPES)}"'
    return f"{name}={int(value)}i" if kind == "int" else f"{name}={float(value)!r}"


class Point(NamedTuple):
    """One validated point: what the listener's outputs take (InfluxDB's writer encodes it with :meth:`line`,
    the Prometheus endpoint reads its fields), so both show the same figures by construction."""

    measurement: Measurement
    tags: Mapping[str, str]
    fields: Mapping[str, FieldValue]
    ts_ms: int

    def line(self) -> str:
        """The point in InfluxDB line protocol (millisecond precision)."""
        encoded_tags = "".join(
            f",{key}={self.tags[key].translate(_TAG_ESCAPES)}" for key in sorted(self.tags)
        )  # sorted: the order InfluxDB stores series keys in, cheapest for it to parse
        fields = ",".join(_field(name, self.measurement.fields[name], value) for name, value in self.fields.items())
        return f"{self.measurement.name.translate(_MEASUREMENT_ESCAPES)}{encoded_tags} {fields} {self.ts_ms}"


def point(measurement: Measurement, tags: Mapping[str, str], fields: Mapping[str, FieldValue], ts_ms: int) -> Point:
    """A point of ``measurement``; raises ``KeyError`` for a tag or field it does not declare.

    So nothing outside the schema can reach a store. Empty tag values are left out (line protocol
    forbids them), and so are non-finite numbers (line protocol has no NaN: absent is the honest form).
    """
    for tag in tags:
        if tag not in measurement.tags:
            raise KeyError(f"{measurement.name} has no tag {tag!r}")
    kept: dict[str, FieldValue] = {}
    for name, value in fields.items():
        kind = measurement.fields.get(name)
        if kind is None:
            raise KeyError(f"{measurement.name} has no field {name!r}")
        if kind != "float" or math.isfinite(float(value)):
            kept[name] = value
    if not kept:
        raise ValueError(f"{measurement.name}: a point needs at least one field")
    return Point(measurement, {key: value for key, value in tags.items() if value}, kept, ts_ms)


def line(measurement: Measurement, tags: Mapping[str, str], fields: Mapping[str, FieldValue], ts_ms: int) -> str:
    """One point in InfluxDB line protocol: :func:`point`'s checks, then :meth:`Point.line`."""
    return point(measurement, tags, fields, ts_ms).line()
