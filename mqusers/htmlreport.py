"""One self-contained HTML file from saved JSON reports: runs, a find-max search, a latency curve.

Reads only the documents (``--mq-report-json``'s, ``mqusers find-max --json``'s, ``mqusers curve
--json``'s), so any saved run can be rendered again and compared later. Tables are rendered here;
charts are drawn in the browser by the vendored uPlot (``mqusers/web``, MIT), inlined with the data
so the page opens offline. ``mqusers report A.json [B.json ...] --html out.html`` is :func:`main`.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from html import escape
from importlib import resources
from typing import Any

from hdrh.histogram import HdrHistogram

from mqusers.measure.book import percentile_plot
from mqusers.names import RECEIVE, split_event_name
from mqusers.options import SECRET_FIELDS

#: The audit's columns in the HTML table, as the JSON names them.
AUDIT_COLUMNS = ("sent", "received", "lost", "duplicated", "reordered", "redelivered", "unconfirmed", "foreign")
KINDS = ("run", "find-max", "curve", "cluster-compare", "matrix")
#: The report's latency figures (:meth:`mqusers.measure.book.Tally.latency_ms` keys) and their headings.
LATENCY = {"mean": "mean", "p50": "p50", "p90": "p90", "p99": "p99", "p999": "p99.9", "max": "max"}


def _asset(name: str) -> str:
    return resources.files("mqusers").joinpath("web", name).read_text(encoding="utf-8")


def kind_of(document: dict[str, Any]) -> str:
    """A run's JSON had no ``kind`` before it said ``"run"``."""
    kind = document.get("kind", "run")
    if kind not in KINDS:
        raise ValueError(f"unknown report kind {kind!r} (known: {', '.join(KINDS)})")
    return str(kind)


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]], css: str) -> str:
    head = "".join(f"<th>{escape(str(cell))}</th>" for cell in header)
    body = "".join("<tr>" + "".join(f"<td>{_cell(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


class _Html(str):
    """A cell already rendered (a link): not escaped again."""


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, _Html):
        return value
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value.is_integer():
            return f"{value:,.0f}"
        return f"{value:,.3f}".rstrip("0").rstrip(".") if abs(value) < 1000 else f"{value:,.1f}"
    return escape(str(value))


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def receive_plots(document: dict[str, Any]) -> dict[str, list[tuple[float, float]]]:
    """Each destination's receive latency as percentile-plot points, from the run's encoded histogram."""
    plots = {}
    for name, encoded in document.get("histograms", {}).items():
        operation, destination = split_event_name(name)
        if operation == RECEIVE and destination.startswith("/"):
            plots[destination] = percentile_plot(HdrHistogram.decode(encoded.encode("ascii")))
    return plots


def _run_summary(document: dict[str, Any]) -> dict[str, Any]:
    """One run's line in the comparison: totals over its destinations, the worst receive latency."""
    rows = document.get("destinations", [])
    worst = {LATENCY[key]: max((r["latency_ms"].get(key, 0.0) for r in rows if r["latency_ms"]), default=None)
             for key in ("p50", "p99", "p999", "max")}  # fmt: skip
    return {
        "run": document.get("run_id", "?"),
        "started": _when(document["started"]) if "started" in document else "-",
        "seconds": document.get("stopped", 0.0) - document.get("started", 0.0),
        "sent": sum(r["sent"] for r in rows),
        "received": sum(r["received"] for r in rows),
        "lost": sum(r.get("lost", 0) for r in rows),
        "recv/s": sum(r["receive_rate_msgs"] for r in rows),
        **{f"{key} ms": value for key, value in worst.items()},
        "generator": document.get("generator", {}).get("verdict", "-"),
    }


def _run_section(index: int, title: str, document: dict[str, Any]) -> str:
    rows = document.get("destinations", [])
    audit = _table(["destination", *AUDIT_COLUMNS], ([r["destination"], *(r.get(k, 0) for k in AUDIT_COLUMNS)]
                   for r in rows), "audit")  # fmt: skip
    latency = _table(["destination", "sent/s", "sent Mbit/s", "recv/s", "recv Mbit/s",
                      *(f"{k} ms" for k in LATENCY.values())],
                     ([r["destination"], r["send_rate_msgs"], r["send_rate_mbit"], r["receive_rate_msgs"],
                       r["receive_rate_mbit"], *(r["latency_ms"].get(k) for k in LATENCY)] for r in rows),
                     "latency")  # fmt: skip
    clocks = document.get("clock_offsets", {})
    clock_table = _table(["process", "offset ms", "± ms", "rtt ms", "corrected by ms"],
                         ([w, c["offset_ms"], c["error_ms"], c.get("rtt_ms"), c.get("applied_ms")]
                          for w, c in sorted(clocks.items())), "clocks")  # fmt: skip
    generator = document.get("generator", {"verdict": "-", "processes": {}})
    processes = _table(["process", "verdict", "CPU % max", "loop lag ms max", "lag p99 ms", "saturated s", "seconds"],
                       ([n, p["verdict"], p["cpu_percent_max"], p["loop_lag_ms_max"], p["loop_lag_ms_p99"],
                         p["saturated_s"], p["seconds"]] for n, p in sorted(generator["processes"].items())),
                       "generator")  # fmt: skip
    failover = _failover_tables(document) + _broker_tables(document)
    options = {k: v for k, v in document.get("options", {}).items() if k not in SECRET_FIELDS and v not in (None, "")}
    option_table = _table(["option", "value"], sorted(options.items()), "options")
    notes = "".join(f"<li>{escape(note)}</li>" for note in document.get("notes", []))
    duration = document.get("stopped", 0.0) - document.get("started", 0.0)
    return f"""<section class="run" id="doc-{index}">
<h2>{escape(title)}</h2>
<p class="facts">run <b>{escape(str(document.get("run_id", "?")))}</b>, {_when(document.get("started", 0.0))},
{duration:.1f} s, {escape(str(document.get("ended_by", "?")))}; generator verdict:
<b class="verdict-{escape(str(generator["verdict"]))}">{escape(str(generator["verdict"]))}</b></p>
<div class="charts" data-doc="{index}"></div>
<h3>Audit</h3>{audit}<h3>Rates and receive latency</h3>{latency}{failover}
<h3>Generator</h3>{processes}<h3>Clock offsets against the master</h3>{clock_table if clocks else "<p>none</p>"}
<h3>Notes</h3><ul>{notes}</ul><details><summary>Options</summary>{option_table}</details>
</section>"""


def _failover_tables(document: dict[str, Any]) -> str:
    """Outages per destination and the fault schedule; nothing when neither happened."""
    failover, faults = document.get("failover") or {}, document.get("faults") or []
    html = ""
    if failover.get("outages"):
        rows = ([r["destination"], r["outages"], r["reconnects"], r["unrecovered"], r["window_max_ms"].get("producer"),
                 r["window_max_ms"].get("consumer"), r["reconnect_max_ms"], r["after_ready_max_ms"],
                 r["latency_ms"]["during"]["p99_ms"], r["latency_ms"]["outside"]["p99_ms"]]
                for r in failover["destinations"])  # fmt: skip
        html += "<h3>Failover (shaded on the charts)</h3>" + _table(
            ["destination", "drops", "reconnects", "unrecovered", "producer window ms", "consumer window ms",
             "reconnect ms", "after ready ms (bound)", "p99 ms during", "p99 ms outside"],
            rows, "failover")  # fmt: skip
    if faults:
        html += "<h3>Faults (dashed on the charts)</h3>" + _table(
            ["at s", "command", "exit", "seconds", "output"],
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
    keys = ("enqueued", "dequeued", "depth", "unacked", "consumers", "expired")
    rows = ([name, *(figures.get(k) for k in keys[:2]), ours.get(name, {}).get("sent"),
             ours.get(name, {}).get("received"), *(figures.get(k) for k in keys[2:])]
            for name, figures in broker["destinations"].items())  # fmt: skip
    html = f"<h3>Broker ({escape(str(broker['source']))}, {broker['samples']} readings)</h3>" + _table(
        ["destination", "enqueued", "dequeued", "mqusers sent", "mqusers received", "depth", "unacked",
         "consumers", "expired"], rows, "broker")  # fmt: skip
    jvm = broker.get("jvm") or {}
    wide = {**broker.get("broker", {}), **{f"jvm {k}": v for k, v in jvm.items()}}
    return html + _table(["figure", "value"], sorted(wide.items()), "broker-wide") if wide else html


def _find_max_section(index: int, title: str, document: dict[str, Any]) -> str:
    """Both answers with their bounds ("at least" when nothing above failed), the criterion, each step."""
    figures = [f for f in (document.get("keeps_up"), document.get("within_latency")) if f]
    if not figures:  # saved before find-max said which bound its figure was
        rate = document.get("max_rate")
        text = "none" if rate is None else f"{rate:,.0f} msg/s (saved without saying whether this is a lower bound)"
        figures = [{"label": "highest rate kept up with", "text": text, "bound": "unknown"}]
    answer = "".join(f'<li class="bound-{escape(str(f.get("bound")))}"><b>{escape(str(f.get("label")))}:</b> '
                     f"{escape(str(f.get('text')))}</li>" for f in figures)  # fmt: skip
    said = [(name, document.get(key)) for name, key in (("criterion", "criterion"), ("search ended", "ended"))]
    facts = "".join(f'<p class="facts">{name}: {escape(str(value))}</p>' for name, value in said if value)
    rows = [[_link(step.get("report"), f"{step.get('rate') or 0:,.0f}"), float(round(step.get("achieved") or 0)),
             "flaky" if step.get("flaky") else bool(step.get("sustained")),
             {True: "ok", False: "over"}.get(step.get("latency_ok")),
             *(step.get(c) for c in ("p50_ms", "p99_ms", "p999_ms", "max_ms", "processes", "verdict")),
             step.get("why", step.get("reason"))]
            for step in document.get("steps", [])]  # fmt: skip
    # Lost and failed messages are in "why"; the offered rate links to the step's own run report.
    header = ["offered msg/s", "achieved msg/s", "keeps up", "latency", "p50 ms", "p99 ms", "p99.9 ms", "max ms",
              "processes", "generator", "why"]  # fmt: skip
    table = _table(header, rows, "steps")
    return f"""<section class="find-max" id="doc-{index}"><h2>{escape(title)}</h2>
<ul class="answer">{answer}</ul>{facts}<div class="charts" data-doc="{index}"></div>{table}</section>"""


def _link(path: Any, text: str = "") -> _Html | str | None:
    """A link to a file, shown as its path or ``text`` (which stands alone without a path)."""
    return _Html(f'<a href="{escape(str(path))}">{escape(text or str(path))}</a>') if path else text or None


def _curve_section(index: int, title: str, document: dict[str, Any]) -> str:
    columns = ("percent", "offered", "achieved", "p50_ms", "p99_ms", "p999_ms", "max_ms", "lost")
    table = _table(["% of max", "offered msg/s", "achieved msg/s", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "lost"],
                   ([p.get(c) for c in columns] for p in document.get("points", [])), "points")  # fmt: skip
    return f"""<section class="curve" id="doc-{index}"><h2>{escape(title)}</h2>
<p class="facts">latency against offered load, from a maximum of <b>{document.get("max_rate", 0):,.1f}</b> msg/s</p>
<div class="charts" data-doc="{index}"></div>{table}</section>"""


def marks(document: dict[str, Any]) -> dict[str, list[Any]]:
    """Outage windows ([start, end] s) and faults ([t s, label]) for the time charts."""
    failover = document.get("failover") or {}
    windows = [[w["start_ns"] / 1e9, w["end_ns"] / 1e9] for row in failover.get("destinations", [])
               for w in row["windows"]]  # fmt: skip
    faults = [
        [f["started_ns"] / 1e9, f"{f['at_s']:g}s: {f['command']}"] for f in document.get("faults") or [] if f["ran"]
    ]
    return {"windows": windows, "faults": faults}


def _cluster_section(index: int, title: str, document: dict[str, Any]) -> str:
    schemes = ("nonpersistent", "persistent", "durable")
    failover = ("window_ms", "reconnect_ms", "after_ready_ms", "lost", "unconfirmed", "dup_after_reconnect")
    rows = ([r["config"], r["url"], *((r["schemes"].get(s) or {}).get("msgs") for s in schemes),
             *((r.get("failover") or {}).get(k) for k in failover)] for r in document.get("rows", []))  # fmt: skip
    table = _table(["configuration", "broker", "non-persistent msg/s", "persistent msg/s", "persistent durable msg/s",
                    "failover window ms", "reconnect ms", "after ready ms", "lost", "unconfirmed",
                    "dup after reconnect"], rows, "cluster")  # fmt: skip
    return f"""<section class="cluster-compare" id="doc-{index}"><h2>{escape(title)}</h2>
<p class="facts">1 producer, 1 subscriber, 1 topic, {escape(str(document.get("size", "?")))}-byte messages,
{document.get("messages", 0):,} per scheme</p>{table}</section>"""


def _matrix_section(index: int, title: str, document: dict[str, Any]) -> str:
    """The seed method's tables: per mode, latency, msg/s, Mbit/s and loss per persistence x durability x size."""
    tables = []
    for mode in dict.fromkeys(c["mode"] for c in document.get("cells", [])):
        latency = "round trip" if mode == "request-reply" else "forwarding"
        rows = ([c["persistent"], c["durable"], c["size"], c.get("mean"), c.get("p99"), c.get("msgs"), c.get("mbit"),
                 c.get("lost"), _link(c.get("report"))] for c in document["cells"] if c["mode"] == mode)  # fmt: skip
        tables.append(f"<h3>{escape(mode)}</h3>" + _table(
            ["persistent", "durable", "size", f"{latency} latency mean ms", f"{latency} latency p99 ms", "msg/s",
             "Mbit/s", "lost", "run"], rows, f"matrix matrix-{escape(mode)}"))  # fmt: skip
    rate = document.get("rate") or 0
    pace = f"at {rate:,.0f} msg/s" if rate else "unpaced"
    return f"""<section class="matrix" id="doc-{index}"><h2>{escape(title)}</h2>
<p class="facts">{document.get("messages", 0):,} messages per cell, {pace}</p>{"".join(tables)}</section>"""


def chart_data(document: dict[str, Any]) -> dict[str, Any]:
    """What the page's script draws for one document (the tables are already HTML)."""
    kind = kind_of(document)
    if kind == "run":
        return {"kind": kind, "series": document.get("series", {}), "percentiles": receive_plots(document),
                "marks": marks(document), "broker": (document.get("broker") or {}).get("series", [])}  # fmt: skip
    if kind == "find-max":
        bound = document.get("latency_bound") or {}
        return {"kind": kind, "steps": document.get("steps", []), "bound_ms": bound.get("limit_ms"),
                "bound": bound.get("figure")}  # fmt: skip
    if kind in ("cluster-compare", "matrix"):
        return {"kind": kind}
    return {"kind": kind, "points": document.get("points", [])}


def render(documents: Sequence[dict[str, Any]], titles: Sequence[str]) -> str:
    """The page: a comparison when there are several runs, then each document's section."""
    sections = {"run": _run_section, "find-max": _find_max_section, "curve": _curve_section,
                "cluster-compare": _cluster_section, "matrix": _matrix_section}  # fmt: skip
    body = [sections[kind_of(d)](i, t, d) for i, (d, t) in enumerate(zip(documents, titles, strict=True))]
    runs = [(t, d) for t, d in zip(titles, documents, strict=True) if kind_of(d) == "run"]
    if len(runs) > 1:
        summaries = [_run_summary(d) for _, d in runs]
        table = _table(["report", *summaries[0]], ([t, *s.values()] for (t, _), s in zip(runs, summaries,
                       strict=True)), "compare")  # fmt: skip
        body.insert(0, f'<section class="compare"><h2>Comparison</h2>{table}<div class="charts" '
                       'data-doc="compare"></div></section>')  # fmt: skip
    data = {"documents": [chart_data(d) for d in documents], "titles": list(titles)}
    # "</" would end the script element early; JSON allows "<\/" for it.
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    heading = titles[0] if len(titles) == 1 else f"{len(titles)} reports"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>mqusers: {escape(heading)}</title>
<style>{_asset("uPlot.min.css")}</style><style>{_asset("report.css")}</style></head>
<body><h1>mqusers report: {escape(heading)}</h1>
{"".join(body)}
<script id="report-data" type="application/json">{payload}</script>
<script>{_asset("uPlot.iife.min.js")}</script>
<script>{_asset("report.js")}</script>
</body></html>
"""


def write_html(path: str, documents: Sequence[dict[str, Any]], titles: Sequence[str]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(render(documents, titles))


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="mqusers report", description="render saved JSON reports as one HTML file")
    parser.add_argument("reports", nargs="+", help="JSON reports: runs (--mq-report-json), find-max, curve")
    parser.add_argument("--html", required=True, help="the HTML file to write")
    args = parser.parse_args(argv)
    documents = []
    for path in args.reports:
        try:
            with open(path, encoding="utf-8") as handle:
                document = json.load(handle)
            kind_of(document)
        except (OSError, ValueError) as error:
            parser.error(f"{path}: {error}")
        documents.append(document)
    try:
        write_html(args.html, documents, args.reports)
    except OSError as error:
        parser.error(f"cannot write {args.html}: {error.strerror}")
    return 0
