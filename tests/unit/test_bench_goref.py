"""benchmarks/goref.py without a broker or Go: goref's line read, its command, (f) left out, the side-by-side rows."""

from __future__ import annotations

import argparse
import json
import re
from typing import Any

import pytest

from benchmarks import goref
from benchmarks.common import BenchError


def line(**changes: Any) -> str:
    figures = {"sent": 1000, "received": 1000, "wall_s": 0.5, "msgs_per_s": 2000.0, "cpu_s": 0.25, "sys_s": 0.1}
    latency = {"p50_ms": 0.2, "p90_ms": 0.3, "p99_ms": 0.9, "p999_ms": 1.5, "max_ms": 2.0, "late_max_ms": 0.05}
    return json.dumps({**figures, **latency, **changes})


def test_the_line_becomes_a_result_in_cores_shape() -> None:
    parsed = goref.parse_line("go: noise before\n" + line() + "\n")
    result = goref.to_result("go-paced", parsed, process_cpu_s=0.4)
    assert result["kind"] == "go-paced"
    assert (result["messages"], result["received"], result["msg_per_s"]) == (1000, 1000, 2000.0)
    assert (result["cpu_s"], result["sys_s"], result["process_cpu_s"]) == (0.25, 0.1, 0.4)
    assert result["msg_per_cpu_s"] == 4000.0
    assert result["latency_ms"] == {"p50": 0.2, "p90": 0.3, "p99": 0.9, "p999": 1.5, "max": 2.0}


@pytest.mark.parametrize(
    ("stdout", "says"),
    [
        ("", "goref printed no JSON line"),
        ("{not json", "goref's line is not JSON"),
        (line(p99_ms=None, cpu_s="1"), "goref's line lacks cpu_s, p99_ms"),
        (line(received=990), "goref: 990 of 1000 messages arrived"),
        (line(sent=-1, received=5, error="timeout: 1s passed"), "goref: timeout: 1s passed"),
    ],
)
def test_a_line_that_is_missing_short_or_failed_is_one_bench_error(stdout: str, says: str) -> None:
    with pytest.raises(BenchError, match=re.escape(says)):
        goref.parse_line(stdout)


def options(**changes: Any) -> argparse.Namespace:
    values = {"host": "stomp://127.0.0.1:61613", "messages": 100_000, "size_bytes": 1024, "timeout": 120.0}
    return argparse.Namespace(**{**values, "paced_rate": 2000.0, "paced_seconds": 10.0, **changes})


def test_all_out_takes_as_n_and_paced_takes_cs_rate_and_duration() -> None:
    all_out = goref.command("go", options(), "/queue/q")
    paced = goref.command("go-paced", options(paced_rate=5000.0, paced_seconds=2.0), "/queue/q")
    assert all_out[0] == str(goref.BINARY)
    assert all_out[1:5] == ["-host", "127.0.0.1:61613", "-queue", "/queue/q"]
    assert all_out[5:] == ["-messages", "100000", "-size", "1024", "-rate", "0", "-timeout", "120"]
    assert paced[5:9] == ["-messages", "10000", "-size", "1024"]
    assert paced[9:11] == ["-rate", "5000"]


def test_f_is_both_runs_or_left_out_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert goref.with_go(["raw", "go"], ready=lambda: "") == ["raw", "go", "go-paced"]
    assert goref.with_go(["raw"], ready=lambda: "never asked") == ["raw"]
    assert capsys.readouterr().out == ""
    assert goref.with_go(["raw", "go"], ready=lambda: "no Go toolchain") == ["raw"]
    assert capsys.readouterr().out == "(f) go reference left out: no Go toolchain\n"


def result(msg_per_s: float, cpu_s: float, process_cpu_s: float, p50: float = 0.0, p99: float = 0.0) -> dict[str, Any]:
    latency = {"p50": p50, "p99": p99}
    figures = {"msg_per_s": msg_per_s, "msg_per_cpu_s": 1000 / cpu_s, "process_cpu_s": process_cpu_s}
    return {"messages": 1000, "cpu_s": cpu_s, **figures, "latency_ms": latency}


def cells(row: str) -> list[str]:
    return re.split(r"\s{2,}", row.strip())


def test_the_rows_put_mqusers_over_go_beside_mqusers_over_stomp_py_per_round() -> None:
    results = {
        "raw": [result(10_000, 0.5, 1.0), result(10_000, 0.5, 1.0)],
        "mqusers": [result(20_000, 0.1, 0.5), result(30_000, 0.1, 0.5)],
        "go": [result(40_000, 0.2, 0.25), result(40_000, 0.05, 0.25)],
        "paced": [result(2000, 1, 1, 0.30, 1.0), result(2000, 1, 1, 0.40, 2.0)],
        "raw-paced": [result(2000, 1, 1, 0.35, 1.5), result(2000, 1, 1, 0.45, 1.5)],
        "go-paced": [result(2000, 1, 1, 0.25, 0.5), result(2000, 1, 1, 0.25, 0.7)],
    }
    header, wall, measured, whole, p50, p99 = (cells(row) for row in goref.comparison_rows(results))
    assert header == ["mqusers against x, per round", "x = stomp.py (a)/(e)", "x = go (f)"]
    assert wall == ["(b)/x wall msg/s", "2.50 [2.00–3.00]", "0.62 [0.50–0.75]"]  # noqa: RUF001
    assert measured == ["(b)/x msg/CPU-s, measured phase", "5.00 [5.00–5.00]", "1.25 [0.50–2.00]"]  # noqa: RUF001
    assert whole == ["(b)/x msg/CPU-s, whole process", "2.00 [2.00–2.00]", "0.50 [0.50–0.50]"]  # noqa: RUF001
    assert p50 == ["(c)-x paced p50, ms", "-0.050 [-0.050–-0.050]", "+0.100 [+0.050–+0.150]"]  # noqa: RUF001
    assert p99 == ["(c)-x paced p99, ms", "+0.000 [-0.500–+0.500]", "+0.900 [+0.500–+1.300]"]  # noqa: RUF001


def test_without_f_there_are_no_rows_and_a_missing_side_is_na() -> None:
    assert goref.comparison_rows({"raw": [result(1, 1, 1)], "mqusers": [result(2, 1, 1)]}) == []
    rows = goref.comparison_rows({"mqusers": [result(2, 1, 1)], "go": [result(1, 1, 1)]})
    assert cells(rows[1]) == ["(b)/x wall msg/s", "n/a", "2.00 [2.00–2.00]"]  # noqa: RUF001
    assert cells(rows[5]) == ["(c)-x paced p99, ms", "n/a", "n/a"]
    lines = goref.report_lines({"go-paced": [result(2000, 1, 1, 0.25, 0.5)]})
    assert lines[0].startswith("  (f) go paced") and "p50 0.250 [0.250–0.250] ms" in lines[0]  # noqa: RUF001
