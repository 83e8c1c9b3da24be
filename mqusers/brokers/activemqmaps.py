"""ActiveMQ's statistics answers read: a MapMessage's JSON to typed values, and those to broker and destination figures.

The statistics plugin answers each request with a MapMessage, which the subscription's
``transformation:jms-map-json`` turns into JSON; :mod:`mqusers.brokers.activemq` asks and waits.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from mqusers.brokers.model import BrokerFigures, DestinationFigures

MapValue = int | float | str | bool
_WHOLE = frozenset({"long", "int", "short", "byte"})
_REAL = frozenset({"double", "float"})


def parse_map_json(body: bytes | str) -> dict[str, MapValue]:
    """A MapMessage as ActiveMQ's ``jms-map-json`` renders it (XStream through Jettison).

    ``{"map": {"entry": [{"string": "size", "long": 3}, {"string": ["brokerName", "b1"]}]}}``:
    each entry holds its key under ``string`` and its value under its Java type; a string value
    shares the ``string`` field with its key, as a two-item list. Jettison writes a lone entry as an
    object instead of a list, and an empty map as ``{"map": ""}``.
    """
    try:
        document = json.loads(body)
    except ValueError as error:
        raise ValueError(f"the statistics reply is not JSON ({error})") from None
    entries: Any = document.get("map") if isinstance(document, dict) else None
    if not entries:
        return {}
    if not isinstance(entries, dict):
        text = body if isinstance(body, str) else body.decode("utf-8", "replace")
        raise ValueError(f"the statistics reply is not a map: {text[:120]}")
    listed = entries.get("entry", [])
    result: dict[str, MapValue] = {}
    for entry in listed if isinstance(listed, list) else [listed]:
        key, value = _map_entry(entry)
        result[key] = value
    return result


def _map_entry(entry: Any) -> tuple[str, MapValue]:
    if not isinstance(entry, dict) or "string" not in entry:
        raise ValueError(f"unexpected map entry in the statistics reply: {entry!r}")
    named = entry["string"]
    if isinstance(named, list):  # a string value: [key, value] (a null or empty value may be missing)
        return str(named[0]), "" if len(named) < 2 or named[1] is None else str(named[1])
    for java_type, raw in entry.items():
        if java_type in _WHOLE:
            return str(named), int(raw)
        if java_type in _REAL:
            return str(named), float(raw)
        if java_type == "boolean":
            return str(named), raw in (True, "true")
    return str(named), ""


def _numbers(stats: Mapping[str, MapValue], table: tuple[tuple[str, str], ...], kind: type) -> dict[str, Any]:
    """``{field: kind(stats[key])}`` for each (field, key) of ``table`` whose value is a number."""
    return {
        field: kind(stats[key])
        for field, key in table
        if isinstance(stats.get(key), int | float) and not isinstance(stats.get(key), bool)
    }


#: (BrokerFigures field, the plugin's key)
_BROKER_PERCENTS = (("memory_percent", "memoryPercentUsage"), ("store_percent", "storePercentUsage"),
                    ("temp_percent", "tempPercentUsage"))  # fmt: skip
_BROKER_BYTES = (("memory_bytes", "memoryUsage"), ("store_bytes", "storeUsage"))
#: (DestinationFigures field, the plugin's key)
_DESTINATION_COUNTS = (
    ("enqueued", "enqueueCount"), ("dequeued", "dequeueCount"), ("dispatched", "dispatchCount"),
    ("expired", "expiredCount"), ("depth", "size"), ("unacked", "inflightCount"),
    ("consumers", "consumerCount"), ("producers", "producerCount"),
)  # fmt: skip


def broker_figures(stats: Mapping[str, MapValue]) -> BrokerFigures:
    """The plugin's ``ActiveMQ.Statistics.Broker`` map as :class:`BrokerFigures`.

    The plugin reports no connection count, so ``connections`` is left out. ``memory_bytes`` is
    the message memory counted against ``<memoryUsage>`` (what ``memory_percent`` is a percent of),
    not the JVM's heap (see :mod:`mqusers.brokers.jvm`).
    """
    figures = {**_numbers(stats, _BROKER_PERCENTS, float), **_numbers(stats, _BROKER_BYTES, int)}
    if isinstance(stats.get("brokerId"), str):
        figures["instance"] = stats["brokerId"]  # ID:<host>-<port>-<start ms>-...: new at every start
    return cast(BrokerFigures, figures)


def destination_figures(stats: Mapping[str, MapValue]) -> DestinationFigures:
    """One ``ActiveMQ.Statistics.Destination.<name>`` map as :class:`DestinationFigures`.

    enqueueCount counts a topic's publish once; dispatchCount and dequeueCount count per
    subscriber; size (``depth``) includes inflightCount (``unacked``: dispatched, not acknowledged).
    """
    figures = {
        **_numbers(stats, _DESTINATION_COUNTS, int),
        **_numbers(stats, (("memory_percent", "memoryPercentUsage"),), float),
    }
    return cast(DestinationFigures, figures)
