"""What the audit keeps per subscription and per stream it merged, and the figure tables it fills.

:class:`mqusers.audit.audit.Audit` holds these; its module docs define every figure.
"""

from __future__ import annotations

from typing import TypeVar

from mqusers.audit.entries import QueueEntry, Session, StreamEntry, SubscriptionEntry
from mqusers.audit.expected import Figures
from mqusers.audit.intervals import IntervalBag, IntervalSet
from mqusers.audit.sendrecord import SendRecord

E = TypeVar("E", QueueEntry, StreamEntry)

FIGURES = ("producers", "subscriptions", "sent", "resent", "skipped", "expected", "received", "lost", "unreceived",
           "unconfirmed", "in_flight", "duplicated", "after_reconnect", "reordered", "redelivered", "foreign",
           "other_run", "drops", "unexpected", "worker_lost", "aborted", "aborted_delivered", "not_selected",
           "selector_violations", "expired", "delivered_expired", "groups", "group_violations",
           "nacks", "dead_lettered", "probes", "probes_sent")  # fmt: skip
#: A subscription's own share of its destination's figures (a queue's only receives and order).
SUB_FIGURES = ("expected", "received", "lost", "unreceived", "unconfirmed", "in_flight", "duplicated", "reordered",
               "redelivered", "unexpected", "worker_lost", "aborted_delivered", "not_selected",
               "selector_violations", "expired", "delivered_expired", "nacks",
               "dead_lettered", "probes")  # fmt: skip


class Stream:
    """What one subscription received from one producer. A queue's receipts go to one bag per destination
    and producer (``Audit._queues``): competing consumers share them; ``bag`` is a topic subscription's,
    ``flagged`` the seqs of its deliveries flagged redelivered, which ``bag`` leaves out; ``deliveries``
    how many it took (a queue's too); ``nacked`` a topic subscription's NACKed seqs."""

    __slots__ = ("_bag", "_flagged", "_nacked", "deliveries", "first_ns", "last_ns", "late", "nacks", "redelivered",
                 "reordered")  # fmt: skip

    def __init__(self) -> None:
        # Made when first asked for: a queue subscription's streams (one per producer) only count.
        self._bag: IntervalBag | None = None
        self._flagged: IntervalSet | None = None
        self._nacked: IntervalSet | None = None
        self.reordered = self.redelivered = self.deliveries = self.late = self.nacks = 0
        self.first_ns = self.last_ns = 0  # with message groups: its first and last delivery

    @property
    def bag(self) -> IntervalBag:
        if self._bag is None:
            self._bag = IntervalBag()
        return self._bag

    @property
    def flagged(self) -> IntervalSet:
        if self._flagged is None:
            self._flagged = IntervalSet()
        return self._flagged

    @property
    def nacked(self) -> IntervalSet:
        if self._nacked is None:
            self._nacked = IntervalSet()
        return self._nacked


class Sub:
    __slots__ = ("broker", "deliveries", "drops", "durable", "foreign", "kind", "other_run", "probes", "probes_sent",
                 "process", "selects", "sessions", "streams")  # fmt: skip

    def __init__(self, kind: str) -> None:
        self.kind, self.durable, self.process, self.broker = kind, False, "", ""
        self.probes = self.probes_sent = 0
        self.selects: frozenset[str] | None = None  # the labels its selector takes; None: no selector
        self.foreign = self.other_run = self.drops = 0
        #: Deliveries this subscription took: a queue's share of its group's (whose seqs are kept per group).
        self.deliveries = 0
        self.sessions: dict[int, int | None] = {}
        self.streams: dict[str, Stream] = {}  # by producer


def pick(a: str, b: str) -> str:
    return min(a, b) if a and b else a or b


def takes(sub: Sub, p: SendRecord) -> bool:
    """The subscription's selector (if any) takes the producer's messages."""
    return sub.selects is None or p.label in sub.selects


def of_processes(producer: str, processes: frozenset[str]) -> bool:
    """The producer id (``<process tag>.<class>.<ordinal>``) is of one of ``processes``."""
    return producer.split(".", 1)[0] in processes


def sub_entry(destination: str, key: str, s: Sub) -> SubscriptionEntry:
    streams = [with_nacked(StreamEntry(producer=n, seqs=x.bag.encode(), reordered=x.reordered,
                                   redelivered=x.redelivered, flagged=x.flagged.encode(), deliveries=x.deliveries,
                                   late=x.late),
                       x.nacked, x.nacks)
               for n, x in sorted(s.streams.items())]  # fmt: skip
    for entry, (_, x) in zip(streams, sorted(s.streams.items()), strict=True):
        if x.first_ns:
            entry["span"] = [x.first_ns, x.last_ns]
    sessions = [Session(joined_ns=j, left_ns=left) for j, left in sorted(s.sessions.items())]
    sub = SubscriptionEntry(destination=destination, key=key, kind=s.kind, durable=s.durable, process=s.process,
                            sessions=sessions, streams=streams, deliveries=s.deliveries, foreign=s.foreign,
                            other_run=s.other_run, drops=s.drops,
                            selects=None if s.selects is None else sorted(s.selects))  # fmt: skip
    if s.broker:
        sub["broker"] = s.broker
    if s.probes or s.probes_sent:
        sub["probes"], sub["probes_sent"] = s.probes, s.probes_sent
    return sub


def with_nacked(entry: E, seqs: IntervalSet | None, nacks: int = 0) -> E:
    """The entry with its NACKed seqs (and count), when there are any: other runs' snapshots stay as they were."""
    if seqs:
        entry["nacked"] = seqs.encode()
    if nacks:
        entry["nacks"] = nacks  # type: ignore[typeddict-unknown-key]
    return entry


def figures_of(out: dict[str, Figures], destination: str) -> Figures:
    fig = out.get(destination)
    if fig is None:
        fig = out[destination] = {"kind": None, **dict.fromkeys(FIGURES, 0), "by_subscription": []}
    return fig


def sub_figures(key: str, sub: Sub) -> Figures:
    """One subscription's own figures; a queue's are only what it took of the group's deliveries."""
    return {"key": key, "kind": sub.kind, "durable": sub.durable, "process": sub.process, "broker": sub.broker,
            "sessions": len(sub.sessions), "drops": sub.drops, "foreign": sub.foreign, "other_run": sub.other_run,
            **dict.fromkeys(SUB_FIGURES, 0)}  # fmt: skip
