"""cluster-compare's latency column: paced runs on each configuration, the medians of their receive p50 and p99.

Unpaced runs measure throughput, and their latency is queueing; what a network hop costs is the latency of a
message that finds no queue. So each configuration also runs ``--repeats`` paced runs of the non-persistent
scheme at ``--latency-rate`` msg/s, each as long as the grid's (``--steady-after`` left out, then
``--seconds``); its row holds the medians of their p50 and p99 and, from the second row on, each against the
first row's (listed first: the single broker), which is what the hop adds.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from typing import Any


def run_args(rate: float, steady_after: float, seconds: float) -> list[str]:
    """A latency run's options: paced at ``rate`` in all, ``seconds`` after its left-out start."""
    left_out = ["--mq-warmup", f"{steady_after:g}"] if steady_after else []
    return ["-t", f"{math.ceil(steady_after + seconds)}s", "--mq-total-rate", f"{rate:g}", *left_out]


def run_figures(report: dict[str, Any]) -> dict[str, Any] | None:
    """One latency run's p50 and p99 (ms) and what it lost; None when it received nothing."""
    [row] = report.get("destinations") or [{}]
    latency = row.get("latency_ms") or {}
    if latency.get("p50") is None:
        return None
    return {"p50_ms": latency["p50"], "p99_ms": latency.get("p99"), "received": row.get("received", 0),
            "lost": row.get("lost", 0)}  # fmt: skip


def measured(runs: list[dict[str, Any]], rate: float) -> dict[str, Any]:
    """The row's latency cell: the medians of its runs' p50 and p99, and the runs."""
    if not runs:
        return {"rate": rate, "p50_ms": None, "p99_ms": None, "runs": []}
    median: Callable[[str], float] = lambda key: statistics.median(r[key] for r in runs)  # noqa: E731
    return {"rate": rate, "p50_ms": median("p50_ms"), "p99_ms": median("p99_ms"), "runs": runs}


def with_hops(rows: list[dict[str, Any]]) -> None:
    """Each row's latency against the first row's (``hop_p50_ms``, ``hop_p99_ms``), where both were measured."""
    first = (rows[0].get("latency") or {}) if rows else {}
    for row in rows[1:]:
        cell = row.get("latency") or {}
        for key in ("p50_ms", "p99_ms"):
            if cell.get(key) is not None and first.get(key) is not None:
                cell[f"hop_{key}"] = cell[key] - first[key]


def cell_text(cell: dict[str, Any] | None) -> tuple[str, str]:
    """``0.412 (+0.104)`` for p50 and p99: the median, and the hop against the first row when there is one."""
    if not cell or cell.get("p50_ms") is None:
        return "-", "-"

    def text(key: str) -> str:
        hop = cell.get(f"hop_{key}")
        return f"{cell[key]:,.3f}" + ("" if hop is None else f" ({hop:+,.3f})")

    return text("p50_ms"), text("p99_ms")
