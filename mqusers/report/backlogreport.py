"""The report's backlog section: a backlog run's phases, build then drain, in words and a table.

Read from the JSON's ``backlog`` (:meth:`mqusers.measure.backlogfigures.BacklogFigures.document`) and the
``receive-backlog`` / ``receive-new`` operations' latency; the console summary and the HTML report show it.
With ``--mq-priorities``, a table per priority: deliveries, inversions, the ``receive-p<k>`` latency.
"""

from __future__ import annotations

from typing import Any

from mqusers.measure.names import RECEIVE_BACKLOG, RECEIVE_NEW, RECEIVE_PRIORITY, split_event_name


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:,.3f}"


def _latency(operations: list[dict[str, Any]], operation: str) -> str:
    """p50 / p99 / max ms of one of the backlog's operations (summed over destinations: one here)."""
    for op in operations:
        if split_event_name(op["name"])[0] == operation and op["count"]:
            figures = op["latency_ms"]
            return " / ".join(f"{figures.get(key, 0):,.1f}" for key in ("p50", "p99", "max"))
    return "-"


def phase_table(backlog: dict[str, Any], operations: list[dict[str, Any]]) -> list[list[str]]:
    """One row per phase: how long, how many, how fast, and the latency of its messages."""
    drain_rate = backlog["drain_rate_msgs"]
    return [
        ["phase", "seconds", "messages", "msg/s", "latency p50 / p99 / max ms", "ended by"],
        ["build", _s(backlog["build_s"]), f"{backlog['at_switch']:,}", "-", "-", backlog["switch_reason"] or "-"],
        ["drain (backlog)", _s(backlog["time_to_empty_s"]), f"{backlog['drained']:,}",
         "-" if drain_rate is None else f"{drain_rate:,.0f}", _latency(operations, RECEIVE_BACKLOG),
         "empty" if backlog["time_to_empty_s"] is not None else "not emptied"],
        ["drain (new)", "-", f"{backlog['new']:,}", "-", _latency(operations, RECEIVE_NEW), "-"],
    ]  # fmt: skip


def backlog_sentence(backlog: dict[str, Any]) -> str:
    """The drain over time, in one sentence: the per-second counts' peak and the first seconds."""
    per_second = backlog["drain_per_second"]
    shown = ", ".join(f"{n:,}" for n in per_second[:10]) + (", ..." if len(per_second) > 10 else "")
    paced = f", paced at {backlog['drain_rate_asked']:,g} msg/s" if backlog.get("drain_rate_asked") else ""
    blocked = backlog.get("blocked_sends") or {}
    flow = (f"; sends blocked by the broker: {blocked['build']:,} while building, {blocked['drain']:,} while "
            "draining" if blocked.get("build") or blocked.get("drain") else "")  # fmt: skip
    return (f"backlog: {backlog['at_switch']:,} messages at the switch ({backlog['switch_reason']}), emptied in "
            f"{_s(backlog['time_to_empty_s'])} s{paced}; drained per second: {shown or '-'} (peak "
            f"{backlog['peak_drain_rate_msgs']:,}/s){flow}")  # fmt: skip


def priority_table(backlog: dict[str, Any], operations: list[dict[str, Any]]) -> list[list[str]] | None:
    """One row per priority, highest first: deliveries, inversions, latency; None without priorities."""
    priority = backlog.get("priority")
    if not priority:
        return None
    rows = [["priority", "received", "inversions", "latency p50 / p99 / max ms"]]
    for level in reversed(range(priority["levels"])):
        value = priority["priorities"][level]
        rows.append([str(value), f"{priority['received'][level]:,}", f"{priority['inversions'][level]:,}",
                     _latency(operations, f"{RECEIVE_PRIORITY}{value}")])  # fmt: skip
    return rows


def priority_sentence(backlog: dict[str, Any]) -> str | None:
    """The inversions in words; None without priorities."""
    priority = backlog.get("priority")
    if not priority:
        return None
    received = sum(priority["received"])
    capped = f" (order kept for all but {priority['beyond_cap']:,})" if priority["beyond_cap"] else ""
    consumers = ", ".join(f"{n:,}" for n in priority["inversions_per_consumer"])
    return (
        f"priority: {priority['inversions_total']:,} inversions in {received:,} deliveries{capped}: a lower "
        f"priority delivered while a higher one of the backlog waited (per consumer: {consumers})"
    )
