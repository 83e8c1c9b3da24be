"""The Grafana dashboard for a Prometheus datasource, generated from :data:`mqusers.sinks.schema.PROMETHEUS`.

``python -m tools.dashboards`` writes it as ``grafana/prometheus/prometheus.json``, apart from the InfluxDB
ones (the Compose stack provisions those, with their datasource). Every metric name comes from the schema's
families (:func:`metric` refuses any other), so a renamed field fails here, not on a blank panel. Counters are
read with ``rate(...[$__rate_interval])``; percentile panels show the worst interval in each step
(``max_over_time``): interval percentiles cannot be merged, the whole run's exact ones are the summary's.
"""

from __future__ import annotations

import json
from typing import Any

from mqusers.sinks import schema as s
from tools.dashboards import Board, variable

DATASOURCE = {"type": "prometheus", "uid": "mqusers-prometheus"}
RUN = f'{s.RUN}="$run"'
DESTINATION = f'{s.DESTINATION}=~"$destination"'
WORKER = f'{s.WORKER}=~"$worker"'
RATE_WINDOW = "[$__rate_interval]"


def metric(name: str, *matchers: str) -> str:
    """``name{matchers}``; ``name`` must be a sample the endpoint exposes (a family's, counters with ``_total``)."""
    samples = {family.sample for family in s.PROMETHEUS.values()}
    if name not in samples:
        raise KeyError(f"{name} is not a Prometheus sample of mqusers.sinks.schema")
    return f"{name}{{{','.join(matchers)}}}"


def per_second(name: str, *matchers: str, by: tuple[str, ...] = ()) -> str:
    grouping = f" by ({', '.join(by)})" if by else ""
    return f"sum{grouping} (rate({metric(name, *matchers)}{RATE_WINDOW}))"


def operation(name: str) -> str:
    return f'{s.OPERATION}="{name}"'


class PromBoard(Board):
    """A :class:`Board` whose targets are PromQL with a legend; no annotations (events are InfluxDB's)."""

    datasource = DATASOURCE

    def target(self, ref: str, query: str, kind: str) -> dict[str, Any]:
        expression, _, legend = query.partition(" @legend ")
        target: dict[str, Any] = {"refId": ref, "datasource": self.datasource, "expr": expression}
        target |= {"legendFormat": legend} if legend else {}
        return target | ({"format": "table", "instant": True} if kind == "table" else {"range": True})

    def annotations(self, events_where: str) -> list[dict[str, Any]]:
        return []


def legend(query: str, text: str) -> str:
    """A query with its legend (Grafana's ``{{label}}`` templates), split again by :meth:`PromBoard.target`."""
    return f"{query} @legend {text}"


def variables() -> list[dict[str, Any]]:
    run = variable(s.RUN, f"label_values({metric('mqusers_run_users')}, {s.RUN})", multi=False)
    sent = metric("mqusers_destination_sent_total", RUN)
    destination = variable(s.DESTINATION, f"label_values({sent}, {s.DESTINATION})", multi=True)
    cpu = metric("mqusers_process_cpu_percent", RUN)
    worker = variable(s.WORKER, f"label_values({cpu}, {s.WORKER})", multi=True)
    for found in (run, destination, worker):
        found["datasource"] = DATASOURCE
    return [run, destination, worker]


def prometheus() -> dict[str, Any]:
    board = PromBoard(
        "mqusers-prometheus",
        "mqusers: overview (Prometheus)",
        "Throughput, latency, errors, backlog, the audit, generator health and the broker, scraped from the "
        "master's /metrics (merged) and workers' (their own).",
    )
    flow = (RUN, DESTINATION)
    sent = legend(per_second("mqusers_merged_count_total", *flow, operation("send")), "sent")
    received = legend(per_second("mqusers_merged_count_total", *flow, operation("receive")), "received")
    board.panel("timeseries", "Messages/s: sent vs received", [sent, received])
    worst = [
        legend(f"max(max_over_time({metric(f'mqusers_merged_{key}_ms', *flow, operation('receive'))}{RATE_WINDOW}))",
               alias)
        for key, alias in (("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p999", "p99.9"), ("max", "max"))
    ]  # fmt: skip
    board.panel("timeseries", "Send-to-receive latency, worst interval (ms)", worst, unit="ms")
    errors = legend(per_second("mqusers_merged_errors_total", RUN, by=(s.OPERATION,)), "{{operation}}")
    board.panel("timeseries", "Errors/s by operation", [errors])
    backlog = legend(metric("mqusers_destination_backlog", *flow), "{{destination}}")
    board.panel("timeseries", "Backlog: expected - received", [backlog])
    audit = [legend(f"sum({metric(f'mqusers_audit_{name}', *flow)})", name) for name in s.AUDIT_FIELDS]
    board.panel("timeseries", "Lost, duplicated, in flight, aborted, expired", audit, width=8)
    users = [legend(metric("mqusers_run_users", RUN), "users"), legend(metric("mqusers_run_workers", RUN), "workers")]
    board.panel("timeseries", "Users and workers", users, width=8)
    own = legend(per_second("mqusers_ops_count_total", RUN, WORKER, by=(s.WORKER, s.OPERATION)),
                 "{{worker}} {{operation}}")  # fmt: skip
    board.panel("timeseries", "Messages/s per worker and operation (workers' own endpoints)", [own], width=8)
    cpu = legend(metric("mqusers_process_cpu_percent", RUN, WORKER), "{{worker}}")
    board.panel("timeseries", "Generator CPU per process", [cpu], unit="percent", width=8)
    lag = legend(metric("mqusers_process_loop_lag_max_ms", RUN, WORKER), "{{worker}}")
    board.panel("timeseries", "gevent loop lag, worst per interval (ms)", [lag], unit="ms", width=8)
    late = legend(metric("mqusers_run_late_intervals", RUN), "late intervals")
    board.panel("timeseries", "Worker intervals too late to merge", [late], width=8)
    summary = [
        legend(metric(f"mqusers_summary_{field}", RUN), field)
        for field in ("count", "rate", "errors", "p50_ms", "p99_ms", "p999_ms", "max_ms")
    ]
    board.panel("table", "Whole run, exact (set at the end of the run)", summary, width=24)
    board.row("Broker")
    depth = legend(metric("mqusers_broker_destination_depth", *flow), "{{source}} {{destination}}")
    board.panel("timeseries", "Broker depth vs mqusers backlog", [depth, backlog])
    enqueued = legend(per_second("mqusers_broker_destination_enqueued_total", *flow, by=(s.DESTINATION,)),
                      "broker enqueued/s {{destination}}")  # fmt: skip
    board.panel("timeseries", "Broker enqueued/s vs mqusers sent/s", [enqueued, sent])
    usage = [legend(metric(f"mqusers_broker_{name}_percent", RUN), f"{name} %") for name in ("memory", "store", "temp")]
    board.panel("timeseries", "Broker memory / store / temp usage", usage, unit="percent")
    connections = legend(metric("mqusers_broker_connections", RUN), "{{source}}")
    board.panel("timeseries", "Broker connections", [connections])
    return board.render(variables(), "")


def render_all() -> dict[str, str]:
    """File name -> JSON text, exactly as committed."""
    return {"prometheus.json": json.dumps(prometheus(), indent=2, sort_keys=True) + "\n"}
