"""What each process records of the messages it sent and received, for the exact message audit.

Pure bookkeeping, no I/O, on the per-message path. Each process keeps a :class:`SentLedger` (what
its producers handed to the socket) and a :class:`ReceiveLedger` (what its subscriptions received)
and ships their :meth:`~SentLedger.drain` deltas (a :class:`~mqusers.audit.entries.Delta`: named
fields, JSON- and msgpack-able; a worker's, msgpack-only, packs a competing consumer's fragmented share
as bytes) with its reports. Both keep only what
came since the last drain, so a competing consumer's fragmented set never grows; the master's
:class:`mqusers.audit.audit.Audit` merges them and judges.

What is recorded

- A *producer* is a (destination, producer id) pair, its id unique to one process; a
  *subscription* is a (destination, key) pair, the key stable and unique per subscriber (e.g.
  ``"<worker>/<user ordinal>"``; a durable subscriber reuses it when it comes back). Each carries
  the ``process`` whose clock stamped its times.
- Per producer: the multiset of seqs sent (how many times each), and *checkpoints*: (seq, send
  time) of a new highest seq at most every ``CHECKPOINT_NS`` (100 ms) of send time, the first send
  always one; and its last send time; the seqs whose outcome is unknown (``unconfirmed``) and those
  of its aborted (or rolled back) transactions (``aborted``), which no consumer may ever get.
- Per subscription: its sessions (SUBSCRIBE receipt time; leave time or none), and per producer
  the multiset of seqs delivered, ``reordered`` (deliveries whose seq is lower than the highest seq
  the subscription already had from that producer, so a late redelivery counts too) and
  ``redelivered`` (deliveries the broker flagged ``redelivered``). A flagged delivery is kept apart
  from the multiset, in ``flagged`` (its seqs): it says the broker gave the message out before, so
  it is no duplicate however often it comes; and ``late``: deliveries after the message's expiry
  (``--mq-ttl``) by more than :data:`EXPIRY_GRACE_NS`. A NACKed delivery (``--mq-nack-ratio``) is in
  neither bag nor ``flagged``: its seq goes to ``nacked`` and ``nacks`` counts it.
- A producer's time-to-live (``ttl_ns``; none when 0): the audit's expiry of each seq it sent.
"""

from __future__ import annotations

from mqusers.audit.entries import Delta, ProducerEntry, Session, ShareEntry, StreamEntry, SubscriptionEntry
from mqusers.audit.intervals import IntervalBag, IntervalSet

CHECKPOINT_NS = 100_000_000
#: A delivery counts as after its expiry only this much after it: the broker checks expiry when it dispatches,
#: and the message then crosses the network and waits in the consumer's socket (a loaded generator's read).
EXPIRY_GRACE_NS = 50_000_000
KINDS = ("queue", "topic")
#: A process's consumers' seqs per (queue, producer), summed for a packed drain.
Shares = dict[tuple[str, str], IntervalBag]


def _text(key: str | bytes) -> str:
    return key.decode("utf-8", "replace") if isinstance(key, bytes) else key


class SentStream:
    """What one producer sent to one destination since the last drain; :meth:`record` is the hot path."""

    __slots__ = ("_checkpoints", "_due_ns", "_hwm", "_shipped_ns", "aborted", "bag", "destination", "group", "label",
                 "last_ns", "producer", "seqs", "ttl_ns", "unconfirmed")  # fmt: skip

    def __init__(self, destination: str, producer: str, label: str = "", ttl_ns: int = 0, group: str = ""):
        self.destination, self.producer, self.label, self.ttl_ns = destination, producer, label, ttl_ns
        self.group = group
        self.bag = IntervalBag()
        self.seqs = self.bag.distinct
        self.last_ns = self._shipped_ns = self._due_ns = self._hwm = -1
        self._checkpoints: list[list[int]] = []
        #: Seqs written whose outcome is unknown (no RECEIPT, or sent on a connection that dropped).
        self.unconfirmed = IntervalSet()
        #: Seqs of this producer's aborted (or rolled back) transactions.
        self.aborted = IntervalSet()

    def record(self, seq: int, sent_ns: int) -> None:
        if not self.seqs.add(seq):
            self.bag.again(seq)
        elif sent_ns >= self._due_ns:
            self._mark(seq, sent_ns)
        self.last_ns = sent_ns

    def record_run(self, first: int, count: int, sent_ns: int) -> None:
        """``first`` .. ``first + count - 1``, all sent at ``sent_ns`` (one write): one range, not ``count`` calls."""
        top = self.seqs.last
        if top is not None and first <= top:  # not above everything sent so far: the careful way
            for seq in range(first, first + count):
                self.record(seq, sent_ns)
            return
        last = first + count - 1
        self.seqs.add_range(first, last)
        if sent_ns >= self._due_ns:
            self._mark(last, sent_ns)
        self.last_ns = sent_ns

    def _mark(self, seq: int, sent_ns: int) -> None:
        if seq == self.seqs.last and seq > self._hwm:  # a new highest seq, not a gap filled in or a resend
            self._checkpoints.append([seq, sent_ns])
            self._due_ns = sent_ns + CHECKPOINT_NS

    def _drain(self, process: str) -> ProducerEntry | None:
        if not (self.seqs or self._checkpoints or self.unconfirmed or self.aborted or self.last_ns != self._shipped_ns):
            return None
        entry = ProducerEntry(destination=self.destination, producer=self.producer, process=process,
                              seqs=self.bag.encode(), checkpoints=self._checkpoints, last_ns=self.last_ns,
                              unconfirmed=self.unconfirmed.encode(), aborted=self.aborted.encode())  # fmt: skip
        if self.label:
            entry["label"] = self.label
        if self.ttl_ns:
            entry["ttl_ns"] = self.ttl_ns
        if self.group:
            entry["group"] = self.group
        self._hwm = max(self._hwm, self.seqs.last or -1)
        self.bag, self._checkpoints, self._shipped_ns = IntervalBag(), [], self.last_ns
        self.seqs = self.bag.distinct
        self.unconfirmed, self.aborted = IntervalSet(), IntervalSet()
        return entry


class SentLedger:
    """Producer side, one per process: a :class:`SentStream` per producer and destination."""

    def __init__(self, process: str = ""):
        self.process = process
        self._streams: dict[tuple[str, str], SentStream] = {}

    def producer(
        self, destination: str, producer: str, label: str = "", ttl_ns: int = 0, group: str = ""
    ) -> SentStream:
        """The stream of one producer (stamping ``label`` and ``group``; its messages' time-to-live ``ttl_ns``),
        to call ``record(seq, sent_ns)`` on without a lookup."""
        stream = self._streams.get((destination, producer))
        if stream is None:
            stream = self._streams[(destination, producer)] = SentStream(destination, producer, label, ttl_ns, group)
        return stream

    def drain(self) -> Delta:
        """What changed since the last drain, for :meth:`Audit.merge`."""
        return {"producers": [e for s in self._streams.values() if (e := s._drain(self.process)) is not None]}


class _Received:
    __slots__ = ("bag", "first_ns", "flagged", "last_ns", "late", "nacked", "nacks", "redelivered", "reordered",
                 "seqs", "top")  # fmt: skip

    def __init__(self) -> None:
        self.bag = IntervalBag()
        self.seqs = self.bag.distinct
        self.flagged = IntervalSet()
        self.nacked = IntervalSet()
        self.top = -1
        self.reordered = self.redelivered = self.late = 0
        self.first_ns = self.last_ns = 0  # receive times (message groups only); 0: none since the last drain
        self.nacked = IntervalSet()
        self.nacks = 0


class Subscription:
    """One subscription's receipts; :meth:`record` is the per-message hot path."""

    __slots__ = ("_dirty", "_streams", "broker", "destination", "drops", "durable", "foreign", "key", "kind",
                 "other_run", "probes", "probes_sent", "selects", "sessions")  # fmt: skip

    def __init__(self, key: str, destination: str, kind: str, durable: bool, selects: tuple[str, ...] | None = None,
                 broker: str = ""):  # fmt: skip
        if kind not in KINDS:
            raise ValueError(f"subscription kind must be one of {KINDS}, not {kind!r}")
        self.key, self.destination, self.kind, self.durable = key, destination, kind, durable
        #: The labels its selector takes (None: no selector).
        self.selects = selects
        #: Where it is subscribed, when consumers are not at the producers' broker (``--mq-consumer-host``).
        self.broker = broker
        self.sessions: list[Session] = []
        self._streams: dict[str | bytes, _Received] = {}
        # Shipped before its SUBSCRIBE is confirmed: the audit knows a subscription was tried.
        self._dirty = True
        #: Deliveries without mqusers headers, and deliveries stamped by another run: kept apart.
        self.foreign = self.other_run = 0
        #: Sessions that ended with the connection dropping (not an orderly leave).
        self.drops = 0
        #: Network-demand probes (mqusers.stomp.probe) it was delivered, and sent to the producers' broker:
        #: never audited, but the brokers count them.
        self.probes = self.probes_sent = 0

    def record(self, producer: str | bytes, seq: int, redelivered: bool = False) -> None:
        stream = self._streams.get(producer)
        if stream is None:
            stream = self._streams[producer] = _Received()
        if seq > stream.top:
            stream.top = seq
        elif seq < stream.top:
            stream.reordered += 1
        if redelivered:
            stream.flagged.add(seq)
            stream.redelivered += 1
        elif not stream.seqs.add(seq):
            stream.bag.again(seq)

    def record_late(self, producer: str | bytes) -> None:
        """One of ``producer``'s messages, recorded too, arrived after its expiry."""
        stream = self._streams.get(producer)
        if stream is None:
            stream = self._streams[producer] = _Received()
        stream.late += 1

    def seen(self, producer: str | bytes, received_ns: int) -> None:
        """With message groups: a delivery of ``producer`` (after :meth:`record`) at ``received_ns``."""
        stream = self._streams[producer]
        if not stream.first_ns:
            stream.first_ns = received_ns
        stream.last_ns = received_ns

    def nack(self, producer: str | bytes, seq: int) -> None:
        """A delivery this subscription NACKed: not received (the broker redelivers or dead-letters it)."""
        stream = self._streams.get(producer)
        if stream is None:
            stream = self._streams[producer] = _Received()
        stream.nacked.add(seq)
        stream.nacks += 1

    def join(self, joined_ns: int) -> None:
        self.sessions.append(Session(joined_ns=joined_ns, left_ns=None))
        self._dirty = True

    def leave(self, left_ns: int, dropped: bool = False) -> None:
        if self.sessions and self.sessions[-1]["left_ns"] is None:
            self.sessions[-1]["left_ns"] = left_ns
            self._dirty = True
            self.drops += dropped

    def _drain(
        self, process: str, shares: dict[tuple[str, str], IntervalBag] | None = None
    ) -> SubscriptionEntry | None:
        """``shares`` (a worker's packed drain): a queue subscription's seqs go there, summed with the process's
        other consumers of the queue, and only its streams with more than seqs to tell are shipped."""
        streams: dict[str, _Received] = {}
        for producer, s in self._streams.items():
            if s.seqs or s.flagged or s.late or s.nacks:
                old = streams.setdefault(_text(producer), _Received())  # str and bytes ids: one
                old.bag.merge(s.bag)
                old.flagged.union(s.flagged)
                old.nacked.union(s.nacked)
                old.reordered += s.reordered
                old.redelivered += s.redelivered
                old.late += s.late
                old.nacks += s.nacks
                if s.first_ns:
                    old.first_ns = min(old.first_ns or s.first_ns, s.first_ns)
                    old.last_ns = max(old.last_ns, s.last_ns)
                s.bag, s.flagged, s.nacked, s.reordered, s.redelivered, s.late, s.nacks = (
                    IntervalBag(), IntervalSet(), IntervalSet(), 0, 0, 0, 0)  # fmt: skip
                s.seqs, s.first_ns, s.last_ns = s.bag.distinct, 0, 0
        strays = (self.foreign, self.other_run, self.drops)
        probes = (self.probes, self.probes_sent)
        if not (streams or self._dirty or any(strays) or any(probes)):
            return None
        self._dirty = False
        self.foreign = self.other_run = self.drops = self.probes = self.probes_sent = 0
        deliveries = sum(len(e.bag) + e.redelivered + e.nacks for e in streams.values())
        packed = shares is not None
        entries = []
        for name, e in streams.items():
            if shares is None or self.kind != "queue" or self.selects is not None:
                entries.append(_stream_entry(name, e, packed))
                continue
            shares.setdefault((self.destination, name), IntervalBag()).merge(e.bag)
            if e.redelivered or e.late or e.nacks or e.reordered or e.first_ns:  # more to tell than seqs
                counted, e.bag = len(e.bag) + e.redelivered + e.nacks, IntervalBag()
                entries.append(_stream_entry(name, e, packed, counted))
        entry = SubscriptionEntry(
            destination=self.destination, key=self.key, kind=self.kind, durable=self.durable, process=process,
            sessions=[s.copy() for s in self.sessions], streams=entries, deliveries=deliveries,
            foreign=strays[0], other_run=strays[1], drops=strays[2])  # fmt: skip
        if self.selects is not None:
            entry["selects"] = list(self.selects)
        if self.broker:
            entry["broker"] = self.broker
        if any(probes):
            entry["probes"], entry["probes_sent"] = probes
        return entry


def _stream_entry(producer: str, e: _Received, packed: bool, deliveries: int | None = None) -> StreamEntry:
    """``deliveries``: given when the seqs went to a share (packed), so the bag no longer counts them."""
    seqs = e.bag.pack() if packed else e.bag.encode()
    entry = StreamEntry(producer=producer, seqs=seqs, reordered=e.reordered, redelivered=e.redelivered,
                        flagged=e.flagged.encode())  # fmt: skip
    if packed:  # the master need not count a packed bag's members
        entry["deliveries"] = len(e.bag) + e.redelivered + e.nacks if deliveries is None else deliveries
    if e.late:
        entry["late"] = e.late
    if e.first_ns:
        entry["span"] = [e.first_ns, e.last_ns]
    if e.nacks:
        entry["nacks"], entry["nacked"] = e.nacks, e.nacked.encode()
    return entry


class ReceiveLedger:
    """Consumer side, one per process: a :class:`Subscription` per subscriber."""

    def __init__(self, process: str = ""):
        self.process = process
        self._subs: dict[tuple[str, str], Subscription] = {}

    def subscription(
        self,
        key: str,
        destination: str,
        kind: str,
        joined_ns: int | None,
        durable: bool = False,
        selects: tuple[str, ...] | None = None,
        broker: str = "",
    ) -> Subscription:
        """Open (or, same key, resume) a subscription confirmed at ``joined_ns`` (None: join it later) whose
        selector takes ``selects`` (None: no selector)."""
        sub = self._subs.get((destination, key))
        if sub is None:
            sub = self._subs[(destination, key)] = Subscription(key, destination, kind, durable, selects, broker)
        if joined_ns is not None:
            sub.join(joined_ns)
        return sub

    def drain(self, packed: bool = False) -> Delta:
        """What changed since the last drain. ``packed`` (a worker's, for msgpack, not JSON): fragmented sets as
        bytes, and the seqs of the process's consumers of a queue summed per producer (``shares``)."""
        shares: Shares | None = {} if packed else None
        subscriptions = (s._drain(self.process, shares) for s in self._subs.values())
        delta: Delta = {"subscriptions": [e for e in subscriptions if e is not None]}
        if shares:
            by_queue: dict[str, ShareEntry] = {}
            for (destination, producer), bag in shares.items():
                share = by_queue.setdefault(destination, ShareEntry(destination=destination, producers=[], seqs=[]))
                share["producers"].append(producer)
                share["seqs"].append(bag.pack())
            delta["shares"] = list(by_queue.values())
        return delta
