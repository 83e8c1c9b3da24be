"""The conductor's arithmetic, without messaging: the start barrier, the shared schedule's blocks and
clock offsets, as the master (or the local runner) keeps them. :mod:`mqusers.coordination.messages` carries
them over Locust's custom messages.

Clock offsets are NTP-style: t1 master send, t2/t3 worker receive and reply, t4 master receive;
offset = ((t2-t1)+(t3-t4))/2, error bound = RTT/2, the minimum-RTT sample kept.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Plan:
    """When the run starts (master clock, ns) and how the shared schedule runs."""

    t0_ns: int
    rate: float  # messages/s in total; 0 = as fast as possible
    total: int  # messages in total; 0 = unbounded


@dataclass
class ClockEstimate:
    offset_ns: int  # worker clock minus master clock
    error_ns: int
    rtt_ns: int

    @property
    def applied_ns(self) -> int:
        """The offset consumers correct with: 0 when it is within its own error bound.

        Workers on one host share a clock; their estimates are ping noise (never beyond RTT/2), and
        correcting with noise would make sub-millisecond deliveries read negative.
        """
        return self.offset_ns if abs(self.offset_ns) > self.error_ns else 0


@dataclass
class Conductor:
    """The master's (or local runner's) side: barrier, block allocation, clock offsets."""

    target_consumers: int
    rate: float
    total: int
    block_size: int
    joined: int = 0
    next_index: int = 0
    #: Producers that drew a block and have not yet been told the schedule is done.
    active_producers: int = 0
    finishing: bool = False
    plan: Plan | None = None
    clocks: dict[str, ClockEstimate] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)  # worker client id -> process tag
    #: Workers whose every ping came back: only their estimates are good enough to correct with.
    settled: set[str] = field(default_factory=set)

    def join(self, count: int = 1) -> Plan | None:
        """Record subscribed consumers; return the plan once the barrier opens."""
        self.joined += count
        return self.open() if self.joined >= self.target_consumers else None

    def open(self) -> Plan:
        if self.plan is None:
            # A little head room so every worker hears "go" before the first message is due.
            self.plan = Plan(time.time_ns() + 50_000_000, self.rate, self.total)
        return self.plan

    def allocate(self, first: bool = False) -> tuple[int, int]:
        """The next block of global indexes: (start, count); count 0 when all N are handed out.

        ``first``: the producer's first draw. A producer told 0 is done: with none active and all
        N handed out, every message has been sent.
        """
        start = self.next_index
        count = self.block_size if not self.total else max(0, min(self.block_size, self.total - start))
        self.next_index += count
        self.active_producers += first - (count == 0)
        return start, count

    @property
    def all_sent(self) -> bool:
        return bool(self.total) and self.next_index >= self.total and self.active_producers <= 0

    def record_pong(self, worker: str, t1: int, t2: int, t3: int, t4: int, tag: str) -> None:
        rtt = (t4 - t1) - (t3 - t2)
        offset = ((t2 - t1) + (t3 - t4)) // 2
        best = self.clocks.get(worker)
        if best is None or rtt < best.rtt_ns:
            self.clocks[worker] = ClockEstimate(offset, rtt // 2 + 1, rtt)
        self.tags[worker] = tag

    def offsets_by_tag(self) -> dict[str, int]:
        """Settled workers' applied offsets by process tag (a half-pinged worker's estimate may be far off)."""
        return {self.tags[w]: e.applied_ns for w, e in self.clocks.items() if w in self.tags and w in self.settled}

    def offsets_ms(self) -> dict[str, dict[str, float]]:
        """Each worker's clock minus the master's, with the error bound of the minimum-RTT sample and
        the offset consumers correct with (0 when within the error), in ms: the report's clocks."""
        return {
            worker: {
                "offset_ms": c.offset_ns / 1e6,
                "error_ms": c.error_ns / 1e6,
                "rtt_ms": c.rtt_ns / 1e6,
                "applied_ms": c.applied_ns / 1e6,
            }
            for worker, c in self.clocks.items()
        }
