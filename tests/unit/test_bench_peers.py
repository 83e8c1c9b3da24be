"""benchmarks/peers.py without brokers: its refusals, its table's ratios and goals, the tools' figures read."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks import java_peers
from benchmarks.common import BenchError
from benchmarks.peers import goals, parse_args, table


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--brokers", "artemis,kafka"], "--brokers: kafka; known: artemis, activemq6"),
        (["--brokers", ","], "--brokers: none given"),
        (["--size", "big"], "'big' is not a size"),
        (["--rate", "0"], "must be positive"),
        (["--timeout", "-1"], "must be positive"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse_args(argv)
    assert exit_info.value.code == 2
    assert says in capsys.readouterr().err


def test_defaults_are_the_issues_workload() -> None:
    options = parse_args([])
    assert options.broker_list == ["artemis", "activemq6"]
    assert (options.rate, options.seconds, options.messages, options.size_bytes) == (10_000, 10, 100_000, 1024)


def row(tool: str, msg_per_s: float, cpu_s: float, latency: tuple[float, float] | None) -> dict[str, Any]:
    figures = {"p50": latency[0], "p99": latency[1]} if latency else None
    base = {"broker": "artemis", "load": "10,000/s x 10s", "tool": tool, "messages": 100_000}
    return {**base, "msg_per_s": msg_per_s, "cpu_s": cpu_s, "latency_ms": figures}


def test_the_table_divides_each_figure_by_mqusers_on_the_same_broker_and_load() -> None:
    rows = [
        row("mqusers", 10_000, 10.0, (0.2, 1.0)),
        row("perf", 9_000, 5.0, (0.1, 2.0)),
        row("producer", 9_500, 20.0, None),
    ]
    header, mqusers, perf, producer = (re.split(r"\s{2,}", line) for line in table(rows))
    assert header[:3] == ["broker", "load", "tool"]
    assert header[-4:] == ["x msg/s", "x msg/CPU-s", "x p50", "x p99"]
    assert mqusers[-8:] == ["10,000", "10,000", "0.200", "1.000", "1.00", "1.00", "1.00", "1.00"]
    assert perf[-8:] == ["9,000", "20,000", "0.100", "2.000", "0.90", "2.00", "0.50", "2.00"]
    assert producer[-8:] == ["9,500", "5,000", "n/a", "n/a", "0.95", "0.50", "n/a", "n/a"]
    assert len({len(line) for line in table(rows)[:3]}) == 1  # columns aligned


def test_the_goals_say_met_missed_and_why_not_applicable() -> None:
    rows = [
        row("mqusers", 10_000, 10.0, (0.25, 1.0)),
        row("perf", 9_000, 5.0, (0.1, 2.0)),
        row("producer", 9_500, 20.0, None),
    ]
    said = goals(rows, "10,000/s x 10s")
    assert said == [
        "artemis 10,000/s x 10s: mqusers msg/CPU-s >= perf's: MISSED",
        "artemis 10,000/s x 10s: mqusers p50 within 0.1 ms of the peer's: MISSED (+0.150 ms)",
        "artemis 10,000/s x 10s: mqusers msg/CPU-s >= producer's: met",
        "artemis 10,000/s x 10s: p50 within 0.1 ms: n/a, producer reports no latency",
    ]
    assert goals(rows, "all-out x 100,000")[1:] == ["artemis 10,000/s x 10s: mqusers msg/CPU-s >= producer's: met"]


def perf_samples(sent: int, received: int) -> str:
    interval = {"sampleType": "interval", "warmup": False, "sent": 10_000, "received": 10_000}
    transfer = {
        "mean": "1.0",
        "50": 150,
        "90": 400,
        "99": 900,
        "99.9": 2000,
        "99.99": 3000,
        "max": 4000,
        "count": received,
    }
    summary = {"sampleType": "summary", "result": "success", "totalSent": sent, "totalReceived": received}
    return json.dumps([interval, {**summary, "totalTransferTime": transfer}])


def test_artemis_perf_figures_are_its_summarys_in_milliseconds() -> None:
    figures = java_peers.artemis_figures(perf_samples(30_000, 30_000), 3)
    assert figures == {"messages": 30_000, "msg_per_s": 10_000, "latency_ms": {"p50": 0.15, "p99": 0.9}}


def test_an_artemis_run_that_lost_messages_is_an_error() -> None:
    with pytest.raises(BenchError, match="29999 of 30000 sent received"):
        java_peers.artemis_figures(perf_samples(30_000, 29_999), 3)


def test_a_tool_past_its_deadline_is_killed_and_its_cpu_is_its_own(tmp_path: Path) -> None:
    busy = java_peers.Child([sys.executable, "-c", "while True: pass"], tmp_path / "busy.log")
    with pytest.raises(BenchError, match="did not finish by its deadline and was killed"):
        busy.wait(time.monotonic() + 0.5, "busy")
    with pytest.raises(ProcessLookupError):
        os.kill(busy.proc.pid, 0)
    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
    before = java_peers.children_cpu_s()
    status = java_peers.Child([sys.executable, "-c", spin], tmp_path / "spin.log").wait(time.monotonic() + 30, "spin")
    assert status == 0
    assert 0.3 <= java_peers.children_cpu_s() - before < 0.3 + 0.5  # its CPU (start-up included), not this process's
