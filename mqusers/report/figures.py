"""How a figure reads in text: one number format per kind, thousands separators, "-" for none."""

from __future__ import annotations


def count(value: int) -> str:
    return f"{value:,}"


def rate(value: float) -> str:
    return f"{value:,.1f}"


def mbit(value: float) -> str:
    return f"{value:,.2f}"


def seconds(value: float) -> str:
    return f"{value:,.3f}"  # a put-only burst's send span can be a few ms


def ms(value: float | None) -> str:
    return figure(value, 3)


def figure(value: float | None, digits: int = 0) -> str:
    """``value`` with ``digits`` decimals; "-" when there is none (a table cell with no figure)."""
    return "-" if value is None else f"{value:,.{digits}f}"
