"""One run's part of the HTML report: what ran, its tables, its line in a comparison, its chart marks.

Reads only the run's JSON document (``--mq-report-json``); :mod:`mqusers.report.htmlreport` puts the
sections on the page and the page's script draws the charts.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict
from html import escape
from typing import Any

from hdrh.histogram import HdrHistogram

from mqusers.measure.book import percentile_plot
from mqusers.measure.names import RECEIVE, split_event_name
from mqusers.options.settings import Settings
from mqusers.options.table import OPTIONS, SECRET_FIELDS
from mqusers.report.backlogreport import backlog_sentence, phase_table, priority_sentence, priority_table
from mqusers.report.htmltables import Html, facts, number, table, when
from mqusers.report.manydest import QUANTILES, WORST_FIGURES
from mqusers.report.networkbrokers import HEADER as NETWORK_HEADER
from mqusers.report.networkbrokers import network_rows
from mqusers.report.perbroker import HEADER as SPREAD_HEADER
from mqusers.report.perbroker import spread_rows
from mqusers.run.verdicts import sentence

#: The audit's columns in the HTML table, as the JSON names them.
AUDIT_COLUMNS = ("sent", "received", "lost", "duplicated", "reordered", "redelivered", "unconfirmed", "foreign")
#: Shown only when a destination has them: transactions', selectors', expiry's (``--mq-ttl``) groups' and NACKs'.
SOMETIMES_COLUMNS = ("aborted", "aborted_delivered", "not_selected", "selector_violations", "expired",
                     "delivered_expired", "groups", "group_violations", "nacks", "dead_lettered")  # fmt: skip
#: The report's latency figures (:meth:`mqusers.measure.book.Tally.latency_ms` keys) and their headings.
LATENCY = {"mean": "mean", "p50": "p50", "p90": "p90", "p99": "p99", "p999": "p99.9", "max": "max"}
_FLAGS = {option.field: option.flag for option in OPTIONS}
#: The options as a run with none given has them (JSON types, as a document holds them).
_DEFAULTS = json.loads(json.dumps(asdict(Settings()), default=str))
#: Where the reports went is not how the run ran.
_NOT_HOW = {"report_json", "report_csv", "report_html", "results", "broker"}


def receive_plots(document: dict[str, Any]) -> dict[str, list[tuple[float, float]]]:
    """Each destination's receive latency as percentile-plot points, from the run's encoded histogram."""
    plots = {}
    for name, encoded in document.get("histograms", {}).items():
        operation, destination = split_event_name(name)
        if operation == RECEIVE and destination.startswith("/"):
            plots[destination] = percentile_plot(HdrHistogram.decode(encoded.encode("ascii")))
    return plots


def options_given(document: dict[str, Any]) -> dict[str, Any]:
    """The options that differ from a plain run's, never a secret."""
    # As JSON has them: a report written at the run's end holds tuples where a saved one holds lists.
    options = json.loads(json.dumps(document.get("options", {}), default=str))
    shown = {k: v for k, v in sorted(options.items()) if k not in SECRET_FIELDS}
    return {k: v for k, v in shown.items() if k not in _NOT_HOW and v not in (None, "", []) and v != _DEFAULTS.get(k)}


def broker_named(document: dict[str, Any]) -> str:
    """The broker's address, and its product and version (the CONNECTED header) when the run saw them."""
    options, broker = document.get("options", {}), document.get("broker") or {}
    server = (document.get("scenario") or {}).get("server") or broker.get("source")
    address = options.get("broker") or "the scenario's host"
    return f"{address} ({server})" if server else str(address)


def what_ran(document: dict[str, Any]) -> str:
    """The run's header: scenario, broker, users, destinations, the options given, when and how it ended."""
    rows, options = document.get("destinations", []), document.get("options", {})
    scenario = document.get("scenario") or {}
    users = ", ".join(f"{name} {number(n)}" for name, n in sorted((scenario.get("users") or {}).items()))
    size = scenario.get("size")
    messages = scenario["payload"] if scenario.get("payload") else size and f"{number(size)} B messages"
    load = "; ".join(filter(None, [users and f"users: {users}", scenario.get("rate"), messages]))
    duration = document.get("stopped", 0.0) - document.get("started", 0.0)
    generator = document.get("generator", {})
    verdict = str(generator.get("verdict", "-"))
    # The run's own words; a report saved before they were in the JSON has them worked out again.
    said = generator.get("sentence") or (sentence(generator) if generator.get("processes") else "")
    return facts([
        ("scenario", scenario.get("locustfile")),
        ("broker", broker_named(document)),
        ("consumers at", " and ".join(options.get("consumer_brokers") or []) or None),
        ("load", load or None),
        ("destinations", ", ".join(r["destination"] for r in rows) or "none"),
        ("options", " ".join(f"{_FLAGS.get(k, k)} {_option_text(v, k)}" for k, v in options_given(document).items())
                    or "none given"),
        ("run", f"{document.get('run_id', '?')}, {when(document.get('started', 0.0))}, {number(duration, 's')} s, "
                f"ended by {document.get('ended_by', '?')}"),
        ("generator verdict", Html(f'<b class="verdict-{escape(verdict)}">{escape(verdict)}</b> '
                                   f'<span class="generator-words">{escape(said.partition(": ")[2])}</span>')),
    ])  # fmt: skip


def _option_text(value: Any, key: str = "") -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list) and key == "consumer_brokers":  # several brokers: one quoted word, space-separated
        return shlex.quote(" ".join(str(v) for v in value))
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    if isinstance(value, int | float):
        # As a flag takes it (no thousands separator): the header line can be pasted back.
        return f"{value:g}" if isinstance(value, float) else str(value)
    return str(value)


def _unbroken(text: str) -> Html:
    """A date and time that wrap only between their parts, never at a date's hyphens."""
    return Html(" ".join(f'<span class="nowrap">{escape(part)}</span>' for part in text.split(" ", 1)))


def run_summary(document: dict[str, Any]) -> dict[str, Any]:
    """One run's line in the comparison: totals over its destinations, the worst receive latency."""
    rows = document.get("destinations", [])
    worst = {LATENCY[key]: max((r["latency_ms"].get(key, 0.0) for r in rows if r["latency_ms"]), default=None)
             for key in ("p50", "p99", "p999", "max")}  # fmt: skip
    return {
        "run": document.get("run_id", "?"),
        "broker": broker_named(document),
        "started": _unbroken(when(document["started"])) if "started" in document else "-",
        "duration s": document.get("stopped", 0.0) - document.get("started", 0.0),
        "sent": sum(r["sent"] for r in rows),
        "received": sum(r["received"] for r in rows),
        "lost": sum(r.get("lost", 0) for r in rows),
        "received msg/s": sum(r["receive_rate_msgs"] for r in rows),
        **{f"{key} ms": value for key, value in worst.items()},
        "generator": document.get("generator", {}).get("verdict", "-"),
    }


def run_section(index: int, title: str | None, document: dict[str, Any]) -> str:
    """A run's section; ``title`` (the file) heads it when the page holds several documents."""
    rows = document.get("destinations", [])
    columns = [*AUDIT_COLUMNS, *(k for k in SOMETIMES_COLUMNS if any(r.get(k) for r in rows))]
    audit = table(["destination", *(k.replace("_", " ") for k in columns)],
                  ([r["destination"], *(r.get(k, 0) for k in columns)] for r in rows), "audit")  # fmt: skip
    latency = table(["destination", "sent msg/s", "sent Mbit/s", "received msg/s", "received Mbit/s",
                     *(f"{k} ms" for k in LATENCY.values())],
                    ([r["destination"], r["send_rate_msgs"], r["send_rate_mbit"], r["receive_rate_msgs"],
                      r["receive_rate_mbit"], *(r["latency_ms"].get(k) for k in LATENCY)] for r in rows),
                    "latency")  # fmt: skip
    clocks = document.get("clock_offsets", {})
    clock_table = table(["process", "offset ms", "± ms", "rtt ms", "corrected by ms"],
                        ([w, c["offset_ms"], c["error_ms"], c.get("rtt_ms"), c.get("applied_ms")]
                         for w, c in sorted(clocks.items())), "clocks")  # fmt: skip
    generator = document.get("generator", {"verdict": "-", "processes": {}})
    # The master (a distributed run's) last: it runs no load, its row is its cost.
    every = [*sorted(generator["processes"].items()), *([("master", m)] if (m := generator.get("master")) else [])]
    processes = table(["process", "verdict", "CPU mean %", "CPU max %", "memory max MB", "loop lag max ms",
                       "loop lag p99 ms", "saturated s", "contended s", "measured s", "late: CPU max %",
                       "late: machine max %", "late: steal max %", "late: wait for a core max ms/s"],
                      ([n, p["verdict"], p.get("cpu_percent_mean"), p["cpu_percent_max"], p.get("rss_mb_max"),
                        p["loop_lag_ms_max"], p["loop_lag_ms_p99"], p["saturated_s"], p.get("contended_s"),
                        p["seconds"], p.get("late_cpu_percent_max"), p.get("machine_cpu_percent_max"),
                        p.get("steal_percent_max"), p.get("cpu_wait_ms_max")]
                       for n, p in every), "generator")  # fmt: skip
    options = {k: v for k, v in document.get("options", {}).items()
               if k not in SECRET_FIELDS and v not in (None, "", [])}  # fmt: skip
    option_table = table(["option", "value"], sorted(options.items()), "options")
    notes = "".join(f"<li>{escape(note)}</li>" for note in document.get("notes", []))
    heading = f"<h2>{escape(title)}</h2>" if title is not None else ""
    return f"""<section class="run" id="doc-{index}">{heading}{what_ran(document)}
<div class="charts" data-doc="{index}"></div>
<h3>Audit</h3>{audit}{_spread_table(document)}<h3>Rates and receive latency</h3>{latency}{_pattern_tables(document)}
{_operation_tables(document)}{_backlog_table(document)}{_failover_tables(document)}{_broker_tables(document)}
<h3>Generator</h3>{processes}<h3>Clock offsets against the master</h3>{clock_table if clocks else "<p>none</p>"}
<h3>Notes</h3><ul>{notes}</ul><details><summary>Every option</summary>{option_table}</details>
</section>"""


def _spread_table(document: dict[str, Any]) -> str:
    """Consumers per broker of a network (``--mq-consumer-host``); nothing when they were at the producers'."""
    rows = spread_rows(document.get("destinations", []))
    header = [*SPREAD_HEADER[:-1], "share %"]
    return f"<h3>Consumers per broker</h3>{table(header, rows, 'per-broker')}" if rows else ""


def _pattern_tables(document: dict[str, Any]) -> str:
    """Each destination pattern's worst destinations and the distributions of its destinations' p99 and rate."""
    html = ""
    for s in document.get("patterns") or []:
        worst = table(["destination", *WORST_FIGURES, "p99 ms", "received msg/s"],
                      ([r["destination"], *(r[k] for k in WORST_FIGURES), r["p99_ms"], r["receive_rate_msgs"]]
                       for r in s["worst"]), "worst")  # fmt: skip
        p99 = table(["per destination", *(f"{q} ms" for q in QUANTILES)],
                    [["p99", *(s["p99_ms"][q] for q in QUANTILES)]], "spread")  # fmt: skip
        rates = table(["per destination", *(f"{q} msg/s" for q in QUANTILES)],
                      [["received", *(s["receive_rate_msgs"][q] for q in QUANTILES)]], "spread")  # fmt: skip
        counts = (f"{number(s['sent_to'])} sent to, {number(s['subscribed'])} subscribed, "
                  f"{number(s['with_loss'])} with loss")  # fmt: skip
        html += (f"<h3>{escape(s['pattern'])}: {number(s['destinations'])} destinations</h3><p>{counts}; the worst "
                 f"{len(s['worst'])} (most lost, then unreceived, then p99):</p>{worst}{p99}{rates}")  # fmt: skip
    return html


def _backlog_table(document: dict[str, Any]) -> str:
    """A backlog run's phases, build then drain; nothing for another run."""
    backlog = document.get("backlog")
    if not backlog:
        return ""
    rows = phase_table(backlog, document.get("operations", []))
    words = escape(backlog_sentence(backlog))
    html = f"<h3>Backlog: build, then drain</h3>{table(rows[0], rows[1:], 'backlog')}<p>{words}</p>"
    if priorities := priority_table(backlog, document.get("operations", [])):
        sentence = escape(priority_sentence(backlog) or "")
        html += f"<h3>Priority: inversions and latency</h3>{table(priorities[0], priorities[1:], 'priority')}"
        html += f"<p>{sentence}</p>"
    return html


def _operation_tables(document: dict[str, Any]) -> str:
    """Every other timed operation (connect, disconnect, receipt, commit...) and, when Users churned
    connections or sent in transactions, their figures; nothing for a run without them."""
    operations = document.get("operations") or []
    html = ""
    if operations:
        html += "<h3>Other operations</h3>" + table(
            ["operation", "count", "failed", *(f"{k} ms" for k in LATENCY.values())],
            ([op["name"], op["count"], op["errors"], *(op["latency_ms"].get(k) for k in LATENCY)] for op in operations),
            "operations",
        )  # fmt: skip
    c = document.get("connections") or {}
    if c.get("closed") or c.get("close_failed"):
        html += "<h3>Connections</h3>" + table(
            ["opened", "opened/s", "failed", "closed with receipt", "closed without", "open files at start",
             "open files at end", "broker connections at end"],
            [[c["opened"], c["per_s"], c["failed"], c["closed"], c["close_failed"], c["open_files_start"],
              c["open_files_end"], c["broker_connections_end"]]],
            "connections",
        )  # fmt: skip
    if t := document.get("transactions"):
        html += "<h3>Transactions</h3>" + table(
            ["committed", "aborted", "ended/s", "commit unanswered", "abort unanswered", "messages aborted",
             "aborted delivered"],
            [[t["committed"], t["aborted"], t["per_s"], t["commit_failed"], t["abort_failed"], t["messages_aborted"],
              t["aborted_delivered"]]],
            "transactions",
        )  # fmt: skip
    return html


def _failover_tables(document: dict[str, Any]) -> str:
    """Outages per destination and the fault schedule; nothing when neither happened."""
    failover, faults = document.get("failover") or {}, document.get("faults") or []
    html = ""
    if failover.get("outages"):
        rows = ([r["destination"], r["outages"], r["reconnects"], r["unrecovered"], r["window_max_ms"].get("producer"),
                 r["window_max_ms"].get("consumer"), r["reconnect_max_ms"], r["after_ready_max_ms"],
                 r["latency_ms"]["during"]["p99_ms"], r["latency_ms"]["outside"]["p99_ms"]]
                for r in failover["destinations"])  # fmt: skip
        html += "<h3>Failover (shaded on the charts)</h3>" + table(
            ["destination", "drops", "reconnects", "unrecovered", "producer window ms", "consumer window ms",
             "reconnect ms", "after ready (bound) ms", "p99 during ms", "p99 outside ms"],
            rows, "failover")  # fmt: skip
    if faults:
        html += "<h3>Faults (dashed on the charts)</h3>" + table(
            ["at s", "command", "exit", "took s", "output"],
            ([f["at_s"], f["command"], f["exit_code"] if f["ran"] else "not run",
              (f["ended_ns"] - f["started_ns"]) / 1e9 if f["ran"] else None, f["output"][-300:]] for f in faults),
            "faults",
        )  # fmt: skip
    return html


def _broker_tables(document: dict[str, Any]) -> str:
    """The broker's own figures per destination beside mqusers', and its JVM; a line when there were none."""
    broker = document.get("broker") or {}
    if not broker:
        return ""
    if broker.get("source") is None:
        return f"<h3>Broker</h3><p>no broker figures: {escape(str(broker.get('note') or 'not collected'))}</p>"
    ours = {row["destination"]: row for row in document.get("destinations", [])}
    keys = ("enqueued", "dequeued", "depth", "unacked", "consumers", "expired", "killed", "paging", "pages",
            "memory_bytes")  # fmt: skip
    rows = ([name, *(figures.get(k) for k in keys[:2]), ours.get(name, {}).get("sent"),
             ours.get(name, {}).get("received"), *(figures.get(k) for k in keys[2:])]
            for name, figures in broker["destinations"].items())  # fmt: skip
    whose = f"the producers' broker; consumers at {broker['consumers_at']}, " if broker.get("consumers_at") else ""
    heading = f"<h3>Broker ({escape(whose)}{escape(str(broker['source']))}, {number(broker['samples'])} readings)</h3>"
    html = heading + table(
        ["destination", "enqueued", "dequeued", "mqusers sent", "mqusers received", "depth", "unacked",
         "consumers", "expired", "killed", "paging", "pages", "memory bytes"], rows, "broker")  # fmt: skip
    jvm = broker.get("jvm") or {}
    wide = {**broker.get("broker", {}), **{f"jvm {k}": v for k, v in jvm.items()}}
    html += table(["figure", "value"], sorted(wide.items()), "broker-wide") if wide else ""
    if network := network_rows(broker, document.get("destinations", [])):
        html += "<h3>Consumers' brokers (their own figures)</h3>" + table(NETWORK_HEADER, network, "broker-network")
    return html


def marks(document: dict[str, Any]) -> dict[str, list[Any]]:
    """Outage windows ([start, end] s) and faults ([t s, label]) for the time charts."""
    failover = document.get("failover") or {}
    windows = [[w["start_ns"] / 1e9, w["end_ns"] / 1e9] for row in failover.get("destinations", [])
               for w in row["windows"]]  # fmt: skip
    faults = [
        [f["started_ns"] / 1e9, f"{f['at_s']:g}s: {f['command']}"] for f in document.get("faults") or [] if f["ran"]
    ]
    return {"windows": windows, "faults": faults}
