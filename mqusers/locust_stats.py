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

from collections.abc import Callable, Sequence

from mqusers.measure.recorder import Batch
from mqusers.names import REQUEST_TYPE


def add_batches(stats: RequestStats, batches: Sequence[Batch]) -> None:
    """Log ``batches`` (in time order, as :meth:`Recorder.flush` gives them) into ``stats``."""
    bucket = locust.stats.bucket_response_time  # looked up now: Locust lets users replace it
    for batch in batches:
        times = [(micros / 1000.0, count) for micros, count in batch.micros.items()]
        _log(stats.total, batch, times, bucket)
        _log(stats.get(batch.name, REQUEST_TYPE), batch, times, bucket)


def _log(entry: StatsEntry, batch: Batch, times: list[tuple[float, int]], bucket: Callable[[float], int]) -> None:
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
    low = high = times[0][0]
    total = 0.0
    for response_time, count in times:
        total += response_time * count
        response_times[bucket(response_time)] += count
        if response_time < low:
            low = response_time
        elif response_time > high:
            high = response_time
    # Locust annotates these as int but keeps whatever response times it is given: floats here.
    entry.total_response_time += total  # type: ignore[assignment]
    entry.min_response_time = low if entry.min_response_time is None else min(entry.min_response_time, low)  # type: ignore[assignment]
    entry.max_response_time = max(entry.max_response_time, high)  # type: ignore[assignment]
