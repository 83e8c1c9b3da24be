"""mqusers/stats: interval samples read from run JSONs, headline figures equal hdrh's, and the bootstrap's
intervals checked against simulated runs whose truth is known."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram

from mqusers.measure.book import new_histogram
from mqusers.report.runfiles import load_runs
from mqusers.stats.bootstrap import SAME, differences, estimates, verdict
from mqusers.stats.figures import FIGURES, PERCENTILES, headline
from mqusers.stats.samples import (
    Run,
    RunFileError,
    common_operations,
    run_from_document,
    slot_values_us,
    whole,
)
from tests.unit.synthetic_runs import document, interval_latencies, run, samples

OPERATION = "receive /queue/x"


def test_slot_values_are_hdrhs_highest_equivalent_values() -> None:
    histogram = new_histogram()
    indexes = np.arange(0, 23_000, 7)
    expected = [histogram.get_highest_equivalent_value(histogram.get_value_from_index(int(i))) for i in indexes]
    assert slot_values_us(indexes).tolist() == expected


def test_headline_figures_equal_the_merged_histograms_after_the_warm_up() -> None:
    rng = np.random.default_rng(3)
    doc = document(interval_latencies(rng, 12, 400, 2.0), warmup=3)
    figures = headline(run_from_document(doc, "a.json").operations[OPERATION])
    rows = doc["intervals"]["operations"][OPERATION][3:]
    merged = new_histogram()
    for row in rows:
        merged.add(HdrHistogram.decode(row[4]))
    assert figures["throughput"] == sum(row[2] for row in rows) / sum(row[1] for row in rows)
    for name, percentile in PERCENTILES.items():
        assert figures[name] == merged.get_value_at_percentile(percentile) / 1000.0


def test_identical_runs_say_no_significant_difference_at_the_stated_confidence() -> None:
    # 200 simulated pairs from one process (autocorrelated intervals): at 95 % each figure should call about 5 %
    # of them different; the bootstrap with ~10 blocks a run is known to run a little narrow, so >= 88 %
    # (the binomial's standard deviation over 200 pairs is 1.5 %).
    rng = np.random.default_rng(1)
    same = dict.fromkeys(FIGURES, 0)
    for seed in range(200):
        base, new = (run(interval_latencies(rng, 30, 400, 1.0)) for _ in range(2))
        for figure, found in differences([base], [new], OPERATION, resamples=500, seed=seed).items():
            same[figure] += found.verdict == SAME
    assert all(count >= 176 for count in same.values()), same


def test_a_30_percent_slower_run_is_found_slower() -> None:
    rng = np.random.default_rng(2)
    verdicts: dict[str, list[str]] = {figure: [] for figure in FIGURES}
    covered = dict.fromkeys(FIGURES, 0)
    for seed in range(40):
        base, new = run(interval_latencies(rng, 30, 300, 1.0)), run(interval_latencies(rng, 30, 300, 1.0, scale=1.3))
        for figure, found in differences([base], [new], OPERATION, resamples=500, seed=seed).items():
            verdicts[figure].append(found.verdict)
            covered[figure] += found.low <= 1.3 <= found.high  # every latency is 1.3 times: so is each percentile
    slower = {figure: words.count("slower") for figure, words in verdicts.items()}
    assert all(slower[figure] >= 36 for figure in ("p50", "p90", "p99")), slower
    assert all(covered[figure] >= 34 for figure in ("p50", "p90", "p99", "p99.9")), covered
    assert "faster" not in verdicts["p99.9"]


def test_lower_throughput_is_found_lower() -> None:
    rng = np.random.default_rng(4)
    base, new = run(interval_latencies(rng, 30, 1000, 1.0)), run(interval_latencies(rng, 30, 700, 1.0))
    found = differences([base], [new], OPERATION)["throughput"]
    assert found.verdict == "lower" and found.high < 0.75 and found.low > 0.65
    assert found.one_run_a_side and found.percent[0] == pytest.approx(-30, abs=3)


def test_slivers_cut_by_the_warm_up_and_the_stop_do_not_widen_the_throughput_interval() -> None:
    """CI's shape: 5 s measured after a warm-up, the first interval 22 ms and the last 33 ms; 3,000 msg/s against
    1,800. Resampled as blocks of their own, the slivers set the family-wise interval's ends (BASE read 1,270 to
    3,002 msg/s, the difference -44.6 to +37.9 %: no verdict)."""
    rng = np.random.default_rng(5)

    def sliced(rate: float) -> Run:
        widths = [0.022, 1.0, 1.0, 1.0, 1.0, 1.0, 0.033]
        counts = [rng.poisson(rate * width) for width in widths]
        counts[0] = round(0.42 * rate * widths[0])  # a sliver caught few of its sends
        cut = samples([np.full(count, 1.0) for count in counts])
        return Run("run", "pubsub.py", {OPERATION: whole(replace(cut, seconds=np.array(widths)))})

    base, new = sliced(3000.0), sliced(1800.0)
    found = differences([base], [new], OPERATION, confidence=0.9938)["throughput"]
    assert found.verdict == "lower" and found.high < 0.7, found


def test_an_interval_shorter_than_half_the_median_joins_its_neighbour() -> None:
    def widths(seconds: list[float]) -> list[float]:
        cut = samples([np.full(int(100 * width), 1.0) for width in seconds])
        joined = whole(replace(cut, seconds=np.array(seconds)))
        assert joined.counts.sum() == cut.counts.sum() and joined.slots.sum() == cut.slots.sum()  # nothing dropped
        return [round(float(width), 3) for width in joined.seconds]

    assert widths([0.022, 1, 1, 1, 1, 1, 0.033]) == [1.022, 1, 1, 1, 1.033]
    assert widths([0.69, 1, 1, 1, 1, 0.29]) == [0.69, 1, 1, 1, 1.29]
    assert widths([0.2, 1]) == [1.2] and widths([1, 1, 1]) == [1, 1, 1] and widths([0.3]) == [0.3]


def test_several_runs_a_side_see_run_to_run_noise() -> None:
    # Each run's level differs by ~15 % (run-to-run noise): one run a side mistakes it for a difference far
    # more often than 5 %, five runs a side (resampled as runs, then blocks) keep to about the confidence.
    rng = np.random.default_rng(5)
    single = several = 0
    for seed in range(60):
        sides = [[run(interval_latencies(rng, 20, 200, float(np.exp(rng.normal(0, 0.15))))) for _ in range(5)]
                 for _ in range(2)]  # fmt: skip
        single += differences(sides[0][:1], sides[1][:1], OPERATION, resamples=500, seed=seed)["p50"].verdict == SAME
        several += differences(sides[0], sides[1], OPERATION, resamples=500, seed=seed)["p50"].verdict == SAME
    assert single <= 40 and several >= 54, (single, several)


def test_an_estimate_is_the_median_of_the_runs_with_their_spread() -> None:
    rng = np.random.default_rng(6)
    runs = [run(interval_latencies(rng, 20, 200, level)) for level in (1.0, 1.2, 1.5)]
    found = estimates(runs, OPERATION, seed=1)["p50"]
    own = sorted(headline(r.operations[OPERATION])["p50"] for r in runs)
    assert found.point == own[1] and found.spread == (own[0], own[2]) and found.runs == 3
    assert found.low <= found.point <= found.high
    assert estimates(runs, OPERATION, seed=1) == estimates(runs, OPERATION, seed=1)  # a fixed seed repeats


def test_a_ten_minute_run_compares_in_well_under_seconds() -> None:
    rng = np.random.default_rng(7)
    base, new = (run_from_document(document(interval_latencies(rng, 600, 1000, 1.0)), "r") for _ in range(2))
    began = time.perf_counter()
    differences([base], [new], OPERATION, resamples=2000)
    assert time.perf_counter() - began < 3.0


def test_the_verdicts_words() -> None:
    assert verdict("p99", 1.12, 1.3, 0.1) == "slower" and verdict("p99", 1.05, 1.3, 0.1) == SAME
    assert verdict("p50", 0.7, 0.8, 0.0) == "faster" and verdict("throughput", 0.7, 0.8, 0.1) == "lower"
    assert verdict("throughput", 1.01, 1.02, 0.0) == "higher" and verdict("throughput", 0.9, 1.1, 0.0) == SAME


def test_bad_run_files_are_named_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(RunFileError, match=r"^old.json: no \"intervals\""):
        run_from_document({"kind": "run"}, "old.json")
    with pytest.raises(RunFileError, match="no such file or folder"):
        load_runs([str(tmp_path / "missing.json")])
    with pytest.raises(RunFileError, match="a folder with no run JSON"):
        load_runs([str(tmp_path)])
    rng = np.random.default_rng(8)
    (tmp_path / "a.json").write_text(json.dumps(document(interval_latencies(rng, 3, 10, 1.0))))
    (tmp_path / "b.json").write_text(json.dumps(document(interval_latencies(rng, 3, 10, 1.0), locustfile="queue.py")))
    (tmp_path / "c.json").write_text(json.dumps(document(interval_latencies(rng, 3, 10, 1.0), operation="send /q")))
    (tmp_path / "d.json").write_text("{")
    assert [r.name for r in load_runs([str(tmp_path / "a.json"), str(tmp_path / "b.json")])] == [
        str(tmp_path / "a.json"), str(tmp_path / "b.json")]  # fmt: skip
    with pytest.raises(RunFileError, match="not a readable JSON"):
        load_runs([str(tmp_path)])
    a, b, c = (load_runs([str(tmp_path / f"{name}.json")]) for name in "abc")
    with pytest.raises(RunFileError, match=r"ran queue\.py"):
        common_operations(a, b)
    with pytest.raises(RunFileError, match="have no operation in common"):
        common_operations(a, c)
    with pytest.raises(RunFileError, match=r"\(one side's runs\) differ in: receive /queue/x, send /q"):
        common_operations([*a, *c], a)
    assert common_operations(a, a) == ["receive /queue/x"]
