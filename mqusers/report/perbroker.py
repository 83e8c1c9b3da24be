"""Consumers per broker of a network: what the subscriptions at each of the consumers' brokers received.

With ``--mq-consumer-host`` the audit knows each subscription's broker; a spread over several brokers
(space-separated) answers how the network balanced a queue's messages, or whether every broker's
subscribers got a topic's. The console, JSON (each destination's ``by_broker``) and HTML say the same.
"""

from __future__ import annotations

from typing import Any

from mqusers.report.figures import count

COLUMNS = ("subscriptions", "received", "duplicated", "lost", "unreceived")


def by_broker(subscriptions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per broker, in address order: its subscriptions and what they received (a queue's: its share of the
    group's deliveries), duplicated, lost and unreceived (a topic's; a queue group's are the destination's),
    and the network-demand probes delivered to them (``probes``: the broker counts them, the audit does not)."""
    totals: dict[str, dict[str, Any]] = {}
    for sub in subscriptions:
        if not sub.get("broker"):
            continue
        at = totals.setdefault(sub["broker"], {"broker": sub["broker"], **dict.fromkeys(COLUMNS, 0)})
        at["subscriptions"] += 1
        for key in COLUMNS[1:]:
            at[key] += sub.get(key, 0)
        at["probes"] = at.get("probes", 0) + sub.get("probes", 0)
    return [totals[broker] for broker in sorted(totals)]


HEADER = ["consumers at", *COLUMNS, "share"]


def spread_rows(rows: list[dict[str, Any]]) -> list[list[Any]]:
    """One row per destination and broker: the two named, its figures, and its share (%) of the destination's
    deliveries (None when there were none)."""
    out = []
    for row in rows:
        brokers = row.get("by_broker") or []
        whole = sum(b["received"] for b in brokers)
        for b in brokers:
            share = 100.0 * b["received"] / whole if whole else None
            out.append([f"{row['destination']} {b['broker']}", *(b[key] for key in COLUMNS), share])
    return out


def spread_table(rows: list[dict[str, Any]]) -> list[list[str]]:
    """The console's table of :func:`spread_rows`; empty when no subscription named its broker."""
    found = spread_rows(rows)
    shown = [[name, *(count(v) for v in values), "-" if share is None else f"{share:.1f} %"]
             for name, *values, share in found]  # fmt: skip
    return [HEADER, *shown] if found else []
