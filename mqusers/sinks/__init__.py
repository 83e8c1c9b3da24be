"""Where live figures go while a test runs: the InfluxDB listener and its schema.

``schema`` names every measurement, tag and field; ``influx`` is the listener (:func:`attach`
from mqusers' init listener, :func:`register` from a locustfile); the repository's
``tools/dashboards.py`` generates the Grafana dashboards from the schema. Nothing here imports
influxdb-client until a listener starts.
"""

from __future__ import annotations

from mqusers.sinks.influx import AuditSource, InfluxSink, RunInfo, attach, register
from mqusers.sinks.settings import InfluxSettings, add_influx_arguments, read_influx_settings

__all__ = [
    "AuditSource",
    "InfluxSettings",
    "InfluxSink",
    "RunInfo",
    "add_influx_arguments",
    "attach",
    "read_influx_settings",
    "register",
]
