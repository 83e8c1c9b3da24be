"""NEW against BASE as one document (per operation and figure: both sides, the difference, its interval, the
verdict) and its console table; ``mqusers compare``, the HTML page and the regression gate read it.

The statistics are :mod:`mqusers.stats.bootstrap`'s; this module only arranges and words them.
"""

from __future__ import annotations

from typing import Any

from mqusers.report.reportformats import render_table, wrap
from mqusers.stats.bootstrap import (
    CONFIDENCE,
    ONE_RUN_NOTE,
    RESAMPLES,
    SAME,
    Difference,
    Estimate,
    differences,
    family_wise,
)
from mqusers.stats.evidence import TOO_FEW, enough, evidence, rule
from mqusers.stats.figures import FIGURES, UNITS
from mqusers.stats.samples import Run, common_operations

METHOD = (
    "bootstrap of the runs' intervals: runs resampled with replacement when a side has several, then circular "
    "blocks of consecutive intervals within each run; the point is the median over a side's runs; a verdict "
    "only when the whole interval of NEW / BASE lies beyond the tolerance (docs/compare.md)"
)


def _side(estimate: Estimate) -> dict[str, Any]:
    return {"point": estimate.point, "low": estimate.low, "high": estimate.high, "min": estimate.spread[0],
            "max": estimate.spread[1], "runs": estimate.runs}  # fmt: skip


def _figure(found: Difference) -> dict[str, Any]:
    percent, low, high = found.percent
    return {"unit": UNITS[found.figure], "base": _side(found.base), "new": _side(found.new), "ratio": found.ratio,
            "ratio_low": found.low, "ratio_high": found.high, "difference_pct": percent,
            "difference_low_pct": low, "difference_high_pct": high, "verdict": found.verdict,
            "evidence": {"base": found.evidence[0].as_dict(), "new": found.evidence[1].as_dict()}}  # fmt: skip


def compare_runs(
    base: list[Run],
    new: list[Run],
    confidence: float = CONFIDENCE,
    tolerance: float = 0.0,
    resamples: int = RESAMPLES,
    seed: int = 0,
    family: bool = True,
    unfit: dict[str, dict[str, list[str]]] | None = None,
) -> dict[str, Any]:
    """The comparison document of two sides' operations in common (:func:`mqusers.stats.samples.common_operations`).

    ``family``: ``confidence`` holds for the whole table (each interval at :func:`family_wise`'s confidence over the
    figures with data enough for a verdict), so identical runs show no verdict at all in about ``confidence`` of
    comparisons; otherwise each interval is at ``confidence`` and chance verdicts grow with the table. ``unfit``:
    per side (``base``, ``new``) the runs that lost messages, had a contended or saturated generator or ended
    early, and why (:mod:`mqusers.report.baselinefit`): each a warning, said first."""
    operations, common = {}, common_operations(base, new)
    judged = sum(enough(figure, evidence(base, op), evidence(new, op)) for op in common for figure in FIGURES)
    each = family_wise(confidence, judged) if family else confidence
    for operation in common:
        found = differences(base, new, operation, each, resamples, seed, tolerance)
        operations[operation] = {figure: _figure(found[figure]) for figure in FIGURES}
    one_run = len(base) == 1 or len(new) == 1
    apart = sorted((set(base[0].operations) | set(new[0].operations)) - set(common))
    notes = [f"not compared, measured by one side only: {', '.join(apart)}"] if apart else []
    verdicts = [f for figures in operations.values() for f in figures.values() if f["verdict"] not in (SAME, TOO_FEW)]
    return {
        "kind": "compare",
        "base": [run.name for run in base],
        "new": [run.name for run in new],
        "confidence": confidence,
        "family_wise": family,
        "each_confidence": each,
        "tolerance": tolerance,
        "resamples": resamples,
        "seed": seed,
        "method": METHOD,
        "figures": {"judged": judged, "verdicts": len(verdicts), "by_chance": judged * (1.0 - each)},
        "unfit": {side: dict((unfit or {}).get(side, {})) for side in ("base", "new")},
        "warnings": _unfit_notes(unfit or {}),
        "notes": [
            *notes,
            *_too_few_notes(operations),
            *([ONE_RUN_NOTE] if one_run else []),
        ],
        "operations": operations,
    }


def _unfit_notes(unfit: dict[str, dict[str, list[str]]]) -> list[str]:
    """BASE's runs that cannot be a baseline, and NEW's with the same faults: each named with why."""
    said = {"base": "not a baseline: a difference from it says as much about BASE as about NEW",
            "new": "its figures are not the broker's alone"}  # fmt: skip
    return [f"{side.upper()} {name}: {'; '.join(reasons)}: {said[side]}"
            for side in ("base", "new") for name, reasons in unfit.get(side, {}).items()]  # fmt: skip


def _too_few_notes(operations: dict[str, dict[str, Any]]) -> list[str]:
    """One note naming the figures without a verdict for want of data, and the rule."""
    named = []
    for operation, figures in operations.items():
        few = [name for name, figure in figures.items() if figure["verdict"] == TOO_FEW]
        if few:
            held = figures[few[0]]["evidence"]
            data = "; ".join(f"{side.upper()} {_count(held[side]['intervals'], 'interval')}, "
                             f"{_count(held[side]['samples'], 'sample')}" for side in ("base", "new"))  # fmt: skip
            what = "every figure" if len(few) == len(figures) else ", ".join(few)
            named.append(f"{operation}: {what} ({data})")
    return [f"too few samples for a verdict: {'; '.join(named)}; {rule()}"] if named else []


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def family_text(document: dict[str, Any]) -> str:
    """How many verdicts the table holds and how many chance alone would give, at the confidence it was read at."""
    found, confidence = document["figures"], f"{document['confidence'] * 100:g} %"
    held = f"{_count(found['verdicts'], 'verdict')} among {_count(found['judged'], 'figure')} judged"
    each = f"{document['each_confidence'] * 100:.4g} %"
    if document["family_wise"]:
        chance = f"{100 - document['confidence'] * 100:.3g} %"
        return (f"{held}; family-wise: if nothing changed, about {chance} of such tables would hold any verdict "
                f"(each interval at {each}; --per-figure for {confidence} each)")  # fmt: skip
    return (f"{held}, each at {confidence}: if nothing changed, about {found['by_chance']:.1f} of them would "
            "still read slower, faster, higher or lower by chance (the default, family-wise, holds the whole table "
            f"to {confidence})")  # fmt: skip


def _value(value: float, unit: str) -> str:
    return f"{value:,.1f}" if unit == "msg/s" else f"{value:,.3f}"


def _side_text(side: dict[str, Any], unit: str) -> str:
    shown = _value(side["point"], unit)
    return shown if side["runs"] == 1 else f"{shown} ({_value(side['min'], unit)}-{_value(side['max'], unit)})"


def difference_text(figure: dict[str, Any]) -> str:
    """``+12.3 % (+8.1 to +16.0)``: the difference of NEW from BASE and its interval (none where the data holds
    too little for one)."""
    if figure["verdict"] == TOO_FEW:
        return f"{figure['difference_pct']:+,.1f} %"
    return (f"{figure['difference_pct']:+,.1f} % ({figure['difference_low_pct']:+,.1f} to "
            f"{figure['difference_high_pct']:+,.1f})")  # fmt: skip


def sides_text(document: dict[str, Any]) -> str:
    def side(paths: list[str]) -> str:
        return paths[0] if len(paths) == 1 else f"{len(paths)} runs ({paths[0]} ...)"

    return f"BASE {side(document['base'])} against NEW {side(document['new'])}"


def format_comparison(document: dict[str, Any]) -> str:
    """The console's table per operation, with the method and the notes in sentences."""
    confidence = f"{document['confidence'] * 100:g} %"
    tolerance = f"; differences within ±{document['tolerance'] * 100:g} % do not count" if document["tolerance"] else ""
    lines = [wrap(f"mqusers compare: {sides_text(document)}, {confidence} confidence{tolerance}")]
    lines += [wrap(f"warning: {warning}") for warning in document["warnings"]]
    each = f"{document['each_confidence'] * 100:.4g} %"
    several = len(document["base"]) > 1 or len(document["new"]) > 1
    for operation, figures in document["operations"].items():
        header = [operation, "base", "new", f"difference ({each} interval)", "verdict"]
        rows = [header] + [
            [f"{name} {figure['unit']}", _side_text(figure["base"], figure["unit"]),
             _side_text(figure["new"], figure["unit"]), difference_text(figure), figure["verdict"]]
            for name, figure in figures.items()
        ]  # fmt: skip
        lines += ["", render_table(rows)]
    lines.append("")
    if several:
        lines.append(wrap("base and new: the median of a side's runs (their lowest-highest)"))
    lines += [wrap(f"verdicts: {family_text(document)}"), wrap(f"method: {document['method']}"),
              *(wrap(f"note: {note}") for note in document["notes"])]  # fmt: skip
    return "\n".join(lines)
