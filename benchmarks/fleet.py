"""Synthetic worker reports for benchmarks/master.py: what W workers ship, fragmented as competing consumers are.

No I/O. A :class:`Shape` is W workers, each with P producers and C consumers on each of D queues, R msg/s in
all, reporting every ``interval_s`` (Locust's 3 s). Each report is what a worker's Locust ``stats`` message
carries: Locust's own stats (a worker's ``RequestStats`` through Locust's ``report_to_master`` listener) and
every mqusers part a load worker ships: the book, the series and the interval histograms (the workers' own
objects, fed :class:`~mqusers.measure.recorder.Batch` es as the recorder feeds them), the process tag and the
audit delta. The delta is written in the ledgers' shipping format from the truth (every message sent in an
interval is delivered in it, exactly once), so the benchmark knows what the master's audit must say;
tests/unit/test_fleet.py holds it equal to what SentLedger and ReceiveLedger drain for the same deliveries.

How the broker deals a queue's messages to its G = W * C competing consumers: producer q's seq s goes to
consumer (s // run + q) mod G, so each consumer's set of one producer's seqs is a run every G runs: with
``run`` 1 (a consumer takes the next message whenever it acknowledges one, the steady state with many
consumers) every delivery is its own interval, the most fragmented the audit ever sees.
"""

from __future__ import annotations

from locust.event import Events
from locust.stats import RequestStats, setup_distributed_stats_event_listeners

import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mqusers.audit.entries import Delta, ProducerEntry, ShareEntry, SubscriptionEntry
from mqusers.audit.intervals import Encoded, IntervalSet
from mqusers.measure.book import Book
from mqusers.measure.hdrintervals import Intervals
from mqusers.measure.names import RECEIVE, SEND, event_name
from mqusers.measure.recorder import Batch
from mqusers.measure.series import Series
from mqusers.run.locust_stats import add_batches

CHECKPOINT_NS = 100_000_000  # a producer's checkpoints: one per 100 ms of send time, as SentStream keeps them
SIZE = 1024  # bytes per message, for the byte counts only
#: Distinct latency values (µs) per operation and second: a realistic spread of an HdrHistogram's buckets.
LATENCIES = 400


@dataclass(frozen=True)
class Shape:
    workers: int
    rate: int  # msg/s in all
    destinations: int = 4
    producers: int = 2  # per worker and destination
    consumers: int = 2  # per worker and destination
    interval_s: int = 3
    run: int = 1

    @property
    def per_report(self) -> int:
        """Messages one producer sends in one report interval."""
        total = self.workers * self.destinations * self.producers
        return max(1, round(self.rate * self.interval_s / total))

    def sent(self, reports: int) -> int:
        """What every producer of one destination sent in ``reports`` intervals: the truth per destination."""
        return self.per_report * self.workers * self.producers * reports


def destination(d: int) -> str:
    return f"/queue/bench.master.{d}"


def tag(worker: int) -> str:
    return f"{worker:08x}"


def producer_id(worker: int, p: int) -> str:
    return f"{tag(worker)}-{p}"


def deals(shape: Shape, q: int, g: int, lo: int, hi: int) -> list[list[int]]:
    """The runs of producer ``q``'s seqs ``lo..hi`` the broker gives consumer ``g`` of the queue's G."""
    groups, run = shape.workers * shape.consumers, shape.run
    first_block = lo // run
    block = first_block + (g - q - first_block) % groups
    out = []
    while block * run <= hi:
        out.append([max(lo, block * run), min(hi, block * run + run - 1)])
        block += groups
    return out


def audit_delta(shape: Shape, worker: int, report: int, start_ns: int) -> Delta:
    """Worker ``worker``'s audit delta for report ``report`` (0, 1, ...): its producers' sends, its consumers' share."""
    n, process = shape.per_report, tag(worker)
    lo, hi = report * n + 1, (report + 1) * n
    t0 = start_ns + report * shape.interval_s * 1_000_000_000
    step = shape.interval_s * 1_000_000_000 // n
    checkpoints = [[lo + i, t0 + i * step] for i in range(0, n, max(1, CHECKPOINT_NS // max(1, step)))]
    producers, subscriptions, shares = [], [], []
    for d in range(shape.destinations):
        for p in range(shape.producers):
            producers.append(ProducerEntry(destination=destination(d), producer=producer_id(worker, p), process=process,
                                           seqs=[[[lo, hi]]], checkpoints=checkpoints, last_ns=t0 + (n - 1) * step,
                                           unconfirmed=[], aborted=[]))  # fmt: skip
        share = ShareEntry(destination=destination(d), producers=[], seqs=[])
        for w in range(shape.workers):
            for p in range(shape.producers):
                q, first = w * shape.producers + p, worker * shape.consumers
                runs = [r for c in range(shape.consumers) for r in deals(shape, q, first + c, lo, hi)]
                if runs:
                    share["producers"].append(producer_id(w, p))
                    share["seqs"].append([_packed(runs)])
        shares.append(share)
        for c in range(shape.consumers):
            g = worker * shape.consumers + c
            taken = sum(
                b - a + 1 for q in range(shape.workers * shape.producers) for a, b in deals(shape, q, g, lo, hi)
            )
            subscriptions.append(SubscriptionEntry(
                destination=destination(d), key=f"{process}/{d}/{c}", kind="queue", durable=False, process=process,
                sessions=[{"joined_ns": start_ns - 1_000_000_000, "left_ns": None}], streams=[], deliveries=taken,
                foreign=0, other_run=0, drops=0,
            ))  # fmt: skip
    return {"producers": producers, "subscriptions": subscriptions, "shares": shares}


def _packed(runs: list[list[int]]) -> Encoded | bytes:
    """``runs`` as a worker's ledger ships them (:meth:`IntervalSet.pack`: adjacent runs joined)."""
    return IntervalSet.decode(runs).pack()


class Worker:
    """One synthetic worker: its book, series, intervals and Locust stats, fed per report."""

    def __init__(self, shape: Shape, index: int, seed: int = 0):
        self.shape, self.index = shape, index
        self.book, self.series, self.intervals = Book(), Series(), Intervals()
        self.stats = RequestStats()
        self.events = Events()
        setup_distributed_stats_event_listeners(self.events, self.stats)
        self.random = random.Random(seed * 1_000_003 + index)

    def _batches(self, second: int, count: int) -> list[Batch]:
        batches = []
        for d in range(self.shape.destinations):
            for operation in (SEND, RECEIVE):
                micros = Counter({int(self.random.lognormvariate(7.0, 0.6)): 1 for _ in range(LATENCIES)})
                spare = count - sum(micros.values())
                if spare > 0:
                    micros[min(micros)] += spare
                first_ns = second * 1_000_000_000
                batches.append(Batch(event_name(operation, destination(d)), second, micros, count, count * SIZE,
                                     first_ns, first_ns + 999_000_000))  # fmt: skip
        return batches

    def report(self, report: int, start_s: int) -> dict[str, Any]:
        """The ``stats`` message data of report ``report``: what Locust and mqusers put in it on a worker."""
        shape = self.shape
        per_second = shape.per_report * shape.producers // shape.interval_s  # per destination, this worker's
        for i in range(shape.interval_s):
            batches = self._batches(start_s + report * shape.interval_s + i, max(1, per_second))
            self.book.add_batches(batches)
            self.series.add_batches(batches)
            self.intervals.add_batches(batches)
            add_batches(self.stats, batches)
        data: dict[str, Any] = {}
        self.events.report_to_master.fire(client_id=tag(self.index), data=data)
        data["user_classes_count"] = {"Producer": shape.destinations * shape.producers,
                                      "Consumer": shape.destinations * shape.consumers}  # fmt: skip
        data["user_count"] = sum(data["user_classes_count"].values())
        data["mqusers_process"] = tag(self.index)
        data["mqusers_book"] = self.book.drain()
        data["mqusers_series"] = self.series.drain()
        data["mqusers_intervals"] = self.intervals.drain()
        data["mqusers_audit"] = audit_delta(shape, self.index, report, start_s * 1_000_000_000)
        return data


def reports(shape: Shape, count: int, start_s: int) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(report, worker, data) for ``count`` reports of every worker, in the order they are sent."""
    workers = [Worker(shape, w) for w in range(shape.workers)]
    for report in range(count):
        for worker in workers:
            yield report, worker.index, worker.report(report, start_s)
