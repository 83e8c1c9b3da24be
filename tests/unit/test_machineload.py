"""The machine's busy share from /proc/stat readings, on hand-made files and readings."""

from __future__ import annotations

import math
import threading
from pathlib import Path

from mqusers.commands.machineload import Sampler, busy_percent, read_jiffies


def test_jiffies_count_idle_and_iowait_as_free(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal guest guest_nice
    stat.write_text("cpu  100 5 40 800 50 3 2 10 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
    assert read_jiffies(str(stat)) == (160, 1010)
    assert read_jiffies(str(tmp_path / "none")) is None
    (tmp_path / "bad").write_text("cpu x\n")
    assert read_jiffies(str(tmp_path / "bad")) is None


def test_busy_share_is_over_the_readings_inside_the_span() -> None:
    readings = [(0.0, 0, 0), (1.0, 100, 200), (2.0, 290, 400), (3.0, 490, 600), (4.0, 500, 800)]
    assert busy_percent(readings, 1.0, 3.0) == 100.0 * 390 / 400
    assert busy_percent(readings, 0.5, 10.0) == 100.0 * 400 / 600
    assert math.isnan(busy_percent(readings, 1.5, 2.5))  # one reading is no span


def test_the_sampler_reads_until_its_block_ends() -> None:
    reads, three = iter(range(1000)), threading.Event()

    def read() -> tuple[int, int]:
        n = next(reads)
        if n == 2:
            three.set()
        return 10 * n, 20 * n

    with Sampler(period=0.01, read=read) as load:
        assert three.wait(5.0)
    count = len(load.readings)
    assert count >= 3 and load.busy_percent(0.0, 2e9) == 50.0
    assert len(load.readings) == count  # stopped
    with Sampler(read=lambda: None) as nothing:
        pass
    assert nothing.readings == [] and math.isnan(nothing.busy_percent(0.0, 2e9))
