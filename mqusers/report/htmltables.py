"""The HTML report's tables and numbers: one format per kind of figure, the unit in every heading.

A column's heading ends with its unit (``p99 ms``, ``received msg/s``, ``CPU max %``), and the unit
picks the format, so a column never mixes 900.206 and 2,699.8. A heading without a unit is a count
or a word. Every number has thousands separators.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from html import escape
from typing import Any

#: Decimals per unit: latency to the µs the histograms keep, rates to 0.1 msg/s.
UNIT_DECIMALS = {"ms": 3, "msg/s": 1, "Mbit/s": 2, "%": 1, "s": 1, "MB": 1}


class Html(str):
    """A cell already rendered (a link): not escaped again; ``numeric`` aligns it as a number."""

    numeric: bool = False

    def __new__(cls, text: str, numeric: bool = False) -> Html:
        made = super().__new__(cls, text)
        made.numeric = numeric
        return made


def unit_of(heading: str) -> str | None:
    """The unit a heading ends with, or None: a count or a word."""
    last = heading.rsplit(" ", 1)[-1]
    return last if last in UNIT_DECIMALS else None


def number(value: float | int, unit: str | None = None) -> str:
    """``value`` with thousands separators, as many decimals as its unit keeps (none for a count)."""
    if unit is not None:
        return f"{value:,.{UNIT_DECIMALS[unit]}f}"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.3f}".rstrip("0")  # a figure of no declared unit: up to the µs
    return f"{value:,.0f}"


def cell(value: Any, unit: str | None = None) -> str:
    """A ``<td>``: numbers right-aligned and unbroken, words (``class="text"``) free to wrap."""
    if value is None:
        return '<td class="none">-</td>'
    if isinstance(value, Html):
        return f"<td>{value}</td>" if value.numeric else f'<td class="text">{value}</td>'
    if isinstance(value, bool):
        return f'<td class="text">{"yes" if value else "no"}</td>'
    if isinstance(value, int | float):
        return f"<td>{number(value, unit)}</td>"
    text = escape(str(value))
    # A sentence keeps a readable width on a phone instead of a word a line.
    return f'<td class="text long">{text}</td>' if len(text) > 30 else f'<td class="text">{text}</td>'


def _wordy(value: Any) -> bool:
    return isinstance(value, str | bool) and not (isinstance(value, Html) and value.numeric)


def table(header: Sequence[str], rows: Iterable[Sequence[Any]], css: str) -> str:
    rows = [list(row) for row in rows]
    units = [unit_of(str(heading)) for heading in header]
    # A column of words is headed on the left, as its cells are; figures on the right.
    words = [all(_wordy(row[i]) for row in rows if row[i] is not None) for i in range(len(header))]
    head = "".join(f'<th class="text">{escape(str(h))}</th>' if word else f"<th>{escape(str(h))}</th>"
                   for h, word in zip(header, words, strict=True))  # fmt: skip
    body = "".join("<tr>" + "".join(cell(value, unit) for value, unit in zip(row, units, strict=True)) + "</tr>"
                   for row in rows)  # fmt: skip
    # The wrapper scrolls a table wider than a phone, never the page.
    return f'<div class="table"><table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def link(path: Any, figure: float | None = None, unit: str | None = None) -> Html | float | None:
    """A saved report's link, named by its file (the folder in the tooltip), or shown as ``figure``.

    A figure without a path stays a plain number.
    """
    if not path:
        return figure
    text = escape(str(path))
    shown = escape(os.path.basename(str(path))) if figure is None else number(figure, unit)
    return Html(f'<a href="{text}" title="{text}">{shown}</a>', numeric=figure is not None)


def when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def facts(pairs: Iterable[tuple[str, Any]]) -> str:
    """A header's ``<dl>``: what ran, one fact a line; a fact that is None is left out."""
    given = ((name, value) for name, value in pairs if value is not None)
    items = "".join(f"<div><dt>{escape(name)}</dt><dd>{v if isinstance(v, Html) else escape(str(v))}</dd></div>"
                    for name, v in given)  # fmt: skip
    return f'<dl class="what-ran">{items}</dl>'
