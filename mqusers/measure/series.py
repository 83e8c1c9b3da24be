"""Per-second series for the HTML report: rates, receive latency and the generator's health over time.

Each load process keeps a :class:`Series`: per destination and time bucket the sends, receives and
errors and the receive latencies (µs, grouped into log slots of 1/16 relative width); per process
and bucket its CPU and worst loop lag. Workers ship :meth:`Series.drain` with their reports; the
master :meth:`Series.merge`\\ s it, so a bucket's percentiles come from the merged samples, never
from an average of per-worker percentiles.

Bounded: when a series would hold more than ``MAX_BUCKETS`` buckets, or more than ``MAX_BYTES`` of
packed slots (a merged bucket holds more slots than either half, so at a fixed count every doubling
fattened them: memory grew for hours), it doubles its bucket width and merges neighbours (a 24 h run
ends with 128 s buckets or wider); a bucket more than ``SEAL_AFTER_S``
older than the newest keeps its latency slots packed in an array (~0.5 KB, not ~14 KB as a dict:
15 minutes of seconds cost ~0.5 MB rather than 12), so memory hardly grows with the run.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypedDict

from mqusers.measure.buckets import Load, Traffic, percentile_of, slot
from mqusers.measure.names import RECEIVE, REQUEST_TYPE, SEND, destination_operation
from mqusers.measure.recorder import Batch

#: Buckets kept per series before the width doubles: 15 min at 1 s (a 30-minute run has 2 s buckets).
MAX_BUCKETS = 900
#: Packed bytes the buckets hold before the width doubles (a 2,000 msg/s queue run reaches it in ~8 min) ...
MAX_BYTES = 256 * 1024
#: ... while more than twice this many buckets a destination are held: charts keep their shape.
MIN_BUCKETS = 60
#: A bucket this much older than the newest gets its slots packed (a late worker's data unpacks it).
SEAL_AFTER_S = 10
#: The percentiles the series reports per bucket, and their JSON names.
SERIES_PERCENTILES = {"p50_ms": 50.0, "p99_ms": 99.0, "p999_ms": 99.9}


class TrafficPayload(TypedDict):
    t: int
    sent: int
    received: int
    errors: int
    #: [slot, count] pairs (msgpack maps want string keys).
    latency: list[list[int]]


class LoadPayload(TypedDict):
    t: int
    cpu_sum: float
    seconds: int
    lag_max_ms: float


class SeriesPayload(TypedDict):
    """What a worker ships: its buckets since the last drain, at its bucket width."""

    width_s: int
    destinations: dict[str, list[TrafficPayload]]
    generators: dict[str, list[LoadPayload]]


class Series:
    """Per-bucket traffic by destination and load by process; see the module's docstring."""

    def __init__(self, max_buckets: int = MAX_BUCKETS, max_bytes: int = MAX_BYTES) -> None:
        self.max_buckets, self.max_bytes = max_buckets, max_bytes
        self.width_s = 1
        self.traffic: dict[str, dict[int, Traffic]] = {}
        self.load: dict[str, dict[int, Load]] = {}
        #: False during a warm-up, as the book's: events and load seconds are not counted.
        self.recording = True
        #: (destination, bucket) of the buckets not sealed yet, and the newest bucket's start.
        self._unsealed: set[tuple[str, int]] = set()
        self._newest = 0

    def clear(self) -> None:
        self.width_s, self.traffic, self.load, self._unsealed, self._newest = 1, {}, {}, set(), 0

    def _horizon(self) -> int:
        """Buckets starting before this take no more live data."""
        return self._newest - max(SEAL_AFTER_S, 2 * self.width_s)

    def _seal_old(self) -> None:
        """Pack the slots of buckets well behind the newest: they take no more live data."""
        horizon = self._horizon()
        old = {(d, key) for d, key in self._unsealed if key < horizon}
        for destination, key in old:
            bucket = self.traffic.get(destination, {}).get(key)
            if bucket is not None:
                bucket.seal()
        self._unsealed -= old

    def _within_budget(self) -> None:
        """Coarsen while the packed slots are over the byte budget (checked once per flush, not per bucket)."""
        while (
            max(map(len, self.traffic.values()), default=0) > 2 * MIN_BUCKETS
            and sum(b.size for buckets in self.traffic.values() for b in buckets.values()) > self.max_bytes
        ):
            self._coarsen()

    def _traffic(self, destination: str, second: int) -> Traffic:
        buckets = self.traffic.setdefault(destination, {})
        key = second - second % self.width_s
        bucket = buckets.get(key)
        if bucket is None:
            bucket = buckets[key] = Traffic()
            if len(buckets) > self.max_buckets:
                self._coarsen()
                return self._traffic(destination, second)
        if bucket.sealed or (destination, key) not in self._unsealed:
            self._unsealed.add((destination, key))  # new, or about to be unpacked by a late arrival
            self._newest = max(self._newest, key)
        return bucket

    def _load(self, node: str, second: int) -> Load:
        buckets = self.load.setdefault(node, {})
        key = second - second % self.width_s
        bucket = buckets.get(key)
        if bucket is None:
            bucket = buckets[key] = Load()
            if len(buckets) > self.max_buckets:
                self._coarsen()
                return self._load(node, second)
        return bucket

    def _coarsen(self) -> None:
        """Double the bucket width, merging each pair of neighbours."""
        self.width_s *= 2
        width = self.width_s
        horizon = self._horizon()
        for destination, buckets in self.traffic.items():
            merged: dict[int, Traffic] = {}
            for key in sorted(buckets):
                target = key - key % width
                into = merged.get(target)
                if into is None:
                    into = merged[target] = Traffic()
                into.add(buckets.pop(key))
                if key > target and target < horizon:
                    into.seal()  # both halves in, and old: packed at once, so no more than one is unpacked
            self.traffic[destination] = merged
            self._unsealed |= {(destination, key) for key, bucket in merged.items() if not bucket.sealed}
        for node, loads in self.load.items():
            merged_load: dict[int, Load] = {}
            for key, load in loads.items():
                merged_load.setdefault(key - key % width, Load()).add(load)
            self.load[node] = merged_load

    def add_batches(self, batches: Sequence[Batch]) -> None:
        """The recorder's successes, one batch per operation and second."""
        for batch in batches:
            if (found := destination_operation(batch.name)) is None:
                continue
            operation, destination = found
            if operation == SEND:
                self._traffic(destination, batch.second).sent += batch.count
            elif operation == RECEIVE:
                bucket = self._traffic(destination, batch.second)
                bucket.received += batch.count
                latency = bucket.latency
                for micros, count in batch.micros.items():
                    if micros >= 0:  # a negative latency (clocks out of step) has no place on the scale
                        latency[slot(micros)] += count
        self._seal_old()
        self._within_budget()

    def on_request(
        self, request_type: str, name: str, response_time: float, response_length: int, exception: Any, **_: Any
    ) -> None:
        """A Locust request event: failures always, successes when sent per message."""
        if not self.recording or request_type != REQUEST_TYPE or (found := destination_operation(name)) is None:
            return
        operation, destination = found
        now = int(time.time())
        if exception is not None:
            self._traffic(destination, now).errors += 1
        elif operation == SEND:
            self._traffic(destination, now).sent += 1
        elif operation == RECEIVE:
            bucket = self._traffic(destination, now)
            bucket.received += 1
            if response_time >= 0:
                bucket.latency[slot(round(response_time * 1000.0))] += 1

    def add_second(self, node: str, second: int, cpu_percent: float, lag_ms: float) -> None:
        """One second of a load process's health (:class:`mqusers.run.health.Health` calls it)."""
        if not self.recording:
            return
        load = self._load(node, second)
        load.add(Load(cpu_percent, 1, lag_ms))

    def drain(self) -> SeriesPayload:
        """Everything since the last drain, for the master; then start afresh."""
        payload: SeriesPayload = {
            "width_s": self.width_s,
            "destinations": {d: [_traffic_payload(t, b) for t, b in bs.items()] for d, bs in self.traffic.items()},
            "generators": {n: [_load_payload(t, b) for t, b in bs.items()] for n, bs in self.load.items()},
        }
        self.traffic, self.load = {}, {}
        return payload

    def merge(self, payload: SeriesPayload) -> None:
        while self.width_s < payload["width_s"]:
            self._coarsen()
        for destination, buckets in payload["destinations"].items():
            for b in buckets:
                latency = Counter({s: c for s, c in b["latency"]})
                self._traffic(destination, b["t"]).add(Traffic(b["sent"], b["received"], b["errors"], latency))
        self._seal_old()
        self._within_budget()
        for node, loads in payload["generators"].items():
            for load in loads:
                self._load(node, load["t"]).add(Load(load["cpu_sum"], load["seconds"], load["lag_max_ms"]))

    def document(self, fan_out: Mapping[str, int] | None = None) -> dict[str, Any]:
        """The JSON report's ``series``: columns per destination and process, every bucket of the span filled.

        ``fan_out``: subscriptions per destination (a topic delivers each message to each), so the
        backlog is what was sent and not yet received by every subscription.
        """
        width = self.width_s
        destinations = {}
        for destination, buckets in sorted(self.traffic.items()):
            times = _span(buckets, width)
            rows = [buckets.get(t, Traffic()) for t in times]
            copies = (fan_out or {}).get(destination, 1)
            backlog, sent, received = [], 0, 0
            for row in rows:
                sent, received = sent + row.sent, received + row.received
                backlog.append(sent * copies - received)
            destinations[destination] = {
                "t": times,
                "sent_per_s": [row.sent / width for row in rows],
                "received_per_s": [row.received / width for row in rows],
                "errors": [row.errors for row in rows],
                "backlog": backlog,
                **{key: [_ms(percentile_of(row.slots(), p)) for row in rows] for key, p in SERIES_PERCENTILES.items()},
            }
        generators = {}
        for node, loads in sorted(self.load.items()):
            times = _span(loads, width)
            cells = [loads.get(t) for t in times]
            generators[node] = {
                "t": times,
                "cpu_percent": [round(c.cpu_sum / c.seconds, 1) if c else None for c in cells],
                "loop_lag_ms": [round(c.lag_max_ms, 3) if c else None for c in cells],
            }
        return {"width_s": width, "destinations": destinations, "generators": generators}


def _traffic_payload(t: int, b: Traffic) -> TrafficPayload:
    latency = [[s, c] for s, c in b.slots().items()]
    return {"t": t, "sent": b.sent, "received": b.received, "errors": b.errors, "latency": latency}


def _load_payload(t: int, b: Load) -> LoadPayload:
    return {"t": t, "cpu_sum": b.cpu_sum, "seconds": b.seconds, "lag_max_ms": b.lag_max_ms}


def _span(buckets: Iterable[int], width: int) -> list[int]:
    keys = list(buckets)
    return list(range(min(keys), max(keys) + 1, width)) if keys else []


def _ms(micros: int | None) -> float | None:
    return None if micros is None else micros / 1000.0
