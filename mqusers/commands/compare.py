"""``mqusers compare BASE NEW``: NEW's throughput and latency percentiles against BASE's, each difference with its
confidence interval and a verdict, on the console and optionally as JSON and HTML (docs/compare.md).

BASE and NEW are each a run JSON (``--mq-report-json``) or a folder of them (one side's repeated runs). Bad
input (a missing file, a JSON without ``"intervals"``, runs of other locustfiles or with no operation in
common) is one line, exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from mqusers.report.baselinefit import unfit_reasons
from mqusers.report.comparison import compare_runs, format_comparison
from mqusers.report.htmlcompare import write_comparison_html
from mqusers.report.runfiles import load_runs
from mqusers.stats.bootstrap import CONFIDENCE, RESAMPLES
from mqusers.stats.samples import Run, RunFileError


def _fraction(low: float, high: float, what: str) -> type[float]:
    """A parser for a value given in percent, kept as a fraction within ``[low, high]``."""

    def parse(text: str) -> float:
        try:
            value = float(text.rstrip("%")) / 100.0
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what}: {text!r} is not a number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{what}: {text} is not within {low * 100:g}-{high * 100:g} %")
        return value

    return parse  # type: ignore[return-value]


def parser() -> argparse.ArgumentParser:
    made = argparse.ArgumentParser(prog="mqusers compare", description="NEW against BASE: differences with confidence "
                                   "intervals and verdicts (docs/compare.md)")  # fmt: skip
    made.add_argument("base", help="BASE: a run JSON (--mq-report-json) or a folder of them (one side's runs)")
    made.add_argument("new", help="NEW: a run JSON or a folder of them")
    made.add_argument("--confidence", type=_fraction(0.5, 0.999, "--confidence"), default=CONFIDENCE,
                      metavar="PERCENT", help="the intervals' confidence, in percent (default 95)")  # fmt: skip
    made.add_argument("--tolerance", type=_fraction(0.0, 1.0, "--tolerance"), default=0.0, metavar="PERCENT",
                      help="differences whose interval lies within ±PERCENT do not count (default 0)")  # fmt: skip
    made.add_argument("--per-figure", action="store_true",
                      help="each interval at --confidence (default: the whole table, family-wise)")  # fmt: skip
    made.add_argument("--resamples", type=int, default=RESAMPLES, help=f"bootstrap resamples (default {RESAMPLES:,})")
    made.add_argument("--seed", type=int, default=0, help="the resampling's seed: the same inputs give the same output")
    made.add_argument("--json", metavar="PATH", help="write the comparison as JSON")
    made.add_argument("--html", metavar="PATH", help="write the comparison as an HTML page")
    return made


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    if not 100 <= args.resamples <= 100_000:
        return _refuse(f"--resamples {args.resamples}: between 100 and 100,000")
    for path in (args.json, args.html):
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            return _refuse(f"{path}: its folder does not exist")
    try:
        base, new = load_runs([args.base], unfit_reasons), load_runs([args.new], unfit_reasons)
        family, unfit = not args.per_figure, {"base": _unfit(base), "new": _unfit(new)}
        document = compare_runs(base, new, args.confidence, args.tolerance, args.resamples, args.seed, family, unfit)
    except RunFileError as error:
        return _refuse(str(error))
    print(format_comparison(document))
    written = []
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2, sort_keys=True)
            handle.write("\n")
        written.append(args.json)
    if args.html:
        write_comparison_html(args.html, document)
        written.append(args.html)
    if written:
        print(f"files written: {', '.join(written)}")
    return 0


def _unfit(runs: list[Run]) -> dict[str, list[str]]:
    """Each of a side's runs that lost messages, had a contended or saturated generator or ended early: why."""
    return {run.name: list(run.said) for run in runs if run.said}


def _refuse(line: str) -> int:
    sys.stderr.write(f"mqusers compare: {line}\n")
    return 2
