"""A repeat's outcome: each run's record and figures, and each headline figure's median, 95 % interval and spread.

The statistics are :mod:`mqusers.stats`' (a bootstrap over the runs and each run's intervals); this
module only picks the runs that count (they ended by themselves, exit 0 or a gate's 3, and have
intervals after their warm-up), and says the result as a console table, a JSON document and a page.
Each run carries its own verdicts beside its exit status (:mod:`mqusers.report.baselinefit`: messages
lost, the generator's verdict, an early end): exit 0 is not a clean run, and the summary names the
runs that cannot serve as a baseline.
"""

from __future__ import annotations

import json
import math
import textwrap
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mqusers.report.baselinefit import BaselineFit, baseline_fit, verdict_text
from mqusers.report.figures import ms, rate
from mqusers.report.htmltrend import write_trend
from mqusers.report.reportformats import WIDTH
from mqusers.stats.bootstrap import CONFIDENCE, Estimate, estimates
from mqusers.stats.figures import FIGURES, THROUGHPUT, UNITS, run_headlines
from mqusers.stats.samples import Run, RunFileError, run_from_document

#: Exit codes of a run that measured to its end: locust's success and a run's own gate failing.
MEASURED = {0: "ok", 3: "gate"}
METHOD = ("median of the runs' figures; 95 % interval: a hierarchical bootstrap over the runs and their intervals"
          " (docs/compare.md); spread: the lowest and highest run")  # fmt: skip


@dataclass(frozen=True)
class RunRecord:
    """One run of a repeat: where its report is, how it ended, its report when it wrote one."""

    index: int
    run_id: str
    report: str
    status: str = "pending"  # ok, gate, failed, interrupted
    code: int | None = None
    document: dict[str, Any] | None = field(default=None, repr=False)
    why: str = ""
    #: Its planned -t, s: a run that lasted less ended early.
    run_time_s: float = 0.0

    def failed(self, why: str, code: int | None) -> RunRecord:
        return replace(self, status="failed", code=code, why=why)

    def interrupted(self, document: dict[str, Any] | None) -> RunRecord:
        why = "interrupted (Ctrl-C or SIGTERM): shown, left out of the statistics"
        return replace(self, status="interrupted", document=document, why=why if document else "interrupted, no report")

    def finished(self, code: int, document: dict[str, Any]) -> RunRecord:
        if code in MEASURED:
            return replace(self, status=MEASURED[code], code=code, document=document)
        return replace(self, status="failed", code=code, document=document,
                       why=f"locust exited {code} (see {Path(self.report).with_suffix('.log').name})")  # fmt: skip

    @property
    def fit(self) -> BaselineFit | None:
        """Its verdicts as a baseline, from its report (None: it wrote none)."""
        return None if self.document is None else baseline_fit(self.document, self.run_time_s or None)

    def unfit(self) -> list[str]:
        """Why it cannot serve as a baseline (empty: it can): its report's reasons, or how it failed."""
        if self.document is None:
            return [self.why or "no report"]
        failed = [f"exit {self.code}"] if self.status == "failed" and self.code is not None else []
        return failed + (self.fit or BaselineFit()).reasons

    def line(self, count: int) -> str:
        took = ""
        if self.document and self.document.get("stopped") and self.document.get("started"):
            took = f", {self.document['stopped'] - self.document['started']:.1f} s"
        outcome = f"{self.status} (exit {self.code})" if self.code is not None else self.status
        fit, verdicts = self.fit, ""
        if fit is not None and self.status in MEASURED.values():
            # A measured run's own verdicts beside its exit status: exit 0 alone does not make it a clean run.
            if not fit.fit:
                gate = "gate failed, " if self.status == "gate" else ""
                outcome = f"{gate}exit {self.code}, {', '.join(fit.reasons)}: not a baseline"
            verdicts = "".join(f", {said}" for said in fit.held)
        why = f": {self.why}" if self.why else ""
        return f"run {self.index}/{count} {self.run_id}: {outcome}{took}{verdicts}{why}; {self.report}"


def _samples(record: RunRecord) -> Run | str:
    """The record's interval samples, or why it has none."""
    if record.document is None:
        return record.why or "no report"
    try:
        return run_from_document(record.document, record.report)
    except RunFileError as error:
        return str(error)


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _shown(figure: str, value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else rate(value) if figure == THROUGHPUT else ms(value)


def _estimate_document(found: Estimate) -> dict[str, Any]:
    return {"unit": UNITS[found.figure], "median": _finite(found.point), "low": _finite(found.low),
            "high": _finite(found.high), "min": _finite(found.spread[0]), "max": _finite(found.spread[1]),
            "runs": found.runs}  # fmt: skip


def summarize(records: list[RunRecord]) -> dict[str, Any]:
    """The runs' figures and, over the runs that count, each operation's estimates (the JSON's core)."""
    samples = {record.index: _samples(record) for record in records}
    counted = [s for r in records if r.status in MEASURED.values() and isinstance(s := samples[r.index], Run)]
    runs = []
    for record in records:
        run = samples[record.index]
        figures = {op: {f: _finite(v) for f, v in values.items()} for op, values in run_headlines(run).items()} \
            if isinstance(run, Run) else {}  # fmt: skip
        why = record.why or ("" if isinstance(run, Run) else f"left out of the statistics: {run}")
        document = record.document or {}
        fit, unfit = record.fit, record.unfit()
        found = fit.as_dict() if fit is not None else {"lost": None, "generator": None, "ended_early": None}
        baseline = {**found, "fit": not unfit, "reasons": unfit, "text": verdict_text(unfit)}
        runs.append({"run": record.index, "run_id": record.run_id, "report": record.report, "status": record.status,
                     "exit_code": record.code, "why": why, "counted": any(run is c for c in counted),
                     "started": document.get("started"), "stopped": document.get("stopped"),
                     "baseline": baseline, "figures": figures})  # fmt: skip
    # Operations every counted run has, the busiest first (receive and send before a connect).
    common = set.intersection(*(set(run.operations) for run in counted)) if counted else set()
    ordered = sorted(common, key=lambda op: (-sum(counted[0].operations[op].counts), op))
    operations = {op: {f: _estimate_document(e) for f, e in estimates(counted, op).items()} for op in ordered}
    not_baseline = [{"run": r.index, "run_id": r.run_id, "reasons": r.unfit()} for r in records if r.unfit()]
    return {"kind": "repeat", "confidence": CONFIDENCE, "method": METHOD, "runs": runs, "not_baseline": not_baseline,
            "operations": operations}  # fmt: skip


def baseline_line(summary: dict[str, Any]) -> str:
    """Which runs cannot serve as a baseline, and why; those counted in the statistics said so."""
    unfit = summary.get("not_baseline") or []
    if not unfit:
        return "baseline: every run can serve as one (nothing lost, generator neither contended nor saturated, none" \
               " ended early)"  # fmt: skip
    counted = {run["run"] for run in summary["runs"] if run["counted"]}
    said = [f"run {run['run']} {run['run_id']}: {', '.join(run['reasons'])}"
            + (" (counted in the statistics)" if run["run"] in counted else "") for run in unfit]  # fmt: skip
    return f"not a baseline: {'; '.join(said)}"


def _aligned(rows: list[list[str]]) -> list[str]:
    """Columns aligned: the first to the left, the figures to the right."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in
                      enumerate(zip(row, widths, strict=True))).rstrip() for row in rows]  # fmt: skip


def table_lines(summary: dict[str, Any]) -> list[str]:
    """Per operation: each figure's median, interval and spread, then a line per counted run with its own figures
    (marked when the run cannot be a baseline).

    Runs are lines, not columns, so the table keeps its width whatever the number of runs.
    """
    counted = [run for run in summary["runs"] if run["counted"]]
    lines = []
    for op, figures in summary["operations"].items():
        estimates = [[f"{op}, {len(counted)} runs", "median", "95 % CI", "spread (min - max)"]]
        for figure in FIGURES:
            found = figures[figure]
            estimates.append([f"  {figure} {found['unit']}", _shown(figure, found["median"]),
                              f"{_shown(figure, found['low'])} - {_shown(figure, found['high'])}",
                              f"{_shown(figure, found['min'])} - {_shown(figure, found['max'])}"])  # fmt: skip
        runs = [["  each run", *(f"{figure} {UNITS[figure]}" for figure in FIGURES)]]
        # A run that cannot be a baseline is marked where its figures are: its own line says why.
        runs += [[f"  run {run['run']} {run['run_id']}" + ("" if run["baseline"]["fit"] else " (not a baseline)"),
                  *(_shown(f, run["figures"][op][f]) for f in FIGURES)] for run in counted]  # fmt: skip
        lines += [*_aligned(estimates), *_aligned(runs)]
    return lines


def print_summary(differences: list[str], records: list[RunRecord], interrupted: bool) -> dict[str, Any]:
    """The statistics on the console; the summary document returned."""
    summary = summarize(records)
    counted = sum(run["counted"] for run in summary["runs"])
    print()
    if interrupted:
        print(
            f"mqusers repeat: interrupted after {len(records)} run(s); statistics of the {counted} measured to"
            " their end"
        )
    for run in summary["runs"]:
        if not run["counted"]:
            print(f"run {run['run']} {run['run_id']} not counted: {run['why'] or run['status']}")
    if not counted:
        print("mqusers repeat: no run measured to its end with intervals: no statistics")
    else:
        for said in ("how the runs differ: " + "; ".join(differences), f"statistics: {METHOD}"):
            print(textwrap.fill(said, WIDTH, subsequent_indent="  "))
        if counted == 1:
            print("one run: its interval shows the noise within that run only, not from run to run")
        print("\n".join(table_lines(summary)))
    print(textwrap.fill(baseline_line(summary), WIDTH, subsequent_indent="  "))
    return summary


def write_outputs(summary: dict[str, Any], records: list[RunRecord], json_path: str, html_path: str) -> None:
    """The summary document to --json and the runs' page to --html, each when asked."""
    if json_path:
        Path(json_path).write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
        print(f"mqusers repeat: wrote {json_path}")
    if html_path:
        runs = [(Path(r.report), r.document) for r in records if r.document is not None]
        write_trend(html_path, runs, summary, source=f"mqusers repeat: runs in {summary.get('results')}")
        print(f"mqusers repeat: wrote {html_path}")
