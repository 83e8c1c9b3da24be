"""A destination pattern in the report: its audit folded into one row, its worst destinations, its distributions.

The audit judges every destination on its own (lost, duplicated, reordered per destination); the
report shows a pattern as one row (the sum of its destinations' figures, beside the book's row of
its label) and one section (:func:`pattern_section`): how many destinations were sent to and read,
the :data:`WORST` destinations (most lost, then most unreceived, then highest p99), and the
distribution (min, p50, p90, max) of the destinations' own p99 and receive rate (over the pattern's span)
(:mod:`mqusers.measure.perdestination`), instead of a row per destination.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from mqusers.audit.audit import FIGURES, SUB_FIGURES
from mqusers.measure.perdestination import DestinationFigures
from mqusers.measure.totals import rate
from mqusers.options.destpattern import Pattern, label_of, patterns_in
from mqusers.report.figures import figure

#: The worst destinations a section names.
WORST = 10
#: The points of each distribution.
QUANTILES = {"min": 0.0, "p50": 0.5, "p90": 0.9, "max": 1.0}
#: A worst destination's columns, from the audit and the spread.
WORST_FIGURES = ("sent", "received", "lost", "unreceived", "duplicated", "reordered")
_SUMMED = ("sessions", "drops", "foreign", "other_run", *SUB_FIGURES)


def fold_verdict(verdict: Mapping[str, dict[str, Any]], labels: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The verdict with each pattern among ``labels`` as one entry: its destinations' figures summed,
    its subscriptions' figures summed per subscriber (one entry per consumer, not per destination);
    ``copies``: messages delivered per message sent (each topic destination's subscriptions, weighed by its sends)."""
    patterns = patterns_in(labels)
    if not patterns:
        return dict(verdict)
    out: dict[str, dict[str, Any]] = {}
    weights: dict[str, list[int]] = {}
    for destination, figures in verdict.items():
        label = label_of(destination, patterns)
        if label == destination:
            out[destination] = figures
            continue
        folded = out.setdefault(label, {"kind": figures["kind"], "by_subscription": []})
        kinds = {folded["kind"], figures["kind"]} - {None}
        folded["kind"] = kinds.pop() if len(kinds) == 1 else "mixed" if kinds else None
        for key, value in figures.items():
            if isinstance(value, int) and not isinstance(value, bool):
                folded[key] = folded.get(key, 0) + value
        folded["by_subscription"] = _by_subscriber(folded["by_subscription"], figures["by_subscription"])
        topic = sum(s["kind"] == "topic" for s in figures["by_subscription"])
        weight = weights.setdefault(label, [0, 0])
        weight[0] += figures["sent"] * max(1, topic)
        weight[1] += figures["sent"]
    for label, (delivered, sent) in weights.items():
        out[label]["copies"] = max(1, round(delivered / sent)) if sent else 1
    return out


def _by_subscriber(mine: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keyed = {s["key"]: s for s in mine}
    for sub in theirs:
        own = keyed.get(sub["key"])
        if own is None:
            keyed[sub["key"]] = dict(sub)
        else:
            for key in _SUMMED:
                own[key] = own.get(key, 0) + sub.get(key, 0)
    return sorted(keyed.values(), key=lambda s: str(s["key"]))


def destination_table(
    pattern: Pattern,
    verdict: Mapping[str, dict[str, Any]],
    figures: Mapping[str, DestinationFigures],
    max_ms: float | None = None,
) -> list[dict[str, Any]]:
    """A line per destination of the pattern the audit or the spread knows, in the pattern's order:
    the audit's :data:`~mqusers.audit.audit.FIGURES` (``received``: distinct seqs), ``deliveries``
    (timed ones), p50 and p99 (ms) and the receive rate.

    Each destination's rate is over the pattern's receive span (its first delivery to its last, of
    any destination), so destinations compare: one of a few deliveries in a burst is not 1,000 msg/s.
    ``max_ms``: the pattern's exact maximum latency (the book's): no destination's slot top reads above it.
    """

    def capped(ms: float | None) -> float | None:
        return None if ms is None else ms if max_ms is None else min(ms, max_ms)

    own = [f for d, f in figures.items() if pattern.index_of(d) is not None]
    span_s = (max(f["last_ns"] for f in own) - min(f["first_ns"] for f in own)) / 1e9 if own else 0.0
    rows = []
    for destination in sorted({*verdict, *figures}, key=lambda d: pattern.index_of(d) or 0):
        if pattern.index_of(destination) is None:
            continue
        audit, spread = verdict.get(destination, {}), figures.get(destination)
        row: dict[str, Any] = {"destination": destination, **{key: audit.get(key, 0) for key in FIGURES}}
        row["deliveries"] = spread["received"] if spread else 0
        row["p50_ms"] = capped(spread["p50_ms"]) if spread else None
        row["p99_ms"] = capped(spread["p99_ms"]) if spread else None
        row["receive_rate_msgs"] = rate(spread["received"], span_s) if spread else 0.0
        rows.append(row)
    return rows


def pattern_section(pattern: Pattern, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A pattern's section from its :func:`destination_table`: counts of destinations, the worst, and
    the distributions of p99 and rate."""
    worst = sorted(rows, key=lambda r: (-r["lost"], -r["unreceived"], -(r["p99_ms"] or 0.0), r["destination"]))
    p99s = [r["p99_ms"] for r in rows if r["p99_ms"] is not None]
    return {
        "pattern": pattern.label,
        "destinations": len(pattern),
        "sent_to": sum(r["sent"] > 0 for r in rows),
        "subscribed": sum(r["subscriptions"] > 0 for r in rows),
        "with_loss": sum(r["lost"] > 0 for r in rows),
        "worst": [
            {key: r[key] for key in ("destination", *WORST_FIGURES, "p99_ms", "receive_rate_msgs")}
            for r in worst[:WORST]
        ],
        "p99_ms": distribution(p99s),
        "receive_rate_msgs": distribution([r["receive_rate_msgs"] for r in rows]),
    }


def distribution(values: Sequence[float]) -> dict[str, float | None]:
    """min, p50, p90 and max of ``values`` (nearest rank); every point None when there are none."""
    ordered = sorted(values)
    if not ordered:
        return dict.fromkeys(QUANTILES)
    return {name: ordered[max(0, math.ceil(q * len(ordered)) - 1)] for name, q in QUANTILES.items()}


def pattern_tables(
    max_ms: Mapping[str, float | None], verdict: Mapping[str, dict[str, Any]], figures: Mapping[str, DestinationFigures]
) -> dict[str, list[dict[str, Any]]]:
    """The :func:`destination_table` of each pattern among the report's rows (``max_ms``: each row's
    exact maximum latency, by destination or label), by label."""
    return {label: destination_table(pattern, verdict, figures, max_ms.get(label))
            for label, pattern in patterns_in(list(max_ms)).items()}  # fmt: skip


def pattern_sections(tables: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The section of each pattern's table."""
    found = patterns_in(list(tables))
    return [pattern_section(found[label], rows) for label, rows in tables.items()]


def section_lines(section: dict[str, Any]) -> list[list[list[str]] | str]:
    """The console's lines of a section: a sentence, the worst destinations' table, the distributions' table."""

    head = (f"{section['pattern']}: {section['destinations']:,} destinations, {section['sent_to']:,} sent to, "
            f"{section['subscribed']:,} subscribed, {section['with_loss']:,} with loss; the worst "
            f"{len(section['worst'])} (most lost, then unreceived, then p99):")  # fmt: skip
    worst = [["destination", "sent", "received", "lost", "unreceived", "dup", "reord", "p99 ms", "recv/s"]]
    worst += [[r["destination"], *(f"{r[k]:,}" for k in WORST_FIGURES), figure(r["p99_ms"], 3),
               figure(r["receive_rate_msgs"], 1)] for r in section["worst"]]  # fmt: skip
    spread = [["per destination", *QUANTILES]]
    spread.append(["p99 ms", *(figure(section["p99_ms"][q], 3) for q in QUANTILES)])
    spread.append(["recv/s", *(figure(section["receive_rate_msgs"][q], 1) for q in QUANTILES)])
    return [head, worst, spread]
