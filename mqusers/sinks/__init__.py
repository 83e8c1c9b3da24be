"""Where live figures go while a test runs: the listener, its outputs (InfluxDB, a Prometheus endpoint), its schema.

``schema`` names every measurement, tag and field, and every Prometheus family; ``influx`` is the
listener's entry (:func:`attach` from mqusers' init listener, :func:`register` from a locustfile);
the repository's ``tools/dashboards.py`` generates the Grafana dashboards from the schema. Nothing
here imports influxdb-client or prometheus-client until an output starts, nor the listener itself
(``InfluxSink``, ``RunInfo``, ``AuditSource`` load it on first use): a run that streams nowhere pays none
of it at start-up.

Modules: ``influx.py``, ``listener.py``, ``lines.py``, ``points.py``, ``windows.py``, ``writer.py``,
``prometheus.py``, ``sinkoptions.py``, ``schema.py`` (names every metric, InfluxDB's and Prometheus').

What they do: live points to InfluxDB through a bounded writer and/or to a Prometheus ``/metrics`` endpoint
(``listener.py`` says when and hands every point to both outputs, ``lines.py`` what each interval's points
are, ``points.py`` builds them, ``schema.Point.line`` is their line protocol, ``prometheus.py`` their metric
families); the broker sampler's samples too (master or local runner: the sink listens on
``RunContext.broker_listeners``).
"""

from __future__ import annotations

from typing import Any

from mqusers.sinks import influx
from mqusers.sinks.influx import attach, register
from mqusers.sinks.sinkoptions import (
    InfluxSettings,
    PrometheusSettings,
    add_influx_arguments,
    read_influx_settings,
    read_prometheus_settings,
)

__all__ = [
    "AuditSource",
    "InfluxSettings",
    "InfluxSink",
    "PrometheusSettings",
    "RunInfo",
    "add_influx_arguments",
    "attach",
    "read_influx_settings",
    "read_prometheus_settings",
    "register",
]


def __getattr__(name: str) -> Any:
    """``InfluxSink``, ``RunInfo`` and ``AuditSource`` load the listener on first use (see the docstring)."""
    return getattr(influx, name)
