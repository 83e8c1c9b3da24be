"""The Grafana dashboards, generated from :mod:`mqusers.sinks.schema`: ``python -m tools.dashboards``.

Writes the repository's ``grafana/dashboards/{overview,drilldown,comparison,broker}.json`` and, for a
Prometheus datasource, ``grafana/prometheus/prometheus.json`` (``tools/promdashboard.py``; a folder of its
own, as the Compose stack provisions InfluxDB only) (committed; a test checks that regenerating changes
nothing). Every query is raw InfluxQL, so the same dashboards work on InfluxDB 1.x, 2.x (DBRP / v1
compatibility) and 3.x. Every selected value is aliased (``AS "p99"``): the alias is the column a panel shows,
and the column the tests expect back from a real InfluxDB.

Rates divide a bucket's summed counts by its length (``$__interval_ms``), so they are exact for any zoom at or
above the listener's interval (the datasource's minimum interval, 1 s by default). Percentile panels show the
worst interval in each bucket: interval percentiles cannot be merged.

Broker counters (``enqueued``, ``gc_count``...) are cumulative since the broker started: their rate is
``non_negative_derivative(last(...), 1s)``, per second whatever the bucket, a broker restart a gap, not a dip.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mqusers.sinks import schema as s

DATASOURCE = {"type": "influxdb", "uid": "mqusers-influxql"}
SCHEMA_VERSION = 39
OUTPUT = Path(__file__).resolve().parents[1] / "grafana" / "dashboards"
RUN = f"\"{s.RUN}\" = '$run'"
RUNS = f'"{s.RUN}" =~ /^$run$/'
DESTINATION = f'"{s.DESTINATION}" =~ /^$destination$/'
WORKER = f'"{s.WORKER}" =~ /^$worker$/'
PER_S = "* 1000 / $__interval_ms"  # a bucket's sum -> per second
SEND, RECEIVE = "\"operation\" = 'send'", "\"operation\" = 'receive'"
CONNECTIONS = '"operation" =~ /^(connect|disconnect)$/'
TRANSACTIONS = '"operation" =~ /^(commit|abort)$/'


def select(
    measurement: s.Measurement,
    columns: list[tuple[str, str]],
    where: list[str],
    *,
    by_time: bool = True,
    by: tuple[str, ...] = (),
) -> str:
    """``SELECT expr AS "alias", ... FROM m WHERE ... AND $timeFilter GROUP BY ...``."""
    fields = ", ".join(f'{expression} AS "{alias}"' for expression, alias in columns)
    groups = (["time($__interval)"] if by_time else []) + [f'"{tag}"' for tag in by]
    query = f'SELECT {fields} FROM "{measurement.name}" WHERE {" AND ".join([*where, "$timeFilter"])}'
    if groups:
        query += f" GROUP BY {', '.join(groups)}"
    return query + (" fill(none)" if by_time else "")


def f(function: str, field: str, tail: str = "") -> str:
    return f'{function}("{field}"){" " + tail if tail else ""}'


def rate(field: str) -> str:
    """A broker counter's increase per second (a counter reset, i.e. a broker restart, is left out)."""
    return f'non_negative_derivative(last("{field}"), 1s)'


def latency(function: str = "max") -> list[tuple[str, str]]:
    return [(f(function, key), alias) for key, alias in (("p50", "p50"), ("p90", "p90"), ("p99", "p99"))] + [
        (f(function, "p999"), "p99.9"),
        (f(function, "max"), "max"),
    ]


class Board:
    """Panels laid out left to right, 24 columns wide, in the order added; InfluxQL targets (see :meth:`target`)."""

    datasource: dict[str, str] = DATASOURCE

    def __init__(self, uid: str, title: str, description: str):
        self.uid, self.title, self.description = uid, title, description
        self.panels: list[dict[str, Any]] = []
        self._x = self._y = self._row_height = 0

    def row(self, title: str) -> None:
        """A row header across the board; the panels added after it are in that row."""
        self._x, self._y = 0, self._y + self._row_height
        grid = {"x": 0, "y": self._y, "w": 24, "h": 1}
        self.panels.append(
            {
                "id": len(self.panels) + 1,
                "type": "row",
                "title": title,
                "collapsed": False,
                "gridPos": grid,
                "panels": [],
            }
        )
        self._y, self._row_height = self._y + 1, 0

    def panel(
        self, kind: str, title: str, queries: list[str], *, unit: str = "short", width: int = 12, **extra: Any
    ) -> None:
        height = 8 if kind != "stat" else 4
        if self._x + width > 24:
            self._x, self._y = 0, self._y + self._row_height
            self._row_height = 0
        panel: dict[str, Any] = {
            "id": len(self.panels) + 1,
            "type": kind,
            "title": title,
            "datasource": self.datasource,
            "gridPos": {"x": self._x, "y": self._y, "w": width, "h": height},
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "targets": [self.target(chr(ord("A") + index), query, kind) for index, query in enumerate(queries)],
            **extra,
        }
        if kind == "timeseries":
            panel["options"] = {"legend": {"displayMode": "table", "placement": "bottom", "calcs": ["mean", "max"]}}
            panel["interval"] = "1s"
        self.panels.append(panel)
        self._x += width
        self._row_height = max(self._row_height, height)

    def target(self, ref: str, query: str, kind: str) -> dict[str, Any]:
        return {
            "refId": ref,
            "datasource": self.datasource,
            "rawQuery": True,
            "query": query,
            "resultFormat": "table" if kind == "table" else "time_series",
        }

    def annotations(self, events_where: str) -> list[dict[str, Any]]:
        """The test's events (start, stop, faults, outages) marked on every panel."""
        text = f'SELECT "text" AS "text" FROM "{s.EVENTS.name}" WHERE {events_where} AND $timeFilter'
        return [
            {
                "name": "mqusers events",
                "datasource": self.datasource,
                "enable": True,
                "iconColor": "orange",
                "query": text,
                "textColumn": "text",
                "tagsColumn": f"{s.KIND},{s.WORKER}",
            }
        ]

    def render(self, variables: list[dict[str, Any]], events_where: str) -> dict[str, Any]:
        return {
            "uid": self.uid,
            "title": self.title,
            "description": self.description,
            "tags": ["mqusers", "stomp", "locust"],
            "schemaVersion": SCHEMA_VERSION,
            "version": 1,
            "editable": False,
            "graphTooltip": 1,
            "time": {"from": "now-15m", "to": "now"},
            "refresh": "5s",
            "timezone": "",
            "templating": {"list": variables},
            "annotations": {"list": self.annotations(events_where)},
            "panels": self.panels,
        }


def variable(name: str, query: str, *, multi: bool) -> dict[str, Any]:
    return {
        "name": name,
        "label": name.replace("_", " "),
        "type": "query",
        "datasource": DATASOURCE,
        "query": query,
        "definition": query,
        "refresh": 2,  # on time range change, so a new run appears
        "sort": 1,
        "multi": multi,
        "includeAll": multi,
        **({"allValue": ".*"} if multi else {}),
    }


def run_variable(measurement: s.Measurement, *, multi: bool = False) -> dict[str, Any]:
    return variable("run", f'SHOW TAG VALUES FROM "{measurement.name}" WITH KEY = "{s.RUN}"', multi=multi)


def destination_variable(measurement: s.Measurement, run_filter: str) -> dict[str, Any]:
    query = f'SHOW TAG VALUES FROM "{measurement.name}" WITH KEY = "{s.DESTINATION}" WHERE {run_filter}'
    # Connects are tagged with the broker URL; only real destinations (leading "/") are offered.
    return variable("destination", query + f' AND "{s.DESTINATION}" =~ /^\\//', multi=True)


def worker_variable() -> dict[str, Any]:
    query = f'SHOW TAG VALUES FROM "{s.PROCESSES.name}" WITH KEY = "{s.WORKER}" WHERE {RUN}'
    return variable("worker", query, multi=True)


def overview() -> dict[str, Any]:
    board = Board(
        "mqusers-overview",
        "mqusers: overview",
        "Throughput, latency, errors, backlog, generator health and the broker's own view.",
    )
    flow = [RUN, DESTINATION]
    sent = select(s.MERGED, [(f("sum", "count", PER_S), "sent")], [*flow, SEND])
    received = select(s.MERGED, [(f("sum", "count", PER_S), "received")], [*flow, RECEIVE])
    board.panel("timeseries", "Messages/s: sent vs received", [sent, received], unit="short")
    bits = f("sum", "bytes", "* 8 / 1000 / $__interval_ms")
    out = select(s.MERGED, [(bits, "sent Mbit/s")], [*flow, SEND])
    back = select(s.MERGED, [(bits, "received Mbit/s")], [*flow, RECEIVE])
    board.panel("timeseries", "Mbit/s", [out, back], unit="Mbits")
    latency_q = select(s.MERGED, latency(), [*flow, RECEIVE])
    board.panel("timeseries", "Send-to-receive latency, worst interval (ms)", [latency_q], unit="ms")
    errors = select(s.MERGED, [(f("sum", "errors", PER_S), "errors/s")], [RUN], by=(s.OPERATION,))
    board.panel("timeseries", "Errors/s by operation", [errors], unit="short")
    board.panel("timeseries", "Connections/s: opened, failed, closed with receipt", churn_rates(), unit="short")
    churn = select(s.MERGED, latency(), [RUN, CONNECTIONS], by=(s.OPERATION,))
    board.panel("timeseries", "Connect and disconnect latency, worst interval (ms)", [churn], unit="ms")
    ends = [('(sum("count") - sum("errors")) * 1000 / $__interval_ms', "per s"),
            (f("sum", "errors", PER_S), "failed/s")]  # fmt: skip
    board.panel(
        "timeseries",
        "Transactions/s: committed, aborted (answered), failed",
        [select(s.MERGED, ends, [RUN, TRANSACTIONS], by=(s.OPERATION,))],
        unit="short",
    )
    commit = select(s.MERGED, latency(), [RUN, TRANSACTIONS], by=(s.OPERATION,))
    board.panel("timeseries", "COMMIT and ABORT to RECEIPT latency, worst interval (ms)", [commit], unit="ms")
    users = select(s.RUNS, [(f("last", "users"), "users"), (f("last", "workers"), "workers")], [RUN])
    board.panel("timeseries", "Users and workers", [users], width=8)
    backlog = select(s.DESTINATIONS, [(f("last", "backlog"), "backlog")], flow, by=(s.DESTINATION,))
    board.panel("timeseries", "Backlog: expected - received", [backlog], width=8)
    audit = [(f("last", name), name) for name in s.AUDIT_FIELDS]
    board.panel(
        "timeseries",
        "Lost, duplicated, in flight, aborted, expired",
        [select(s.AUDIT, audit, flow, by=(s.DESTINATION,))],
        width=8,
    )
    table = [
        (f("sum", "count"), "count"),
        ('sum("count") / sum("interval_s")', "msg/s"),
        (f("sum", "errors"), "errors"),
        (f("mean", "mean"), "mean"),
        *latency(),
    ]
    rows = select(s.MERGED, table, [RUN], by_time=False, by=(s.OPERATION, s.DESTINATION))
    board.panel("table", "Per operation and destination (latency: worst interval, ms)", [rows], width=24)
    worker = [RUN, WORKER]
    cpu = select(s.PROCESSES, [(f("max", "cpu_percent"), "cpu %")], worker, by=(s.WORKER,))
    board.panel("timeseries", "Generator CPU per worker", [cpu], unit="percent", width=8)
    lag = select(s.PROCESSES, [(f("max", "loop_lag_max_ms"), "lag max")], worker, by=(s.WORKER,))
    board.panel("timeseries", "gevent loop lag (ms)", [lag], unit="ms", width=8)
    sink = [(f("max", "points_buffered"), "buffered"), (f("max", "points_dropped"), "dropped")]
    board.panel(
        "timeseries", "Listener points buffered / dropped", [select(s.PROCESSES, sink, worker, by=(s.WORKER,))], width=8
    )
    board.row("Broker")
    board.panel("timeseries", "Broker depth vs mqusers backlog", depth_against_backlog())
    board.panel("timeseries", "Broker enqueue/dequeue vs mqusers sent/received (msg/s)", rates_against_clients())
    board.panel("timeseries", "Broker memory / store / temp usage", [broker_usage()], unit="percent")
    board.panel("timeseries", "Broker connections", [connections()])
    return board.render([run_variable(s.RUNS), destination_variable(s.MERGED, RUN), worker_variable()], RUN)


def churn_rates() -> list[str]:
    """Connections opened (CONNECTED) and failed per second, and closed with the broker's RECEIPT (churning Users)."""
    opened = [
        ('(sum("count") - sum("errors")) * 1000 / $__interval_ms', "opened/s"),
        (f("sum", "errors", PER_S), "failed/s"),
    ]
    connects = select(s.MERGED, opened, [RUN, "\"operation\" = 'connect'"])
    closes = select(s.MERGED, [('(sum("count") - sum("errors")) * 1000 / $__interval_ms', "closed/s")],
                    [RUN, "\"operation\" = 'disconnect'"])  # fmt: skip
    return [connects, closes]


# ----------------------------------------------------------------------------------------- broker

BROKER_FLOW = [RUN, DESTINATION]
BY_DESTINATION = (s.SOURCE, s.DESTINATION)


def depth_against_backlog() -> list[str]:
    """What the broker holds per destination, next to what mqusers still expects to receive there."""
    depth = select(s.BROKER_DESTINATIONS, [(f("last", "depth"), "broker depth")], BROKER_FLOW, by=BY_DESTINATION)
    backlog = select(s.DESTINATIONS, [(f("last", "backlog"), "mqusers backlog")], BROKER_FLOW, by=(s.DESTINATION,))
    return [depth, backlog]


def rates_against_clients() -> list[str]:
    """The broker's enqueue and dequeue rates per destination, next to mqusers' send and receive rates."""
    counted = [(rate("enqueued"), "broker enqueued/s"), (rate("dequeued"), "broker dequeued/s")]
    broker = select(s.BROKER_DESTINATIONS, counted, BROKER_FLOW, by=BY_DESTINATION)
    per_s = f("sum", "count", PER_S)
    sent = select(s.MERGED, [(per_s, "mqusers sent/s")], [*BROKER_FLOW, SEND], by=(s.DESTINATION,))
    received = select(s.MERGED, [(per_s, "mqusers received/s")], [*BROKER_FLOW, RECEIVE], by=(s.DESTINATION,))
    return [broker, sent, received]


def broker_usage() -> str:
    usage = [(f("max", f"{name}_percent"), f"{name} %") for name in ("memory", "store", "temp", "disk")]
    return select(s.BROKER, usage, [RUN], by=(s.SOURCE,))


def connections() -> str:
    return select(s.BROKER, [(f("last", "connections"), "connections")], [RUN], by=(s.SOURCE,))


def broker() -> dict[str, Any]:
    board = Board(
        "mqusers-broker",
        "mqusers: broker",
        "The broker's own figures, sampled by the master (or local runner) every broker-metrics interval, "
        "next to mqusers'. Figures a broker does not report are absent.",
    )
    board.row("Destinations")
    unacked = select(s.BROKER_DESTINATIONS, [(f("last", "unacked"), "broker unacked")], BROKER_FLOW, by=BY_DESTINATION)
    board.panel("timeseries", "Depth and unacknowledged vs mqusers backlog", [*depth_against_backlog(), unacked])
    board.panel("timeseries", "Enqueue/dequeue vs mqusers sent/received (msg/s)", rates_against_clients())
    counted = [(rate("dispatched"), "dispatched/s"), (rate("expired"), "expired/s"), (rate("killed"), "killed/s")]
    board.panel(
        "timeseries",
        "Dispatched, expired and killed (msg/s)",
        [select(s.BROKER_DESTINATIONS, counted, BROKER_FLOW, by=BY_DESTINATION)],
        width=6,
    )
    own = [(f("mean", name), name.replace("_rate", "/s")) for name in ("publish_rate", "deliver_rate", "ack_rate")]
    board.panel(
        "timeseries",
        "Rates the broker computes (msg/s)",
        [select(s.BROKER_DESTINATIONS, own, BROKER_FLOW, by=BY_DESTINATION)],
        width=6,
    )
    clients = [(f("last", "consumers"), "consumers"), (f("last", "producers"), "producers")]
    board.panel(
        "timeseries",
        "Consumers and producers",
        [select(s.BROKER_DESTINATIONS, clients, BROKER_FLOW, by=BY_DESTINATION)],
        width=6,
    )
    memory = [(f("max", "memory_percent"), "memory %")]
    board.panel(
        "timeseries",
        "Destination memory usage",
        [select(s.BROKER_DESTINATIONS, memory, BROKER_FLOW, by=BY_DESTINATION)],
        unit="percent",
        width=6,
    )
    held = [(f("last", "memory_bytes"), "memory"), (f("last", "store_bytes"), "store")]
    board.panel(
        "timeseries",
        "Destination memory and store used (Artemis)",
        [select(s.BROKER_DESTINATIONS, held, BROKER_FLOW, by=BY_DESTINATION)],
        unit="bytes",
        width=12,
    )
    paged = [(f("last", "pages"), "pages"), (f("max", "paging"), "paging")]
    board.panel(
        "timeseries",
        "Paged to disk: page files, and 1 while paging (Artemis)",
        [select(s.BROKER_DESTINATIONS, paged, BROKER_FLOW, by=BY_DESTINATION)],
        width=12,
    )
    table = [
        ('last("enqueued") - first("enqueued")', "enqueued"),
        ('last("dequeued") - first("dequeued")', "dequeued"),
        ('last("expired") - first("expired")', "expired"),
        ('last("killed") - first("killed")', "killed"),
        (f("max", "depth"), "max depth"),
        (f("last", "depth"), "depth"),
        (f("max", "unacked"), "max unacked"),
        (f("last", "consumers"), "consumers"),
    ]
    rows = select(s.BROKER_DESTINATIONS, table, BROKER_FLOW, by_time=False, by=BY_DESTINATION)
    board.panel("table", "Per destination over the time range (counts: last - first sample)", [rows], width=24)

    board.row("Broker")
    board.panel("timeseries", "Memory / store / temp / disk usage", [broker_usage()], unit="percent", width=8)
    board.panel("timeseries", "Connections", [connections()], width=8)
    used = [(f("last", "memory_bytes"), "memory"), (f("last", "store_bytes"), "store")]
    board.panel("timeseries", "Memory and store used", [select(s.BROKER, used, [RUN], by=(s.SOURCE,))], unit="bytes",
                width=8)  # fmt: skip
    fd = [(f("last", "fd_used"), "fd used"), (f("last", "fd_total"), "fd limit")]
    board.panel("timeseries", "File descriptors (RabbitMQ)", [select(s.BROKER, fd, [RUN], by=(s.SOURCE,))], width=8)
    alarms = select(s.BROKER, [(f("max", "alarms"), "alarms")], [RUN], by=(s.SOURCE,))
    board.panel("timeseries", "Resource alarms blocking publishers (RabbitMQ, Artemis)", [alarms], width=8)
    names = [(f("last", "alarm_names"), "alarms now"), (f("max", "alarms"), "most at once")]
    board.panel(
        "table",
        "Alarms: the last sample's, and the most at once",
        [select(s.BROKER, names, [RUN], by_time=False, by=(s.SOURCE,))],
        width=8,
    )

    board.row("JVM")
    heap = [(f("last", "heap_used_mb"), "heap used"), (f("last", "heap_committed_mb"), "heap committed")]
    board.panel("timeseries", "Heap (MB)", [select(s.BROKER, heap, [RUN], by=(s.SOURCE,))], unit="decmbytes", width=8)
    collections = select(s.BROKER, [(rate("gc_count"), "collections/s")], [RUN], by=(s.SOURCE,))
    board.panel("timeseries", "GC collections/s", [collections], width=8)
    # GC seconds per second: the share of wall time spent collecting.
    gc_time = select(s.BROKER, [(rate("gc_seconds"), "GC time")], [RUN], by=(s.SOURCE,))
    board.panel("timeseries", "Time in GC", [gc_time], unit="percentunit", width=8)
    threads = select(s.BROKER, [(f("last", "threads"), "threads")], [RUN], by=(s.SOURCE,))
    board.panel("timeseries", "Threads", [threads])
    cpu = select(s.BROKER, [(f("max", "cpu_percent"), "cpu %")], [RUN], by=(s.SOURCE,))
    board.panel("timeseries", "Broker JVM CPU (% of one core)", [cpu], unit="percent")
    return board.render([run_variable(s.RUNS), destination_variable(s.BROKER_DESTINATIONS, RUN)], RUN)


def drilldown() -> dict[str, Any]:
    board = Board("mqusers-drilldown", "mqusers: per destination and worker", "Each worker's own figures.")
    scope = [RUN, DESTINATION, WORKER]
    rate = select(s.OPS, [(f("sum", "count", PER_S), "msg/s")], scope, by=(s.WORKER, s.OPERATION))
    board.panel("timeseries", "Messages/s per worker and operation", [rate])
    errors = select(s.OPS, [(f("sum", "errors", PER_S), "errors/s")], scope, by=(s.WORKER, s.OPERATION))
    board.panel("timeseries", "Errors/s per worker and operation", [errors])
    receive = [*scope, "\"operation\" = 'receive'"]
    p99 = select(s.OPS, [(f("max", "p99"), "p99")], receive, by=(s.WORKER, s.DESTINATION))
    board.panel("timeseries", "Receive p99 per worker (ms)", [p99], unit="ms")
    p50 = select(s.OPS, [(f("max", "p50"), "p50")], receive, by=(s.WORKER, s.DESTINATION))
    board.panel("timeseries", "Receive p50 per worker (ms)", [p50], unit="ms")
    synchronous = [*scope, '"operation" =~ /^(receipt|request)$/']
    sync = select(s.OPS, latency(), synchronous, by=(s.OPERATION, s.DESTINATION))
    board.panel("timeseries", "Receipt and request round trip, worst interval (ms)", [sync], unit="ms", width=24)
    table = [
        (f("sum", "count"), "count"),
        ('sum("count") / sum("interval_s")', "msg/s"),
        (f("sum", "errors"), "errors"),
    ]
    rows = select(s.OPS, [*table, *latency()], scope, by_time=False, by=(s.WORKER, s.OPERATION, s.DESTINATION))
    board.panel("table", "Per worker, operation and destination (latency: worst interval, ms)", [rows], width=24)
    mine = [RUN, WORKER]
    cpu = select(s.PROCESSES, [(f("max", "cpu_percent"), "cpu %"), (f("last", "users"), "users")], mine, by=(s.WORKER,))
    board.panel("timeseries", "CPU and users per worker", [cpu])
    lag = select(
        s.PROCESSES,
        [(f("max", "loop_lag_max_ms"), "max"), (f("mean", "loop_lag_mean_ms"), "mean")],
        mine,
        by=(s.WORKER,),
    )
    board.panel("timeseries", "gevent loop lag per worker (ms)", [lag], unit="ms")
    return board.render([run_variable(s.RUNS), destination_variable(s.OPS, RUN), worker_variable()], RUN)


def comparison() -> dict[str, Any]:
    board = Board("mqusers-comparison", "mqusers: run comparison", "Exact whole-run figures, one row per run.")
    summary = [
        (f("last", "count"), "count"),
        (f("last", "rate"), "msg/s"),
        (f("last", "mbit"), "Mbit/s"),
        (f("last", "errors"), "errors"),
        (f("last", "mean"), "mean"),
        *latency("last"),
        (f("last", "duration_s"), "seconds"),
    ]
    scope = [RUNS, DESTINATION]
    for operation in ("receive", "send"):
        where = [*scope, f"\"operation\" = '{operation}'"]
        rows = select(s.SUMMARY, summary, where, by_time=False, by=(s.RUN, s.SCENARIO, s.DESTINATION))
        board.panel("table", f"Runs: {operation} per destination (latency ms)", [rows], width=24)
    others = select(
        s.SUMMARY,
        summary,
        [RUNS, '"operation" !~ /^(send|receive)$/'],
        by_time=False,
        by=(s.RUN, s.OPERATION, s.DESTINATION),
    )
    board.panel("table", "Runs: other operations (latency ms)", [others], width=24)
    where = [*scope, "\"operation\" = 'receive'"]
    trend = select(s.SUMMARY, [(f("last", "p50"), "p50"), (f("last", "p99"), "p99")], where, by=(s.SCENARIO,))
    board.panel("timeseries", "Run over run: receive latency (ms, at each run's end)", [trend], unit="ms")
    rate = select(s.SUMMARY, [(f("last", "rate"), "msg/s")], where, by=(s.SCENARIO,))
    board.panel("timeseries", "Run over run: received msg/s", [rate])
    return board.render([run_variable(s.SUMMARY, multi=True), destination_variable(s.SUMMARY, RUNS)], RUNS)


DASHBOARDS = {"overview": overview, "drilldown": drilldown, "comparison": comparison, "broker": broker}


def render_all() -> dict[str, str]:
    """File name -> JSON text, exactly as committed."""
    return {f"{name}.json": json.dumps(build(), indent=2, sort_keys=True) + "\n" for name, build in DASHBOARDS.items()}


def main(argv: list[str] | None = None) -> int:
    from tools import promdashboard  # built on this module's Board

    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0]) if args else OUTPUT
    for folder, rendered in ((target, render_all()), (target.parent / "prometheus", promdashboard.render_all())):
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in rendered.items():
            (folder / name).write_text(text, encoding="utf-8")
            print(f"wrote {folder / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
