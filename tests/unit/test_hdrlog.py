"""The HdrHistogram interval log read back by the hdrhistogram package's reader, tag by tag."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader
from hypothesis import given
from hypothesis import strategies as st

from mqusers.measure.book import new_histogram
from mqusers.measure.hdrintervals import Intervals
from mqusers.measure.recorder import Batch
from mqusers.report.hdrlog import hdr_log, name_of, tag_of, write_hdr_log

T0 = 1_700_000_000
NAMES = ("receive /queue/hdr log", "send /queue/hdr,log", "GET /api/x?a=1%20")


@given(st.text())
def test_a_tag_holds_no_space_or_comma_and_gives_its_name_back(name: str) -> None:
    tag = tag_of(name)
    assert not any(c in tag for c in " ,\r\n\t")
    assert name_of(tag) == name


def read_back(path: Path) -> dict[str, list[HdrHistogram]]:
    reader = HistogramLogReader(str(path), new_histogram())
    tags: dict[str, list[HdrHistogram]] = {}
    while (histogram := reader.get_next_interval_histogram()) is not None:
        tags.setdefault(name_of(histogram.get_tag()), []).append(histogram)
    reader.close()
    return tags


def test_the_log_read_back_holds_every_interval_of_every_name(tmp_path: Path) -> None:
    rng = random.Random(3)
    intervals = Intervals()
    for second in range(12):
        intervals.add_batches([
            Batch(name, T0 + second, Counter(m := [rng.randint(50, 90_000) for _ in range(rng.randint(1, 300))]),
                  len(m), 0, (T0 + second) * 10**9, (T0 + second) * 10**9 + 10**8 * rng.randint(1, 9))
            for name in NAMES
        ])  # fmt: skip
    document = intervals.document(T0 + 0.5)
    path = tmp_path / "run.hlog"
    write_hdr_log(str(path), document, "r1")
    tags = read_back(path)
    totals = intervals.totals()
    assert set(tags) == set(NAMES)
    for name, histograms in tags.items():
        rows = document["operations"][name]
        assert [h.get_total_count() for h in histograms] == [row[2] for row in rows]
        # Absolute times: the reader adds the log's BaseTime to each line's offset.
        assert [h.get_start_time_stamp() / 1000 for h in histograms] == [
            round(row[0] - T0 - 0.5, 3) + T0 + 0.5 for row in rows
        ]
        merged = new_histogram()
        for histogram in histograms:
            merged.add(histogram)
        whole = totals.tallies[name].histogram
        assert merged.get_total_count() == whole.get_total_count()
        for percentile in (50.0, 99.0):
            assert merged.get_value_at_percentile(percentile) == whole.get_value_at_percentile(percentile)


def test_the_log_says_its_unit_and_starts_at_the_measured_window() -> None:
    intervals = Intervals()
    intervals.add_batches([Batch(NAMES[0], T0, Counter([1500]), 1, 0, T0 * 10**9, T0 * 10**9 + 1)])
    text = hdr_log(intervals.document(T0 + 0.25), "r1")
    lines = text.splitlines()
    assert "microseconds" in lines[0]
    assert "#[StartTime: 1700000000.250 (seconds since epoch), Tue Nov 14 22:13:20 UTC 2023]" in lines
    assert "#[BaseTime: 1700000000.250 (seconds since epoch)]" in lines
    # Its one interval: from the window's start, to its one message; the max column in ms.
    assert lines[-1].startswith("Tag=receive%20/queue/hdr%20log,0.000,0.000,1.500,HISTF")
