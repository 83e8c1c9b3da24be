"""The report's failover section: outages per destination, latency during and outside them, faults.

Computed once per run from the merged outages (:mod:`mqusers.measure.outages`), the per-second
series and the fault schedule's records; the console summary, the JSON (``failover``, ``faults``)
and the HTML report read it.
"""

from __future__ import annotations

from typing import Any

from mqusers.measure.outages import Outage, describe, latency_split, summarize, window_ns, windows
from mqusers.measure.series import Series
from mqusers.run.faults import FaultRecord, fault_line

#: Outages listed one by one in the JSON (all are counted; the worst are kept).
LISTED = 200


def failover_document(outages: list[Outage], overflow: int, series: Series, end_ns: int) -> dict[str, Any]:
    """The JSON report's ``failover``: empty lists when no connection dropped."""
    spans = windows(outages, end_ns)
    rows = []
    for row in summarize(outages, end_ns):
        latency = latency_split(series.traffic.get(row.destination, {}), spans[row.destination], series.width_s)
        rows.append({**row.document(), "latency_ms": latency,
                     "windows": [{"start_ns": s, "end_ns": e} for s, e in spans[row.destination]]})  # fmt: skip
    worst = sorted(outages, key=lambda o: window_ns(o, end_ns), reverse=True)[:LISTED]
    return {
        "outages": len(outages) + overflow,
        "worst_window_ms": max((window_ns(o, end_ns) / 1e6 for o in outages), default=None),
        "destinations": rows,
        "listed": [{**o, "window_ms": window_ns(o, end_ns) / 1e6} for o in sorted(worst, key=lambda o: o["lost_ns"])],
        "not_kept": overflow,
        "lines": [describe(o, end_ns) for o in outages if o["first_ok_ns"] == -1][:LISTED],
    }


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def failover_table(failover: dict[str, Any]) -> list[list[str]]:
    """The summary's failover table, per destination; empty when no connection dropped."""
    if not failover.get("outages"):
        return []
    table = [["failover", "drops", "reconn", "producer win ms", "consumer win ms", "reconnect ms", "after ready ms",
              "p99 during", "p99 outside"]]  # fmt: skip
    for row in failover["destinations"]:
        win, latency = row["window_max_ms"], row["latency_ms"]
        table.append([row["destination"], str(row["outages"]), str(row["reconnects"]), _ms(win.get("producer")),
                      _ms(win.get("consumer")), _ms(row["reconnect_max_ms"]), _ms(row["after_ready_max_ms"]),
                      _p99(latency["during"]), _p99(latency["outside"])])  # fmt: skip
    return table


def failover_notes(failover: dict[str, Any], faults: list[FaultRecord]) -> list[str]:
    """One line per fault, the run's worst window, and each client that did not come back."""
    lines = [fault_line(record) for record in faults]
    if failover.get("outages"):
        worst = failover["worst_window_ms"]
        lines.append(f"failover: {failover['outages']:,} connection drop(s), the longest window without service "
                     f"{worst:,.0f} ms (windows: last good operation to first after)")  # fmt: skip
        lines += failover["lines"]
    return lines


def _p99(figures: dict[str, Any]) -> str:
    p99 = figures.get("p99_ms")
    return "-" if p99 is None else f"{p99:,.3f}"
