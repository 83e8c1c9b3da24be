"""benchmarks/startup.py without a broker: (g)'s summary line, its target, and its absence when it did not run."""

from __future__ import annotations

from typing import Any

from benchmarks import startup


def result(cpu_s: float, floor_s: float = 0.35) -> dict[str, Any]:
    return {"kind": "startup", "messages": 1, "process_cpu_s": cpu_s, "sys_s": 0.05, "wall_s": 1.2,
            "import_locust_cpu_s": floor_s}  # fmt: skip


def test_the_median_of_the_rounds_meets_the_target_or_is_missed() -> None:
    lines, ok = startup.report_lines({"startup": [result(0.44), result(0.62), result(0.48)]})
    assert ok is True and len(lines) == 1
    assert "0.48 [0.44" in lines[0] and "target <= 0.5: met" in lines[0] and "import locust alone 0.35" in lines[0]
    lines, ok = startup.report_lines({"startup": [result(0.52), result(0.51), result(0.47)]})
    assert ok is False and "MISSED" in lines[0]


def test_a_benchmark_without_g_has_no_line_and_no_verdict() -> None:
    assert startup.report_lines({"raw": []}) == ([], None)


def test_a_round_says_what_is_above_the_import() -> None:
    text = startup.describe(result(0.47, floor_s=0.33))
    assert "0.47 CPU-s start to exit" in text and "import locust alone 0.33 CPU-s" in text and "0.14 above it" in text
