"""The maximum-rate search and a step's verdict, on a model broker and hand-made reports."""

from __future__ import annotations

import math
from typing import Any

import pytest

from mqusers.capacity import _masked, find_max
from mqusers.findmax import Step, curve_points, curve_rates, judge, search


def report(
    sent_rate: float, *, lost: int = 0, unreceived: int = 0, errors: int = 0, lag_p99: float = 0.2,
    verdict: str = "ok", p99: float = 1.5, cpu: float = 95.0,
) -> dict[str, Any]:  # fmt: skip
    row = {"destination": "/queue/a", "sent": 1000, "throughput_msgs": sent_rate,
           "throughput_mbit": sent_rate * 8 / 1e6,
           "lost": lost, "unreceived": unreceived, "errors": errors,
           "latency_ms": {"p50": 0.4, "p99": p99, "p999": 3.0, "max": 9.0}}  # fmt: skip
    lag = {"name": "schedule-lag /queue/a", "count": 1000, "errors": 0, "latency_ms": {"p99": lag_p99}}
    process = {"verdict": verdict, "cpu_percent_max": cpu}
    generator = {"verdict": verdict, "processes": {"local": process}}
    return {"destinations": [row], "operations": [lag], "generator": generator, "drain": {"seconds": 0.3}}


def test_a_step_is_sustained_only_when_every_condition_holds() -> None:
    assert judge(report(995.0), 1000.0, 5.0).sustained
    cases = {
        "< 99% of 1,000": report(980.0),
        "3 lost or never received": report(1000.0, lost=1, unreceived=2),
        "2 errors": report(1000.0, errors=2),
        "schedule lag p99 7.00 ms > 5 ms": report(1000.0, lag_p99=7.0),
        "generator saturated": report(1000.0, verdict="saturated"),
    }
    for reason, document in cases.items():
        step = judge(document, 1000.0, 5.0)
        assert not step.sustained and reason in step.reason, (reason, step.reason)
        assert step.limit == ("generator" if "generator" in reason else "broker")
    assert judge(report(1000.0), 1000.0, 5.0).p99_ms == 1.5
    starved = judge(report(1000.0, verdict="saturated", cpu=40.0), 1000.0, 5.0)
    assert not starved.sustained and starved.limit == "machine"  # loop lag with CPU to spare
    assert judge({"destinations": []}, 1000.0, 5.0).reason.startswith("nothing was sent")


def model(capacity: float, generator: float = math.inf, calls: list[float] | None = None) -> Any:
    """A broker that sustains up to ``capacity`` msg/s, a generator that manages ``generator``."""

    def run_step(rate: float) -> Step:
        if calls is not None:
            calls.append(rate)
        if rate > generator:
            return Step(rate, sustained=False, reason="generator saturated", limit="generator")
        return Step(
            rate, achieved=min(rate, capacity), sustained=rate <= capacity, limit="" if rate <= capacity else "broker"
        )

    return run_step


@pytest.mark.parametrize("capacity", [730.0, 5_000.0, 17_300.0, 123_456.0])
def test_the_search_brackets_the_capacity_within_five_percent_in_ten_steps(capacity: float) -> None:
    found = search(model(capacity), 1000.0, steps=10)
    assert found.max_rate is not None and capacity / 1.05 <= found.max_rate <= capacity, found
    assert len(found.steps) <= 10 and found.limit == ""
    assert all(s.sustained == (s.rate <= capacity) for s in found.steps)


def test_the_generator_failing_stops_the_search_and_says_so() -> None:
    found = search(model(50_000.0, generator=9_000.0), 1000.0)
    assert found.limit == "generator" and found.max_rate == 8_000.0
    assert "the generator, not the broker" in found.ended and "--processes" in found.ended


def test_ceiling_steps_and_budget_bound_the_search() -> None:
    calls: list[float] = []
    assert search(model(1e9, calls=calls), 1000.0, ceiling=3000.0).ended.startswith("sustained the ceiling")
    assert calls == [1000.0, 2000.0, 3000.0]
    assert len(search(model(1e9), 1000.0, steps=4).steps) == 4
    ticks = iter(range(0, 1000, 100))
    spent = search(model(10_000.0), 1000.0, budget_s=250, clock=lambda: float(next(ticks)))
    assert spent.ended == "time budget spent" and len(spent.steps) == 2


def test_curve_points_and_no_password_in_a_saved_plan() -> None:
    assert curve_rates(2000.0, [10, 50, 100]) == [(10, 200.0), (50, 1000.0), (100, 2000.0)]
    args = ["--mq-size", "1KB", "--mq-password", "s3cret", "--mq-password=other"]
    assert _masked(args) == ["--mq-size", "1KB", "--mq-password", "***", "--mq-password=***"]


def test_master_and_expect_workers_go_together() -> None:
    for args in (["--master"], ["--expect-workers", "2"]):
        with pytest.raises(SystemExit, match="--master and --expect-workers"):
            find_max(["-f", __file__, "--host", "stomp://127.0.0.1:1", *args])


def test_a_failure_on_the_lag_alone_is_confirmed_before_it_counts() -> None:
    assert judge(report(1000.0, lag_p99=7.0), 1000.0, 5.0).lag_only
    assert not judge(report(980.0, lag_p99=7.0), 1000.0, 5.0).lag_only
    flaky = iter([True, False])  # the first run at 4,000 stalls once, its rerun holds

    def run_step(rate: float) -> Step:
        if rate == 4000.0 and next(flaky):
            return Step(rate, reason="schedule lag p99 9 ms > 5 ms", limit="broker", lag_only=True)
        return model(10_000.0)(rate)

    found = search(run_step, 4000.0, steps=10)
    assert [s.rate for s in found.steps][:3] == [4000.0, 4000.0, 8000.0]
    assert found.max_rate is not None and found.max_rate >= 9_500.0


def test_a_curve_point_failed_on_the_lag_alone_is_run_again_and_the_rerun_stands() -> None:
    stalls = iter([False, True, False, False])  # the 50 % point stalls once; its rerun holds

    def run_step(percent: float, rate: float) -> Step:
        if next(stalls):
            return Step(rate, reason="schedule lag p99 9 ms > 5 ms", limit="broker", lag_only=True)
        return model(10_000.0)(rate)

    points = curve_points(run_step, 2000.0, [25, 50, 100])
    assert [(p["percent"], p["offered"], p["sustained"]) for p in points] == [
        (25, 500.0, True), (50, 1000.0, True), (100, 2000.0, True)
    ]  # fmt: skip
    assert [p["rerun_after"] for p in points] == [None, "schedule lag p99 9 ms > 5 ms", None]
    broker_fails = curve_points(lambda percent, rate: model(1500.0)(rate), 2000.0, [100])
    assert not broker_fails[0]["sustained"] and broker_fails[0]["rerun_after"] is None  # not lag: not rerun


def test_a_failure_at_the_offered_rate_is_bisected_not_walked_down() -> None:
    """Failing on latency or lag with the offer achieved says nothing about where the limit is."""

    def run_step(rate: float) -> Step:
        held = rate <= 11_000.0
        return Step(rate, achieved=rate * 0.995, sustained=held, limit="" if held else "broker")

    found = search(run_step, 4000.0, steps=10)
    assert found.max_rate is not None and 11_000 / 1.05 <= found.max_rate <= 11_000.0
    assert len(found.steps) <= 7, [s.rate for s in found.steps]
