"""One self-contained HTML file from saved JSON reports: runs, a find-max search, a latency curve.

Reads only the documents (``--mq-report-json``'s, ``mqusers find-max --json``'s, ``mqusers curve
--json``'s), so any saved run can be rendered again and compared later. Tables are rendered here;
charts are drawn in the browser by the vendored uPlot (``mqusers/report/assets``, MIT), inlined with the data
so the page opens offline. ``mqusers report A.json [B.json ...] --html out.html`` is :func:`main`; given
results folders, it draws their runs' trend (:mod:`mqusers.report.htmltrend`).
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

from mqusers.report.history import read_folder
from mqusers.report.htmlgrids import cluster_section, matrix_section
from mqusers.report.htmlpage import page
from mqusers.report.htmlrun import marks, receive_plots, run_section, run_summary
from mqusers.report.htmltables import Html, link, number, table

KINDS = ("run", "find-max", "curve", "cluster-compare", "matrix")
#: What each kind of document is, for the page's heading.
NAMES = {"run": "run", "find-max": "find-max search", "curve": "latency curve", "cluster-compare": "cluster comparison",
         "matrix": "matrix"}  # fmt: skip


def kind_of(document: dict[str, Any]) -> str:
    """A run's JSON had no ``kind`` before it said ``"run"``."""
    kind = document.get("kind", "run")
    if kind not in KINDS:
        raise ValueError(f"unknown report kind {kind!r} (known: {', '.join(KINDS)})")
    return str(kind)


def _heading(title: str | None) -> str:
    return f"<h2>{escape(title)}</h2>" if title is not None else ""


def _find_max_section(index: int, title: str | None, document: dict[str, Any]) -> str:
    """Both answers with their bounds ("at least" when nothing above failed), the criterion, each step."""
    figures = [f for f in (document.get("keeps_up"), document.get("within_latency")) if f]
    if not figures:  # saved before find-max said which bound its figure was
        rate = document.get("max_rate")
        text = "none" if rate is None else f"{number(rate)} msg/s (saved without saying whether this is a lower bound)"
        figures = [{"label": "highest rate kept up with", "text": text, "bound": "unknown"}]
    answer = "".join(f'<li class="bound-{escape(str(f.get("bound")))}"><b>{escape(str(f.get("label")))}:</b> '
                     f"{escape(str(f.get('text')))}</li>" for f in figures)  # fmt: skip
    said = [(name, document.get(key)) for name, key in (("criterion", "criterion"), ("search ended", "ended"))]
    facts = "".join(f'<p class="facts">{name}: {escape(str(value))}</p>' for name, value in said if value)
    rows = [[link(step.get("report"), step.get("rate") or 0.0, "msg/s"), step.get("achieved"), _keeps_up(step),
             {True: "ok", False: "over"}.get(step.get("latency_ok")),
             *(step.get(c) for c in ("p50_ms", "p99_ms", "p999_ms", "max_ms", "due_p99_ms", "processes", "verdict")),
             step.get("why", step.get("reason"))]
            for step in document.get("steps", [])]  # fmt: skip
    # Lost and failed messages are in "why"; the offered rate links to the step's own run report.
    header = ["offered msg/s", "achieved msg/s", "keeps up", "latency", "p50 ms", "p99 ms", "p99.9 ms", "max ms",
              "due p99 ms", "processes", "generator", "why"]  # fmt: skip
    return f"""<section class="find-max" id="doc-{index}">{_heading(title)}
<ul class="answer">{answer}</ul>{facts}<div class="charts" data-doc="{index}"></div>{table(header, rows, "steps")}
</section>"""


def _keeps_up(step: dict[str, Any]) -> str | bool | None:
    """The console's "keeps up" cell: yes, no or flaky (held on a rerun); None in a document saved without it."""
    if "sustained" not in step:
        return None
    return "flaky" if step.get("flaky") else bool(step["sustained"])


def _curve_section(index: int, title: str | None, document: dict[str, Any]) -> str:
    """The headline (the highest point that kept up, never --max-rate's 100 % as such) and a row per point."""
    rows = [[p.get("percent"), link(p.get("report"), p.get("offered") or 0.0, "msg/s"), p.get("achieved"),
             _keeps_up(p), *(p.get(c) for c in ("p50_ms", "p99_ms", "p999_ms", "max_ms", "lost")), p.get("why")]
            for p in document.get("points", [])]  # fmt: skip
    header = ["of --max-rate %", "offered msg/s", "achieved msg/s", "keeps up", "p50 ms", "p99 ms", "p99.9 ms",
              "max ms", "lost", "why"]  # fmt: skip
    base = number(document.get("max_rate", 0), "msg/s")
    headline = document.get("headline")  # a curve saved before it had one: the table alone says which rows held
    said = f'<ul class="answer"><li><b>headline:</b> {escape(str(headline))}</li></ul>' if headline else ""
    return f"""<section class="curve" id="doc-{index}">{_heading(title)}{said}
<p class="facts">latency against offered load, at percentages of --max-rate <b>{base}</b> msg/s</p>
<div class="charts" data-doc="{index}"></div>{table(header, rows, "points")}</section>"""


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


def _page_heading(documents: Sequence[dict[str, Any]], titles: Sequence[str]) -> tuple[str, str]:
    """The page's title and its header: what it shows, said once (a single document's file is not repeated)."""
    if len(documents) == 1:
        [document], [title] = documents, titles
        name = NAMES[kind_of(document)]
        run = f" {document['run_id']}" if kind_of(document) == "run" and "run_id" in document else ""
        # A saved file's name says where the page came from; a name like the heading's would repeat it.
        source = f'<p class="source">from {escape(title)}</p>' if title.endswith(".json") else ""
        return f"mqusers {name}{run}", source
    runs = sum(kind_of(d) == "run" for d in documents)
    compared = f", {runs} runs compared" if runs > 1 else ""
    listed = ", ".join(escape(os.path.basename(t)) for t in titles)
    return f"mqusers: {len(documents)} reports{compared}", f'<p class="source">{listed}</p>'


def _file(path: str) -> Html:
    """A report named by its file; its folder in the tooltip."""
    return Html(f'<span title="{escape(path)}">{escape(os.path.basename(path))}</span>')


def render(documents: Sequence[dict[str, Any]], titles: Sequence[str]) -> str:
    """The page: a comparison when there are several runs, then each document's section."""
    sections = {"run": run_section, "find-max": _find_max_section, "curve": _curve_section,
                "cluster-compare": cluster_section, "matrix": matrix_section}  # fmt: skip
    several = len(documents) > 1
    body = [sections[kind_of(d)](i, t if several else None, d)
            for i, (d, t) in enumerate(zip(documents, titles, strict=True))]  # fmt: skip
    runs = [(t, d) for t, d in zip(titles, documents, strict=True) if kind_of(d) == "run"]
    if len(runs) > 1:
        summaries = [run_summary(d) for _, d in runs]
        compared = table(["report", *summaries[0]], ([_file(t), *s.values()] for (t, _), s in zip(runs, summaries,
                         strict=True)), "compare")  # fmt: skip
        body.insert(0, f'<section class="compare"><h2>Comparison</h2>{compared}<div class="charts" '
                       'data-doc="compare"></div></section>')  # fmt: skip
    data = {"documents": [chart_data(d) for d in documents], "titles": [os.path.basename(t) for t in titles]}
    heading, source = _page_heading(documents, titles)
    return page(heading, source, "".join(body), data)


def write_html(path: str, documents: Sequence[dict[str, Any]], titles: Sequence[str]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(render(documents, titles))


def _trend(folders: Sequence[str], html: str, parser: argparse.ArgumentParser) -> int:
    """``mqusers report DIR``: the trend page of the runs of one or more results folders."""
    # Here, not at the top: the trend's statistics import numpy, which every locust process would pay for at start.
    from mqusers.report.htmltrend import write_trend

    runs, skipped = [], []
    for folder in folders:
        found = read_folder(Path(folder))
        runs += found.runs
        skipped += [f"{path}: {why}" for path, why in found.skipped]
    if not runs:
        parser.error(f"no run's JSON report in {', '.join(folders)}")
    runs.sort(key=lambda run: (float(run[1].get("started") or 0.0), run[0].name))
    try:
        write_trend(html, runs, source=f"runs in {', '.join(folders)}", skipped=skipped)
    except OSError as error:
        parser.error(f"cannot write {html}: {error.strerror}")
    left = f", {len(skipped)} other file(s) left out" if skipped else ""
    print(f"mqusers report: wrote {os.path.abspath(html)} ({os.path.getsize(html):,} bytes), the trend of {len(runs)}"
          f" runs in {', '.join(folders)}{left}")  # fmt: skip
    return 0


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="mqusers report", description="render saved JSON reports as one HTML file, "
                                     "or a results folder's runs as a trend")  # fmt: skip
    parser.add_argument("reports", nargs="+", help="JSON reports: runs (--mq-report-json), find-max, curve; or "
                        "results folders (--mq-results, mqusers repeat): the trend of their runs")  # fmt: skip
    parser.add_argument("--html", required=True, help="the HTML file to write")
    args = parser.parse_args(argv)
    folders = [path for path in args.reports if os.path.isdir(path)]
    if folders and len(folders) < len(args.reports):
        parser.error("give JSON files (one page of them) or results folders (their trend), not both")
    if folders:
        return _trend(folders, args.html, parser)
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
    kinds = ", ".join(f"{kind_of(d)} {path}" for d, path in zip(documents, args.reports, strict=True))
    print(f"mqusers report: wrote {os.path.abspath(args.html)} ({os.path.getsize(args.html):,} bytes) from {kinds}")
    return 0
