"""The comparison's HTML page (``mqusers compare --html``): per operation, each figure's BASE, NEW, the difference
with its interval drawn on a bar, and the verdict, in the run report's styles; it fits a laptop and a phone."""

from __future__ import annotations

import math
import os
from html import escape
from typing import Any

from mqusers.report.comparison import difference_text, family_text, sides_text
from mqusers.report.htmlpage import page
from mqusers.report.htmltables import Html, facts, number, table
from mqusers.stats.evidence import TOO_FEW


def _side(side: dict[str, Any], unit: str) -> Html:
    shown = number(side["point"], unit)
    if side["runs"] > 1:
        shown += f"<br><small>{number(side['min'], unit)}-{number(side['max'], unit)}</small>"
    return Html(shown, numeric=True)


def _bar(figure: dict[str, Any], scale: float) -> Html:
    """The interval of the difference on an axis from -scale to +scale percent, zero marked."""

    def at(percent: float) -> float:
        return 50.0 + 50.0 * max(-1.0, min(1.0, percent / scale))

    if not math.isfinite(figure["difference_low_pct"]) or figure["verdict"] == TOO_FEW:
        return Html("")  # no interval to draw
    low, high = at(figure["difference_low_pct"]), at(figure["difference_high_pct"])
    return Html(f'<span class="ci" title="{escape(difference_text(figure))}"><span style="left:{low:.1f}%;'
                f'width:{max(high - low, 0.5):.1f}%"></span><i style="left:{at(figure["difference_pct"]):.1f}%">'
                "</i></span>")  # fmt: skip


def _verdict(words: str) -> Html:
    return Html(f'<span class="change-{words.split()[0]}">{escape(words)}</span>')


def _interval(figure: dict[str, Any]) -> str:
    if figure["verdict"] == TOO_FEW:
        return "-"
    return f"{figure['difference_low_pct']:+,.1f} to {figure['difference_high_pct']:+,.1f}"


def _section(operation: str, figures: dict[str, Any], confidence: str) -> str:
    drawn = [f for f in figures.values() if f["verdict"] != TOO_FEW and math.isfinite(f["difference_low_pct"])]
    scale = max([10.0, *(max(abs(f["difference_low_pct"]), abs(f["difference_high_pct"])) for f in drawn)])
    # The verdict beside the figure's name: the first thing read, on a phone too (the table scrolls sideways).
    rows = [[name, _verdict(figure["verdict"]),
             _side(figure["base"], figure["unit"]), _side(figure["new"], figure["unit"]),
             Html(f"{figure['difference_pct']:+,.1f}", numeric=True),
             Html(_interval(figure), numeric=True),
             _bar(figure, scale)]
            for name, figure in figures.items()]  # fmt: skip
    header = ["figure", "verdict", "base", "new", "difference %", f"{confidence} interval %", f"±{scale:,.0f} %"]
    return f"<section><h2>{escape(operation)}</h2>{table(header, rows, 'comparison')}</section>"


def render_comparison(document: dict[str, Any]) -> str:
    confidence = f"{document['confidence'] * 100:g} %"
    each = f"{document['each_confidence'] * 100:.4g} %"
    said = facts([("compared", sides_text(document)), ("confidence", confidence), ("verdicts", family_text(document)),
                  ("tolerance", f"±{document['tolerance'] * 100:g} %"), ("resamples", f"{document['resamples']:,}"),
                  ("method", document["method"])])  # fmt: skip
    warnings = "".join(f'<p class="note warning">warning: {escape(w)}</p>' for w in document["warnings"])
    notes = warnings + "".join(f'<p class="note">{escape(note)}</p>' for note in document["notes"])
    body = "".join(_section(op, figures, each) for op, figures in document["operations"].items())
    files = ", ".join(escape(os.path.basename(path)) for path in (*document["base"], *document["new"]))
    # No charts: the intervals are drawn as bars in the tables.
    return page("mqusers comparison: NEW against BASE", f'<p class="source">{files}</p>{said}{notes}', body,
                {"documents": [], "titles": []})  # fmt: skip


def write_comparison_html(path: str, document: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(render_comparison(document))
