"""The grids' sections of the HTML page: cluster-compare's and the matrix's tables, then every run they ran.

A cell is its median msg/s with the 95 % interval, the pairs of a row not told apart from noise named
beside it (``≈``), the method under the table (the document's ``legend``), and each run (the warm-up's
marked as left out) in a table of its own linking the run's JSON report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

from mqusers.report.htmltables import Html, link, number, table

#: cluster-compare's schemes, in its columns' order, as its columns name them (the noise column's words too).
SCHEMES = {"nonpersistent": "non-persistent", "persistent": "persistent", "durable": "persistent durable"}
#: Between two cells of a row whose difference is not told apart from noise (the console's too).
NOISE = "≈"
WARMUP = "warm-up (left out)"
#: Said under a grid's table when a Ctrl-C or SIGTERM stopped it (the console's too).
INTERRUPTED = "interrupted: the table holds the runs that ended before the Ctrl-C or SIGTERM; the rest did not run"


def _heading(title: str | None) -> str:
    return f"<h2>{escape(title)}</h2>" if title is not None else ""


def msgs(cell: Mapping[str, Any] | None) -> Html | None:
    """The median msg/s, its 95 % interval beneath in brackets (a saved document without one: the figure alone)."""
    if not cell or cell.get("msgs") is None:
        return None
    interval = cell.get("msgs_interval") or [None, None]
    under = ""
    if None not in interval:
        under = f'<br><span class="interval">({number(interval[0], "msg/s")}-{number(interval[1], "msg/s")})</span>'
    return Html(f"{number(cell['msgs'], 'msg/s')}{under}", numeric=True)


def _runs_table(runs: Iterable[tuple[str, Any, Mapping[str, Any]]]) -> str:
    rows = [[name, WARMUP if repeat is None else repeat, link(run.get("report"), run.get("msgs"), "msg/s"),
             run.get("sent"), run.get("received"), run.get("lost"), run.get("p99_ms", run.get("p99"))]
            for name, repeat, run in runs]  # fmt: skip
    return "<h3>Runs</h3>" + table(["cell", "run", "msg/s", "sent", "received", "lost", "p99 ms"], rows, "grid-runs")


def _legend(document: Mapping[str, Any]) -> str:
    notes = [document.get("legend"), INTERRUPTED if document.get("interrupted") else None]
    return "".join(f'<p class="note">{escape(str(note))}</p>' for note in notes if note)


#: A cluster-compare row's latency cell, in its table's order (mqusers.commands.hops).
LATENCY = ("p50_ms", "p99_ms", "hop_p50_ms", "hop_p99_ms")


def cluster_section(index: int, title: str | None, document: dict[str, Any]) -> str:
    """The schemes' table, then the failover runs' (two tables: in one, 12 columns did not fit 1280 px)."""
    failover = ("window_ms", "reconnect_ms", "after_ready_ms", "lost", "unconfirmed", "dup_after_reconnect")
    rows, failovers, titles = [], [], document.get("titles") or {}
    runs: list[tuple[str, Any, Mapping[str, Any]]] = []
    for r in document.get("rows", []):
        noise = "; ".join(f"{SCHEMES.get(a, a)} {NOISE} {SCHEMES.get(b, b)}" for a, b in r.get("noise", [])) or None
        # A failover URL wraps at its commas: six configurations' URLs unwrapped pushed the table past 1280 px.
        rows.append([r["config"], r["url"].replace(",", ", "), *(msgs(r["schemes"].get(s)) for s in SCHEMES), noise])
        if r.get("failover"):
            failovers.append([r["config"], *(r["failover"].get(k) for k in failover)])
        for scheme, run in (r.get("warmup") or {}).items():
            runs.append((f"{r['config']} {titles.get(scheme, scheme)}", None, run))
        for scheme, cell in r["schemes"].items():
            runs.extend((f"{r['config']} {titles.get(scheme, scheme)}", run.get("repeat"), run)
                        for run in cell.get("runs", []))  # fmt: skip
        # The paced runs and the failover run have no throughput of their own: their reports, by file name.
        paced_at = f"latency at {number((r.get('latency') or {}).get('rate') or 0)} msg/s"
        runs.extend((f"{r['config']} {paced_at}", run.get("repeat"), {**run, "msgs": None})
                    for run in (r.get("latency") or {}).get("runs", []))  # fmt: skip
        if (r.get("failover") or {}).get("report"):
            runs.append((f"{r['config']} failover", "-", {**r["failover"], "msgs": None}))
    header = ["configuration", "broker", *(f"{name} msg/s" for name in SCHEMES.values()), f"{NOISE} noise"]
    configurations = table(header, rows, "cluster")
    if paced := [r for r in document.get("rows", []) if (r.get("latency") or {}).get("p50_ms") is not None]:
        at = number(document.get("latency_rate") or 0)
        configurations += f"<h3>Latency, paced at {at} msg/s (hop: against the first configuration)</h3>" + table(
            ["configuration", "consumers at", "p50 ms", "p99 ms", "hop p50 ms", "hop p99 ms"],
            ([r["config"], r.get("consumers") or None, *(r["latency"].get(k) for k in LATENCY)] for r in paced),
            "cluster-latency")  # fmt: skip
    if failovers:
        configurations += "<h3>Failover</h3>" + table(
            ["configuration", "failover window ms", "reconnect ms", "after ready ms", "lost", "unconfirmed",
             "dup after reconnect"], failovers, "cluster-failover")  # fmt: skip
    return f"""<section class="cluster-compare" id="doc-{index}">{_heading(title)}
<p class="facts">1 producer, 1 subscriber, 1 topic, {escape(str(document.get("size", "?")))}-byte messages,
{number(document.get("repeats", 1))} run(s) per scheme</p>{configurations}{_legend(document)}{_runs_table(runs)}
</section>"""


def _matrix_runs(cells: Sequence[Mapping[str, Any]]) -> Iterable[tuple[str, Any, Mapping[str, Any]]]:
    for c in cells:
        variant = ("persistent" if c["persistent"] else "non-persistent") + (" durable" if c["durable"] else "")
        name = f"{c['mode']} {variant} {c['size']}"
        if c.get("warmup"):
            yield name, None, c["warmup"]
        if "runs" not in c and c.get("report"):  # saved before the grids repeated their cells: its one run
            yield name, 1, c
        yield from ((name, run.get("repeat"), run) for run in c.get("runs", []))


def matrix_section(index: int, title: str | None, document: dict[str, Any]) -> str:
    """The seed method's tables: per mode, latency, msg/s, Mbit/s and loss per persistence x durability x size."""
    tables = []
    cells = document.get("cells", [])
    for mode in dict.fromkeys(c["mode"] for c in cells):
        latency = "round trip" if mode == "request-reply" else "forwarding"
        rows = (["yes (store 0 B)" if c.get("persisted") is False else c["persistent"], c["durable"], c["size"],
                 c.get("mean"), c.get("p99"), msgs(c), c.get("mbit"), c.get("lost"),
                 ", ".join(c.get("noise") or []) or None] for c in cells if c["mode"] == mode)  # fmt: skip
        tables.append(f"<h3>{escape(mode)}</h3>" + table(
            ["persistent", "durable", "size", f"{latency} latency mean ms", f"{latency} latency p99 ms", "msg/s",
             "Mbit/s", "lost", f"{NOISE} noise"], rows, f"matrix matrix-{escape(mode)}"))  # fmt: skip
    rate = document.get("rate") or 0
    pace = f"at {number(rate, 'msg/s')} msg/s" if rate else "unpaced"
    notes = "".join(f'<p class="note">{escape(note)}</p>' for note in document.get("notes", []))
    return f"""<section class="matrix" id="doc-{index}">{_heading(title)}
<p class="facts">{number(document.get("repeats", 1))} run(s) per cell, {pace}</p>{"".join(tables)}{notes}
{_runs_table(_matrix_runs(cells))}</section>"""
