"""The per-second series against plain computations over the raw samples."""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Any

import msgpack
from hypothesis import given
from hypothesis import strategies as st

from mqusers.measure import series as series_module
from mqusers.measure.buckets import Traffic, percentile_of, slot, slot_top
from mqusers.measure.recorder import Batch
from mqusers.measure.series import MAX_BUCKETS, SEAL_AFTER_S, Series

T0 = 1_700_000_000  # an epoch second divisible by 64, so the coarse buckets' edges are easy to state


def batch(name: str, second: int, micros: list[int]) -> Batch:
    ns = second * 1_000_000_000
    return Batch(name, second, Counter(micros), len(micros), 100 * len(micros), ns, ns + 1)


def nearest_rank(samples: list[int], percentile: float) -> int:
    ordered = sorted(samples)
    return ordered[max(1, math.ceil(percentile / 100 * len(ordered) - 1e-9)) - 1]


def shipped(series: Series) -> Any:
    """A worker's payload as the master gets it: through msgpack, as Locust sends it."""
    return msgpack.unpackb(msgpack.packb(series.drain()))


@given(st.integers(min_value=0, max_value=3_600_000_000))
def test_a_slot_holds_its_value_and_is_at_most_a_16th_wide(micros: int) -> None:
    low = slot(micros)
    assert low <= micros <= slot_top(low)
    assert slot_top(low) - low <= max(0, low // 16)
    assert slot(slot_top(low)) == low


def test_percentiles_per_second_come_from_all_workers_samples_not_an_average() -> None:
    rng = random.Random(7)
    samples: dict[int, list[int]] = {}
    workers = [Series(), Series()]
    for second in range(T0, T0 + 5):
        # One worker sees fast deliveries, the other slow ones: averaging their percentiles would be wrong.
        fast = [rng.randint(100, 900) for _ in range(300)]
        slow = [rng.randint(5_000, 90_000) for _ in range(rng.randint(5, 200))]
        workers[0].add_batches([batch("receive /queue/a", second, fast)])
        workers[1].add_batches([batch("receive /queue/a", second, slow)])
        samples[second] = fast + slow
    master = Series()
    for worker in workers:
        master.merge(shipped(worker))
    column = master.document()["destinations"]["/queue/a"]
    assert column["t"] == list(samples)
    for index, raw in enumerate(samples.values()):
        assert column["received_per_s"][index] == len(raw)
        for key, percentile in (("p50_ms", 50.0), ("p99_ms", 99.0), ("p999_ms", 99.9)):
            truth = nearest_rank(raw, percentile)
            shown = column[key][index] * 1000
            assert truth <= shown <= truth * (1 + 1 / 16), (key, truth, shown)


def test_counts_gaps_and_backlog_of_a_topic_with_two_subscriptions() -> None:
    series = Series()
    sent = {T0: 10, T0 + 1: 10, T0 + 3: 5}
    received = {T0: 12, T0 + 1: 20, T0 + 2: 6, T0 + 3: 10}
    for second, count in sent.items():
        series.add_batches([batch("send /topic/t", second, [50] * count)])
    for second, count in received.items():
        series.add_batches([batch("receive /topic/t", second, [900] * count)])
    column = series.document({"/topic/t": 2})["destinations"]["/topic/t"]
    times = list(range(T0, T0 + 4))
    assert column["t"] == times
    assert column["sent_per_s"] == [sent.get(t, 0) for t in times]
    assert column["received_per_s"] == [received.get(t, 0) for t in times]
    backlog = [2 * sum(sent.get(s, 0) for s in times[: i + 1]) - sum(received.get(s, 0) for s in times[: i + 1])
               for i in range(len(times))]  # fmt: skip
    assert column["backlog"] == backlog == [8, 8, 2, 2]
    assert column["p50_ms"][2] == 0.927  # 900 µs is in the slot 896..927


def test_a_long_run_coarsens_and_each_bucket_holds_the_sum_of_its_seconds() -> None:
    series, per_second = Series(max_buckets=8), {}
    for second in range(T0, T0 + 100):
        per_second[second] = second % 7 + 1
        series.add_batches([batch("send /queue/a", second, [10] * per_second[second])])
        series.add_second("w1", second, cpu_percent=float(second % 3) * 10, lag_ms=float(second % 5))
    document = series.document()
    width = document["width_s"]
    assert width == 16  # 100 seconds in at most 8 buckets
    column = document["destinations"]["/queue/a"]
    assert len(column["t"]) <= 8
    for start, rate in zip(column["t"], column["sent_per_s"], strict=True):
        in_bucket = [c for s, c in per_second.items() if start <= s < start + width]
        assert rate == sum(in_bucket) / width
    load = document["generators"]["w1"]
    for index, start in enumerate(load["t"]):
        seconds = [s for s in per_second if start <= s < start + width]
        assert load["cpu_percent"][index] == round(sum(float(s % 3) * 10 for s in seconds) / len(seconds), 1)
        assert load["loop_lag_ms"][index] == max(float(s % 5) for s in seconds)


def test_a_day_at_one_bucket_per_second_stays_within_the_bound() -> None:
    series = Series()
    for second in range(T0, T0 + 86_400):
        series.add_second("local", second, 10.0, 1.0)
    assert series.width_s == 128 and len(series.load["local"]) <= MAX_BUCKETS


def test_a_fine_worker_merges_into_a_coarse_master() -> None:
    master, worker = Series(max_buckets=4), Series()
    for second in range(T0, T0 + 10):
        master.add_batches([batch("send /queue/a", second, [10])])
    worker.add_batches([batch("send /queue/a", T0 + 11, [10, 10])])
    master.merge(shipped(worker))
    column = master.document()["destinations"]["/queue/a"]
    assert master.width_s == 4
    assert [rate * 4 for rate in column["sent_per_s"]] == [4, 4, 4]  # seconds 0-3, 4-7, 8-9 and 11 (2)


def test_events_per_message_and_failures_count_as_the_batches_do(monkeypatch: Any) -> None:
    by_events, by_batches = Series(), Series()
    monkeypatch.setattr("mqusers.measure.series.time.time", lambda: T0 + 0.5)
    for micros in (120, 4_000, 4_100):
        by_events.on_request("STOMP", "receive /queue/a", micros / 1000, 100, None)
    by_events.on_request("STOMP", "send /queue/a", 0.01, 100, ValueError("refused"))
    by_events.on_request("GET", "/queue/a", 1.0, 100, None)  # not a STOMP destination: not in the series
    by_batches.add_batches([batch("receive /queue/a", T0, [120, 4_000, 4_100])])
    events_column = by_events.document()["destinations"]["/queue/a"]
    assert events_column["errors"] == [1]
    assert {**events_column, "errors": [0]} == by_batches.document()["destinations"]["/queue/a"]
    assert list(by_events.document()["destinations"]) == ["/queue/a"]


def test_no_event_is_counted_during_a_warm_up() -> None:
    series = Series()  # the recorder leaves the warm-up's samples out of its batches itself
    series.recording = False
    series.on_request("STOMP", "send /queue/a", 0.01, 100, ValueError("refused"))
    series.add_second("local", T0, 50.0, 2.0)
    assert series.document() == {"width_s": 1, "destinations": {}, "generators": {}}


def test_percentile_of_nothing_is_none() -> None:
    assert percentile_of({}, 99.0) is None


def test_old_buckets_are_packed_and_a_late_arrival_unpacks_one_without_losing_a_count() -> None:
    series = Series()
    for second in range(T0, T0 + 30):
        series.add_batches([batch("receive /queue/a", second, [100, 2000, 2000])])
    buckets = series.traffic["/queue/a"]
    assert sum(bucket.sealed for bucket in buckets.values()) == 30 - 1 - SEAL_AFTER_S
    assert not buckets[T0 + 29].sealed
    before = series.document()["destinations"]["/queue/a"]
    late = Series()
    late.add_batches([batch("receive /queue/a", T0, [70_000])])  # a worker's late shipment of its first second
    series.merge(shipped(late))
    after = series.document()["destinations"]["/queue/a"]
    assert after["received_per_s"][0] == 4 and after["p99_ms"][0] >= 70.0
    assert after["p50_ms"][1:] == before["p50_ms"][1:] and after["received_per_s"][1:] == before["received_per_s"][1:]
    assert buckets[T0].sealed  # packed again: it is still far behind the newest


def test_a_packed_bucket_keeps_4_byte_slots_and_clamps_what_is_beyond() -> None:
    bucket = Traffic(received=3, latency=Counter({1000: 2, 5_000_000_000: 1}))
    bucket.seal()
    assert bucket.sealed and bucket.slots() == {1000: 2, 2**32 - 1: 1}


def test_a_byte_budget_stops_the_growth_of_fattening_buckets(monkeypatch: Any) -> None:
    # At a fixed count a merged bucket holds more latency slots than either half: every doubling fattened the
    # packed buckets (a one-hour soak: +0.6 MB from 25 to 50 min). Under the budget, once first reached, the
    # packed bytes stop growing; every count stays.
    monkeypatch.setattr(series_module, "MIN_BUCKETS", 2)
    rng, series, sent = random.Random(3), Series(max_buckets=10_000, max_bytes=6_000), 0
    held = []
    for second in range(T0, T0 + 600):
        micros = [int(10 ** rng.uniform(1, 6)) for _ in range(rng.randint(1, 60))]
        series.add_batches([batch("receive /queue/a", second, micros)])
        sent += len(micros)
        held.append(sum(b.size for b in series.traffic["/queue/a"].values()))
    reached = next(i for i, size in enumerate(held) if size > 4_000)
    fattest = max(b.size for b in series.traffic["/queue/a"].values())
    assert max(held[reached:]) <= 6_000 + 2 * fattest and series.width_s >= 8
    assert sum(b.received for b in series.traffic["/queue/a"].values()) == sent
