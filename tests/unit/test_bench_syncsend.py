"""benchmarks/syncsend.py without a broker: (h)'s runs in the round, goref's command, the verdicts against go."""

from __future__ import annotations

import argparse
from typing import Any

from benchmarks import syncsend
from benchmarks.goref import BINARY


def options() -> argparse.Namespace:
    return argparse.Namespace(host="stomp://127.0.0.1:61613", messages=100_000, sync_messages=20_000,
                              size_bytes=1024, timeout=120.0, paced_rate=2000.0, paced_seconds=10.0)  # fmt: skip


def test_go_runs_right_after_mqusers_and_only_when_built() -> None:
    assert syncsend.with_go(["raw", "sync", "startup"], ready="") == ["raw", "sync", "go-sync", "startup"]
    assert syncsend.with_go(["raw", "sync"], ready="no Go toolchain") == ["raw", "sync"]
    assert syncsend.with_go(["raw"], ready="") == ["raw"]


def test_both_sides_send_the_sync_count_and_await_each_receipt() -> None:
    go = syncsend.go_command(options(), "/queue/q")
    assert go[0] == str(BINARY) and go[-1] == "-receipts"
    assert go[go.index("-messages") + 1] == "20000" and go[go.index("-rate") + 1] == "0"
    mine = syncsend.child_command(options(), "/queue/q")
    assert mine[mine.index("--mode") + 1] == "sync" and mine[mine.index("--messages") + 1] == "20000"


def result(rate: float, per_cpu: float) -> dict[str, Any]:
    return {"msg_per_s": rate, "msg_per_cpu_s": per_cpu}


def test_the_median_ratio_per_figure_is_judged_against_go() -> None:
    mine = [result(5000, 9000), result(5200, 9100), result(4800, 8800)]
    go = [result(5000, 9500), result(5000, 9400), result(5000, 9600)]
    lines, verdicts = syncsend.report_lines({"sync": mine, "go-sync": go})
    assert verdicts == [True, False]  # msg/s 1.00 [0.96-1.04] met; msg/CPU-s 0.95 missed
    assert "msg/s" in lines[2] and "target >= 1: met" in lines[2] and "MISSED" in lines[3]


def test_no_verdict_without_go() -> None:
    lines, verdicts = syncsend.report_lines({"sync": [result(5000, 9000)]})
    assert verdicts == [] and len(lines) == 1
