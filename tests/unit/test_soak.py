"""The soak benchmark's windows and drift verdict, on hand-made per-second series."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.soak import Window, drift, judged, windows

T0 = 1_800_000_000


def column(received: list[float], p99: list[float | None]) -> dict[str, Any]:
    return {"t": [T0 + i for i in range(len(received))], "received_per_s": received, "p99_ms": p99}


def test_windows_start_after_the_first_partial_second_and_stop_at_the_load_end() -> None:
    # A partial first second (50), then 2 x 3 s at 100/s and 200/s, then the drain after the load end.
    series = column([0, 50, 100, 100, 100, 200, 200, 200, 30], [None, 9.0, 1.0, 2.0, 3.0, 4.0, 5.0, 9.0, 7.0])
    found = windows(series, width=1, load_end=T0 + 8, window_s=3)
    assert [(w.start_s, w.seconds, w.received, w.p99_ms, w.worst_p99_ms) for w in found] == [
        (0, 3, 300, 2.0, 3.0),
        (3, 3, 600, 5.0, 9.0),
    ]
    assert [w.rate for w in found] == [100, 200]


def test_a_last_window_shorter_than_half_is_dropped_and_wider_buckets_count_whole() -> None:
    series = {"t": [T0, T0 + 2, T0 + 4, T0 + 6, T0 + 8], "received_per_s": [10, 10, 10, 10, 10], "p99_ms": [1.0] * 5}
    # Origin T0 + 2; windows of 4 s: [2, 6) holds two buckets, [6, 10) only T0 + 6 (T0 + 8 ends after the load).
    found = windows(series, width=2, load_end=T0 + 9, window_s=4)
    assert [(w.start_s, w.seconds, w.received) for w in found] == [(0, 4, 40), (4, 2, 20)]
    assert windows(series, width=2, load_end=T0 + 9, window_s=5) == [Window(0, 6, 60, 1.0, 1.0)]


def test_no_delivery_no_window() -> None:
    assert windows(column([0, 0, 0], [None] * 3), width=1, load_end=T0 + 3, window_s=1) == []


@pytest.mark.parametrize(
    ("rate", "p99", "rate_ok", "p99_ok"),
    [
        (101.9, 1.4, True, True),  # +1.9 %, +0.4 ms (+40 %)
        (97.9, 1.4, False, True),  # -2.1 %
        (100.0, 1.9, True, True),  # +90 % but only +0.9 ms
        (100.0, 2.1, True, False),  # +110 % and +1.1 ms
    ],
)
def test_drift_rate_within_2_percent_p99_within_50_percent_or_1_ms(
    rate: float, p99: float, rate_ok: bool, p99_ok: bool
) -> None:
    change = drift(Window(0, 10, 1000, 1.0, 2.0), Window(10, 10, rate * 10, p99, p99))
    assert change is not None
    assert (change.rate_ok, change.p99_ok) == (rate_ok, p99_ok)
    wide = drift(Window(0, 10, 1000, 10.0, 10.0), Window(10, 10, 1000, 14.9, 14.9))
    assert wide is not None and wide.p99_ok and wide.p99_ms > 1  # +4.9 ms, but within 50 %


def test_drift_is_judged_from_the_first_window_after_the_warm_up() -> None:
    found = [Window(start, 300, 600_000, p99, p99) for start, p99 in ((0, 2.7), (300, 1.4), (600, 1.3), (900, 1.3))]
    assert judged(found, 600) == found[2:]  # the broker's JIT in the first minutes is no drift
    assert judged(found, 900) == found  # one window after it: nothing to compare, so all of them
