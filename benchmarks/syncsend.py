"""(h) in benchmarks/core.py: sync sends, mqusers against the compiled reference on the same pattern.

Each SEND asks the broker for a RECEIPT and the producer waits for it before its next send (one in
flight), as rabbitmq/omq's STOMP publisher does: the round trip, not the client's CPU, sets the rate,
and what a client adds to each round trip shows in both figures. mqusers runs (b)'s producer and
consumer with ``--mq-receipts true --mq-in-flight 1``; goref (benchmarks/goref/) with ``-receipts``;
the same N, size and broker, interleaved in each round. Target (issue 37, item 3): mqusers at least
as many msg/s and msg per CPU-s as goref, per round, median of the rounds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from typing import Any

from benchmarks import goref
from benchmarks.common import spread

LABELS = {"sync": "(h) mqusers sync sends", "go-sync": "(h) go sync sends"}
TARGET_RATIO = 1.0


def with_go(kinds: list[str], ready: str) -> list[str]:
    """``kinds`` with goref's sync run after mqusers' when (h) runs and goref is built (``ready`` empty)."""
    if "sync" not in kinds or ready:
        return kinds
    at = kinds.index("sync") + 1
    return [*kinds[:at], "go-sync", *kinds[at:]]


def child_command(options: argparse.Namespace, queue: str) -> list[str]:
    """mqusers' side: benchmarks/mq_locust.py in its sync mode."""
    return [sys.executable, "-m", "benchmarks.mq_locust", "--mode", "sync", "--host", options.host,
            "--messages", str(options.sync_messages), "--rate", "0", "--destination", queue,
            "--size", str(options.size_bytes), "--timeout", str(options.timeout)]  # fmt: skip


def go_command(options: argparse.Namespace, queue: str) -> list[str]:
    """goref's side: all out at N with a RECEIPT awaited per SEND."""
    sync = argparse.Namespace(**{**vars(options), "messages": options.sync_messages})
    return [*goref.command("go", sync, queue), "-receipts"]


def report_lines(results: dict[str, list[dict[str, Any]]]) -> tuple[list[str], list[bool]]:
    """(h)'s lines and its two verdicts (msg/s and msg/CPU-s against goref); no verdict without both sides."""
    mine, go = results.get("sync"), results.get("go-sync")
    lines: list[str] = []
    for kind, runs in (("sync", mine), ("go-sync", go)):
        if runs:
            wall, cpu = spread([r["msg_per_s"] for r in runs]), spread([r["msg_per_cpu_s"] for r in runs])
            lines.append(f"  {LABELS[kind]:<26} wall {wall} msg/s   {cpu} msg/CPU-s")
    if not (mine and go):
        return lines, []
    verdicts = []
    for what, key in (("msg/s", "msg_per_s"), ("msg/CPU-s", "msg_per_cpu_s")):
        ratios = [a[key] / b[key] for a, b in zip(mine, go, strict=True)]
        ok = statistics.median(ratios) >= TARGET_RATIO
        verdicts.append(ok)
        lines.append(f"  {'(h) mqusers/go sync ' + what:<44} {spread(ratios, '{:.2f}')}   target >= "
                     f"{TARGET_RATIO:g}: {'met' if ok else 'MISSED'}")  # fmt: skip
    return lines, verdicts
