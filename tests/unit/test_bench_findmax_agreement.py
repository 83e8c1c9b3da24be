"""benchmarks/findmax_agreement.py's judging of plain runs without a broker: a rerun for a latency-only failure."""

from __future__ import annotations

import pytest

from benchmarks.findmax_agreement import Plain, judged

BOUND_MS = 20.0


def judge(rate: float, *dues: float, lost: int = 0, short: bool = False) -> tuple[Plain, list[float]]:
    """``judged`` over runs whose due p99s are ``dues`` in turn; the result and the rates asked."""
    asked: list[float] = []

    def run(at: float) -> Plain:
        asked.append(at)
        return Plain(at, 0.9 * at if short else at, lost, dues[len(asked) - 1])

    return judged(run, rate, BOUND_MS), asked


def test_a_run_within_the_bound_stands_alone() -> None:
    result, asked = judge(8000.0, 12.0)
    assert result.keeps_up(BOUND_MS) and asked == [8000.0]


@pytest.mark.parametrize(("dues", "keeps_up"), [((35.0, 12.0), True), ((35.0, 41.0), False)])
def test_a_latency_only_failure_is_run_again_and_the_second_run_stands(
    dues: tuple[float, float], keeps_up: bool
) -> None:
    result, asked = judge(8000.0, *dues)
    assert asked == [8000.0, 8000.0] and result.keeps_up(BOUND_MS) is keeps_up


@pytest.mark.parametrize(("lost", "short"), [(3, False), (0, True)])
def test_a_loss_or_a_shortfall_is_not_run_again(lost: int, short: bool) -> None:
    result, asked = judge(8000.0, 35.0, lost=lost, short=short)
    assert asked == [8000.0] and not result.keeps_up(BOUND_MS)
