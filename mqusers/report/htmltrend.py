"""The trend page of a results folder: each operation's throughput and p50/p99/p99.9 over runs, with their intervals.

Runs are in the order they started. A run's figures and 95 % intervals are :mod:`mqusers.stats`'
(its interval histograms after the warm-up, a bootstrap over moving blocks of them), so a figure
equals the run's own report's; a file with no intervals is listed as left out. A repeat's page
(``mqusers repeat --html``) is the same page with the repeat's statistics on top.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

from mqusers.report.htmlpage import page
from mqusers.report.htmltables import Html, link, number, table, when
from mqusers.stats.bootstrap import estimates
from mqusers.stats.figures import FIGURES, THROUGHPUT, UNITS
from mqusers.stats.samples import Run, RunFileError, run_from_document

#: The figures the trend draws: throughput on one chart, these percentiles on another.
LATENCIES = ("p50", "p99", "p99.9")


def _points(runs: Sequence[tuple[Path, dict[str, Any]]]) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """Per operation, each run's figures as ``[value, low, high]``, oldest run first; the files left out, why."""
    operations: dict[str, list[dict[str, Any]]] = {}
    totals: dict[str, float] = {}
    left_out = []
    kept = 0
    for path, document in runs:
        try:
            run: Run = run_from_document(document, path.name)
        except RunFileError as error:
            left_out.append(str(error))
            continue
        kept += 1
        for operation, samples in run.operations.items():
            found = estimates([run], operation)
            figures = {f: [_finite(found[f].point), _finite(found[f].low), _finite(found[f].high)] for f in FIGURES}
            operations.setdefault(operation, []).append({"run": kept, "t": document.get("started"),
                                                         "run_id": document.get("run_id", ""), "file": str(path),
                                                         "figures": figures})  # fmt: skip
            totals[operation] = totals.get(operation, 0.0) + float(samples.counts.sum())
    # The busiest operation first: receive and send before a connect.
    return {op: operations[op] for op in sorted(operations, key=lambda op: (-totals[op], op))}, left_out


def _finite(value: float) -> float | None:
    return value if value == value and abs(value) != float("inf") else None


def _figure_cell(values: list[float | None], unit: str) -> Html | None:
    value, low, high = values
    if value is None:
        return None
    interval = "" if low is None or high is None else f"\n<br><small>{number(low, unit)} - {number(high, unit)}</small>"
    return Html(f"{number(value, unit)}{interval}", numeric=True)


def _operation_section(index: int, operation: str, points: list[dict[str, Any]]) -> str:
    header = ["run", "started", "report", *(f"{f} {UNITS[f]}" for f in (THROUGHPUT, *LATENCIES))]
    rows = [[p["run"], when(p["t"]) if p["t"] else None, link(p["file"]),
             *(_figure_cell(p["figures"][f], UNITS[f]) for f in (THROUGHPUT, *LATENCIES))] for p in points]  # fmt: skip
    return f"""<section class="trend" id="doc-{index}"><h2>{escape(operation)}</h2>
<p class="facts">each figure over the run's intervals after its warm-up; below it, its 95 % interval</p>
<div class="charts" data-doc="{index}"></div>{table(header, rows, "trend")}</section>"""


def _repeat_section(summary: dict[str, Any]) -> str:
    """A repeat's statistics: per operation and figure, the median of the runs, its interval and the spread."""
    rows = [[operation, f"{figure} {found['unit']}", *(_plain(found[k], found["unit"]) for k in ("median", "low",
             "high", "min", "max")), found["runs"]] for operation, figures in summary.get("operations", {}).items()
            for figure, found in figures.items()]  # fmt: skip
    header = ["operation", "figure", "median", "95 % CI low", "95 % CI high", "lowest run", "highest run", "runs"]
    said = "".join(f'<p class="note">{escape(line)}</p>' for line in [*summary.get("how_runs_differ", []),
                                                                       summary.get("method", "")] if line)  # fmt: skip
    return f'<section class="repeat"><h2>Repeat: {len(summary.get("runs", []))} runs</h2>{said}' \
           f'{table(header, rows, "repeat")}{_runs_table(summary)}</section>'  # fmt: skip


def _runs_table(summary: dict[str, Any]) -> str:
    """Each run's exit status beside its own verdicts (lost, generator, an early end) and whether it can be a
    baseline, as the console's run lines say them; nothing for a summary saved before it had them."""
    runs = [run for run in summary.get("runs", []) if "baseline" in run]
    if not runs:
        return ""
    header = ["run", "run id", "status", "exit code", "lost", "generator", "ended early", "baseline", "counted",
              "report"]  # fmt: skip
    return table(header, (_run_row(run) for run in runs), "repeat-runs")


def _run_row(run: dict[str, Any]) -> list[Any]:
    found = run["baseline"]
    lost, report = found.get("lost"), found.get("generator") is not None  # None: the run wrote no report
    ended = found.get("ended_early") or ("no" if report else None)
    baseline = "yes" if found["fit"] else f"no: {', '.join(found['reasons'])}"
    return [run["run"], run["run_id"], run["status"], run["exit_code"], lost, found.get("generator"), ended, baseline,
            run["counted"], link(run["report"])]  # fmt: skip


def _plain(value: float | None, unit: str) -> Html | None:
    return None if value is None else Html(number(value, unit), numeric=True)


def render_trend(runs: Sequence[tuple[Path, dict[str, Any]]], source: str, summary: dict[str, Any] | None = None,
                 skipped: Sequence[str] = ()) -> str:  # fmt: skip
    """The page of ``runs`` (oldest first): a section per operation; ``summary``, a repeat's statistics, on top."""
    operations, left_out = _points(runs)
    sections = [_operation_section(i, op, points) for i, (op, points) in enumerate(operations.items())]
    if summary is not None:
        sections.insert(0, _repeat_section(summary))
    notes = [*skipped, *left_out]
    if notes:
        sections.append('<section class="left-out"><h2>Left out</h2>'
                        + "".join(f'<p class="note">{escape(note)}</p>' for note in notes) + "</section>")  # fmt: skip
    data = {"documents": [{"kind": "trend", "operation": op, "runs": points} for op, points in operations.items()],
            "titles": list(operations)}  # fmt: skip
    times = [float(d["started"]) for _, d in runs if d.get("started")]
    span = f", {when(min(times))} to {when(max(times))}" if times else ""
    counted = sum(1 for _ in runs) - len(left_out)
    heading = f"mqusers {'trend' if summary is None else 'repeat'}: {counted} run{'s' if counted != 1 else ''}"
    return page(heading, f'<p class="source">{escape(source)}{escape(span)}</p>', "".join(sections), data)


def write_trend(path: str, runs: Sequence[tuple[Path, dict[str, Any]]], summary: dict[str, Any] | None = None,
                source: str = "", skipped: Sequence[str] = ()) -> None:  # fmt: skip
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(render_trend(runs, source, summary, skipped))
