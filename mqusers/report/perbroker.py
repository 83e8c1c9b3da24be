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


def spread_table(rows: list[dict[str, Any]]) -> list[list[str]]:
    """The console's table, one line per destination and broker with its share of the destination's
    deliveries; empty when no subscription named its broker."""
    table = [["consumers at", *COLUMNS, "share"]]
    for row in rows:
        brokers = row.get("by_broker") or []
        whole = sum(b["received"] for b in brokers)
        for b in brokers:
            share = f"{100.0 * b['received'] / whole:.1f} %" if whole else "-"
            table.append([f"{row['destination']} {b['broker']}", *(count(b[key]) for key in COLUMNS), share])
    return table if len(table) > 1 else []
