"""benchmarks/findmax_agreement.py's judging without a broker: a rerun for a latency-only failure, the tolerance."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from benchmarks.findmax_agreement import Plain, agreement, judged

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


def plain_limit(limit: float) -> tuple[list[float], Callable[[float], Plain]]:
    """Plain runs that keep up below ``limit`` and fall behind from it; the rates asked, and the run."""
    asked: list[float] = []

    def run(at: float) -> Plain:
        asked.append(at)
        return Plain(at, at if at < limit else 0.5 * at, 0, 5.0)

    return asked, run


@pytest.mark.parametrize(
    ("limit", "agreed", "asked"),
    [
        (10_500.0, True, [10_000.0, 10_000.0 / 0.9]),  # L just above A: within
        (10_800.0, True, [10_000.0, 10_000.0 / 0.9]),  # A is 7 % under L: within 10 %
        (9_500.0, True, [10_000.0, 10_000.0 / 1.1, 10_000.0 / 0.9]),  # A is 5 % over L: within 10 %
        (11_500.0, False, [10_000.0, 10_000.0 / 0.9, 12_111.1]),  # A 13 % under: the ladder says by how much
        (8_800.0, False, [10_000.0, 10_000.0 / 1.1, 8_090.9]),  # A 14 % over
    ],
)
def test_the_answer_agrees_when_within_the_tolerance_of_the_plain_limit_either_side(
    limit: float, agreed: bool, asked: list[float]
) -> None:
    rates, run = plain_limit(limit)
    verdict, line = agreement(run, 10_000.0, BOUND_MS, 0.10)
    assert verdict is agreed and line.startswith("AGREE" if agreed else "DISAGREE")
    assert [round(r, 1) for r in rates] == [round(r, 1) for r in asked]
