"""Schema points from tallies and totals: pure functions from figures to :class:`~mqusers.sinks.schema.Point` lists.

``tags`` is always the run-wide base (run id, scenario); each builder adds its own tags.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from mqusers.brokers.model import BrokerSample
from mqusers.measure.book import Tally
from mqusers.measure.totals import destination_rows
from mqusers.sinks import schema
from mqusers.sinks.windows import RunTotals, split_name, tally_fields

#: Operations that carry the message flow: written as zero when silent, so a stall shows as 0, not a gap.
FLOW_OPERATIONS = ("send", "receive", "receipt", "request")


def remember_flow(seen: set[str], names: Iterable[str]) -> None:
    seen.update(name for name in names if split_name(name)[0] in FLOW_OPERATIONS)


def interval_fields(tallies: Mapping[str, Tally]) -> dict[str, dict[str, schema.FieldValue]]:
    """Counts and latency figures per event name: computed once, written as one or two series."""
    return {name: dict(tally_fields(tally)) for name, tally in tallies.items()}


def ops_points(
    measurement: schema.Measurement,
    tags: Mapping[str, str],
    ts: int,
    duration_s: float,
    figures: Mapping[str, Mapping[str, schema.FieldValue]],
    seen: set[str],
    extra: Mapping[str, schema.FieldValue],
) -> list[schema.Point]:
    """One point per event name of the interval, plus a zero point per flow operation seen before."""
    remember_flow(seen, figures)
    found: list[schema.Point] = []
    for name in sorted(set(figures) | seen):
        operation, destination = split_name(name)
        fields: dict[str, schema.FieldValue] = {"count": 0, "errors": 0, "bytes": 0, **figures.get(name, {})}
        fields.update(extra, interval_s=duration_s)
        point_tags = {**tags, schema.OPERATION: operation, schema.DESTINATION: destination}
        found.append(schema.point(measurement, point_tags, fields, ts))
    return found


def destination_points(tags: Mapping[str, str], totals: RunTotals, ts: int) -> list[schema.Point]:
    """Per destination with sends or receives: totals and the backlog still expected to arrive."""
    found: list[schema.Point] = []
    for row in destination_rows(totals.tallies):
        fields: dict[str, schema.FieldValue] = {"sent": row.sent, "received": row.received, "errors": row.errors}
        fields.update(subscriptions=row.subscriptions, backlog=row.backlog)
        found.append(schema.point(schema.DESTINATIONS, {**tags, schema.DESTINATION: row.destination}, fields, ts))
    return found


def audit_points(tags: Mapping[str, str], audit: Mapping[str, Mapping[str, float]], ts: int) -> list[schema.Point]:
    return [
        schema.point(schema.AUDIT, {**tags, schema.DESTINATION: destination}, dict(fields), ts)
        for destination, fields in sorted(audit.items())
    ]


def summary_points(tags: Mapping[str, str], totals: RunTotals, ts: int, duration_s: float) -> list[schema.Point]:
    """Exact whole-run figures per operation and destination, from the run's merged histograms."""
    found: list[schema.Point] = []
    for name, tally in totals.summary():
        operation, destination = split_name(name)
        fields: dict[str, schema.FieldValue] = {**tally_fields(tally), "duration_s": duration_s}
        fields.update(rate=tally.count / duration_s, mbit=tally.bytes * 8 / duration_s / 1e6)
        point_tags = {**tags, schema.OPERATION: operation, schema.DESTINATION: destination}
        found.append(schema.point(schema.SUMMARY, point_tags, fields, ts))
    return found


def event_point(tags: Mapping[str, str], worker: str, kind: str, text: str, ts: int) -> schema.Point:
    return schema.point(schema.EVENTS, {**tags, schema.WORKER: worker, schema.KIND: kind}, {"text": text}, ts)


def broker_points(tags: Mapping[str, str], sample: BrokerSample, ts: int) -> list[schema.Point]:
    """A broker-metrics sample: one ``mqusers_broker`` point (broker and JVM) and one point per destination.

    Only the figures the source reported are written ("not reported" is not zero); a destination the
    broker reported nothing for, and a sample with no broker-wide figure, write no point.
    """
    source = {**tags, schema.SOURCE: sample["source"]}
    broker = _reported(sample["broker"], schema.BROKER_FIELDS)
    alarms = sample["broker"].get("alarms")
    if alarms is not None:
        broker.update(alarms=len(alarms), alarm_names=",".join(sorted(alarms)))
    broker.update(_reported(sample["jvm"] or {}, schema.JVM_FIELDS))
    found = [schema.point(schema.BROKER, source, broker, ts)] if broker else []
    for destination, figures in sorted(sample["destinations"].items()):
        fields = _reported(figures, schema.BROKER_DESTINATION_FIELDS)
        if fields:
            point_tags = {**source, schema.DESTINATION: destination}
            found.append(schema.point(schema.BROKER_DESTINATIONS, point_tags, fields, ts))
    return found


def _reported(figures: Mapping[str, object], declared: Mapping[str, schema.FieldType]) -> dict[str, schema.FieldValue]:
    """The declared numeric figures present and finite (absent is the honest form: :func:`schema.point`)."""
    return {
        name: value for name in declared if isinstance(value := figures.get(name), int | float) and math.isfinite(value)
    }
