"""mqusers/stats/evidence and compare's family: no verdict from too little data, and chance verdicts counted and
held to the stated confidence for the whole table (simulated runs whose truth is known)."""

from __future__ import annotations

import numpy as np

from mqusers.report.comparison import compare_runs
from mqusers.stats.bootstrap import SAME, differences
from mqusers.stats.evidence import MIN_INTERVALS, TOO_FEW, Evidence, enough, samples_needed, zero_width
from mqusers.stats.samples import Run
from tests.unit.synthetic_runs import interval_latencies, run, samples

OPERATION = "receive /queue/x"


def test_the_rule_counts_intervals_and_samples_above_each_percentile() -> None:
    assert [samples_needed(f) for f in ("throughput", "p50", "p90", "p99", "p99.9")] == [0, 20, 100, 1_000, 10_000]
    assert enough("p99", Evidence(MIN_INTERVALS, 1_000), Evidence(30, 50_000))
    assert not enough("p99", Evidence(MIN_INTERVALS, 999), Evidence(30, 50_000))
    assert not enough("throughput", Evidence(MIN_INTERVALS - 1, 50_000), Evidence(30, 50_000))
    assert zero_width(1.2, 1.2) and zero_width(float("nan"), 1.0) and not zero_width(1.1, 1.3)


def test_four_samples_in_one_interval_get_no_verdict_however_far_apart() -> None:
    # The defect: a connect measured 4 times in one second read "+237.0 % (+237.0 to +237.0) higher".
    rng = np.random.default_rng(11)
    base, new = run([rng.lognormal(0, 0.1, 4)]), run([3.4 * rng.lognormal(0, 0.1, 4)])
    found = differences([base], [new], OPERATION)
    assert {d.verdict for d in found.values()} == {TOO_FEW}
    assert found["p50"].evidence == (Evidence(1, 4), Evidence(1, 4))


def test_a_tail_percentile_waits_for_its_samples_while_the_median_is_judged() -> None:
    rng = np.random.default_rng(12)
    base, new = run(interval_latencies(rng, 20, 250, 1.0)), run(interval_latencies(rng, 20, 250, 1.0, scale=2.0))
    found = differences([base], [new], OPERATION)  # ~5,000 samples a side: p99 yes, p99.9 no
    assert found["p50"].verdict == "slower" and found["p99"].verdict == "slower"
    assert found["p99.9"].verdict == TOO_FEW


def test_a_zero_width_interval_is_no_verdict() -> None:
    # Every latency the same in every interval: the resamples cannot vary, so the data shows nothing of the noise.
    base = run([np.full(400, 1.0) for _ in range(20)])
    new = run([np.full(400, 2.0) for _ in range(20)])
    found = differences([base], [new], OPERATION)
    assert found["p50"].low == found["p50"].high and found["p50"].verdict == TOO_FEW


def _two_operations(rng: np.random.Generator) -> Run:
    return Run("r", "pubsub.py", {name: samples(interval_latencies(rng, 30, 400, 1.0))
                                  for name in ("receive /queue/x", "send /queue/x")})  # fmt: skip


def test_identical_runs_hold_a_chance_verdict_in_few_tables_family_wise() -> None:
    # 10 figures at 95 % each: identical runs carry some verdict in far more than 5 % of tables; family-wise, in
    # about 5 % (a one-run block bootstrap of ~10 blocks runs a little narrow: 5 of these 60, 12 of 120 pairs in
    # docs/compare.md's simulation). Seeded: the bounds say what the docs claim, not the binomial's luck.
    rng = np.random.default_rng(13)
    any_each = any_family = chance = 0
    for seed in range(60):
        base, new = _two_operations(rng), _two_operations(rng)
        each = compare_runs([base], [new], resamples=1000, seed=seed, family=False)
        family = compare_runs([base], [new], resamples=1000, seed=seed)
        assert each["figures"]["judged"] == family["figures"]["judged"] == 10
        assert family["each_confidence"] == 1 - 0.05 / 10 and each["each_confidence"] == 0.95
        any_each += each["figures"]["verdicts"] > 0
        any_family += family["figures"]["verdicts"] > 0
        chance += each["figures"]["verdicts"]
    assert any_each >= 2 * any_family and any_family <= 6, (any_each, any_family, chance)
    assert 0.25 <= chance / 60 <= 1.0, chance  # by_chance says 0.5 a table: 10 figures x 5 %


def test_a_real_difference_is_still_found_family_wise() -> None:
    rng = np.random.default_rng(14)
    base = run(interval_latencies(rng, 30, 400, 1.0))
    new = run(interval_latencies(rng, 30, 400, 1.0, scale=1.3))
    table = compare_runs([base], [new])["operations"][OPERATION]
    assert [table[f]["verdict"] for f in ("p50", "p90", "p99")] == ["slower"] * 3
    assert table["throughput"]["verdict"] == SAME
