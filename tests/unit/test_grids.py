"""The grids' pure parts (mqusers/commands/grids.py): run order, run length, a cell's runs summed up, the noise mark."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import pytest

from mqusers.commands import grids
from mqusers.options.parsing import OptionError
from mqusers.stats.bootstrap import estimate
from mqusers.stats.figures import THROUGHPUT
from mqusers.stats.samples import RunFileError
from tests.unit.synthetic_runs import document, interval_latencies

DESTINATION = "/topic/t"


def test_repeats_go_round_robin_each_starting_one_cell_later() -> None:
    assert grids.interleaved(["a", "b", "c"], 3) == [
        (1, "a"), (1, "b"), (1, "c"),
        (2, "b"), (2, "c"), (2, "a"),
        (3, "c"), (3, "a"), (3, "b"),
    ]  # fmt: skip
    assert grids.interleaved(["a"], 2) == [(1, "a"), (2, "a")]


def test_a_run_lasts_its_left_out_start_then_seconds_or_its_messages_at_the_warm_ups_rate() -> None:
    steady = grids.Steady(warmup_seconds=5, steady_after=3, seconds=20, messages=20_000, repeats=3)
    assert steady.run_seconds(10_000.0) == 3 + 20  # 20,000 messages take 2 s: the minimum duration holds
    assert steady.run_seconds(1_000.0) == 3 + 20  # 20 s exactly
    assert steady.run_seconds(800.0) == 3 + 25  # JDBC durable's pace: as long as the count takes
    assert steady.run_seconds(None) == 23  # no warm-up figure: the duration
    assert steady.run_args(800.0) == ["-t", "28s", "--mq-warmup", "3"]
    assert steady.warmup_args() == ["-t", "5s"]
    assert grids.Steady(5, 0, 20, 1, 3).run_args(None) == ["-t", "20s"]


def _args(**changed: Any) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    grids.add_options(parser, 100)
    return argparse.Namespace(**{**vars(parser.parse_args([])), **changed})


@pytest.mark.parametrize(
    "changed", [{"repeats": 0}, {"messages": 0}, {"seconds": 0}, {"warmup_seconds": 0}, {"steady_after": -1}]
)
def test_bad_grid_options_are_refused(changed: dict[str, Any]) -> None:
    assert grids.steady(_args()) == grids.Steady(10.0, 3.0, 20.0, 100, 3)
    with pytest.raises(OptionError):
        grids.steady(_args(**changed))


def _run(seed: int, per_interval: int, name: str, warmup: int = 2) -> Any:
    rng = np.random.default_rng(seed)
    doc = document(interval_latencies(rng, 12, per_interval, 1.0), warmup=warmup, operation=f"receive {DESTINATION}")
    return doc, grids.steady_run(doc, DESTINATION, name)


def test_a_runs_steady_part_is_its_receives_after_its_warm_up() -> None:
    doc, run = _run(1, 300, "r.json", warmup=4)
    rows = doc["intervals"]["operations"][f"receive {DESTINATION}"]
    assert list(run.operations) == [grids.OPERATION]
    assert grids.throughput(run) == sum(r[2] for r in rows[4:]) / sum(r[1] for r in rows[4:])
    assert grids.throughput(run) != sum(r[2] for r in rows) / sum(r[1] for r in rows)
    with pytest.raises(RunFileError, match="no receive at /topic/other after its warm-up"):
        grids.steady_run(doc, "/topic/other", "r.json")


def test_a_cell_is_the_median_of_its_runs_with_its_interval_and_spread() -> None:
    runs = [_run(seed, 300 + 50 * seed, f"{seed}.json")[1] for seed in range(3)]
    cell = grids.summary(runs)
    each = sorted(grids.throughput(run) for run in runs)
    found = estimate(runs, grids.OPERATION, THROUGHPUT)
    assert (cell["msgs"], cell["msgs_spread"], cell["repeats"]) == (each[1], [each[0], each[2]], 3)
    assert cell["msgs_interval"] == [found.low, found.high] and found.low < each[1] < found.high
    assert grids.cell_text(cell) == f"{each[1]:,.0f} ({found.low:,.0f}-{found.high:,.0f})"
    assert grids.summary([]) == {"msgs": None, "msgs_interval": None, "msgs_spread": None, "repeats": 0}
    assert grids.cell_text(grids.summary([])) == "-"


def test_two_cells_alike_are_marked_as_noise_and_a_cell_twice_as_fast_is_not() -> None:
    cells = {
        "a": [_run(seed, 300, f"a{seed}")[1] for seed in range(3)],
        "b": [_run(seed, 300, f"b{seed}")[1] for seed in range(10, 13)],
        "fast": [_run(seed, 600, f"f{seed}")[1] for seed in range(20, 23)],
        "none": [],
    }
    assert grids.indistinct(cells) == [("a", "b")]
    titles = {"a": "non-persistent", "b": "persistent", "fast": "durable"}
    assert grids.noise_text([("a", "b")], titles) == "non-persistent ≈ persistent"
    assert grids.noise_text([], titles) == "-"
