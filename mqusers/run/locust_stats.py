"""Locust's request statistics fed in bulk from the recorder's batches, with per-event results.

``RequestStats.log_request`` per message costs more CPU than the rest of a message's life in
mqusers. A :class:`~mqusers.measure.recorder.Batch` (one operation, one second) updates the entry
and Locust's "Aggregated" total as its events one by one would have: the same ``num_requests``,
``num_reqs_per_sec``, ``response_times`` buckets, min / max, content length, last request time
and "current percentile" snapshots (``response_times_cache``). ``total_response_time`` is the
same sum added in another order, so it can differ in the last bits of the float.
"""

from __future__ import annotations

import locust.stats
from locust.stats import RequestStats, StatsEntry

import operator
from collections.abc import Sequence
from typing import Any

from mqusers.measure.names import REQUEST_TYPE
from mqusers.measure.recorder import Batch

_LOCUST_BUCKET = locust.stats.bucket_response_time


def bucket(response_time: float) -> float:
    """Locust's response-time bucket, with the digits a broker's latency needs below 10 ms.

    Locust rounds to whole milliseconds below 100 ms: a 0.27 ms delivery counted as 0 ms, and the
    web UI's median (clamped to the minimum) read 0.06 beside a p50 of 0.27. Here 10 µs steps below
    1 ms and 0.1 ms steps below 10 ms (190 keys more), Locust's own rounding above.
    """
    if response_time < 1:
        return round(response_time, 2)
    if response_time < 10:
        return round(response_time, 1)
    return _LOCUST_BUCKET(response_time)


def install_bucketing() -> None:
    """Use :func:`bucket` for every request (Locust's documented hook), unless a locustfile set its own."""
    if locust.stats.bucket_response_time is _LOCUST_BUCKET:
        locust.stats.bucket_response_time = bucket  # type: ignore[assignment]


def add_batches(stats: RequestStats, batches: Sequence[Batch]) -> None:
    """Log ``batches`` (in time order, as :meth:`Recorder.flush` gives them) into ``stats``."""
    bucket = locust.stats.bucket_response_time  # looked up now: Locust lets users replace it
    for batch in batches:
        micros = batch.micros
        buckets: dict[int, int] = {}
        for value, count in micros.items():  # the one loop over distinct values, for both entries
            key = bucket(value / 1000.0)
            buckets[key] = buckets.get(key, 0) + count
        # Exact µs sums; Locust's float sum of the same values differs only in the last bits.
        total = sum(map(operator.mul, micros.keys(), micros.values())) / 1000.0
        extremes = (min(micros) / 1000.0, max(micros) / 1000.0, total)
        _log(stats.total, batch, buckets, extremes)
        _log(stats.get(batch.name, REQUEST_TYPE), batch, buckets, extremes)


def _log(entry: StatsEntry, batch: Batch, buckets: dict[int, int], extremes: tuple[float, float, float]) -> None:
    second = batch.second
    last = entry.last_request_timestamp
    if entry.use_response_times_cache and last and second > int(last):
        # Locust snapshots the distribution when the first request of a new second is logged.
        entry._cache_response_times(second - 1)
    entry.num_requests += batch.count
    entry.num_reqs_per_sec[second] += batch.count
    entry.last_request_timestamp = batch.last_ns / 1e9
    entry.total_content_length += batch.bytes
    response_times = entry.response_times
    for key, count in buckets.items():
        response_times[key] += count
    low, high, total = extremes
    # Locust annotates these as int but keeps whatever response times it is given: floats here.
    entry.total_response_time += total  # type: ignore[assignment]
    entry.min_response_time = low if entry.min_response_time is None else min(entry.min_response_time, low)  # type: ignore[assignment]
    entry.max_response_time = max(entry.max_response_time, high)  # type: ignore[assignment]


#: Seconds of ``num_reqs_per_sec`` kept: Locust reads only its last ~12 s (current RPS, failures/s).
PER_SECOND_KEPT_S = 60


def trim_per_second(stats: RequestStats, now_s: int) -> None:
    """Drop per-second counts older than :data:`PER_SECOND_KEPT_S` from every entry.

    Locust keeps one per second of the whole run in each entry (a day costs megabytes per
    operation); what it shows of them is the last few seconds. Workers reset theirs with each
    report anyway: this bounds a local runner's and the master's.
    """
    horizon = now_s - PER_SECOND_KEPT_S
    for entry in [*stats.entries.values(), stats.total]:
        for per_second in (entry.num_reqs_per_sec, entry.num_fail_per_sec):
            for second in [s for s in per_second if s < horizon]:
                del per_second[second]


#: Entries of Locust's chart history kept where nothing draws it (5 s each: the last minute).
HISTORY_KEPT = 12


def history_drawn(options: Any) -> bool:
    """Whether Locust draws its chart history: the web UI's charts (never a worker's), or a ``--html`` report."""
    if options is None or getattr(options, "html_file", None):
        return True
    return not (options.headless or getattr(options, "worker", False))


def trim_history(stats: RequestStats) -> None:
    """Locust appends a chart point to ``stats.history`` every 5 s for the whole run (~1 MB an hour), drawn only by
    its web UI and its ``--html`` report: elsewhere (a headless run, a worker) keep the last minute."""
    del stats.history[:-HISTORY_KEPT]
