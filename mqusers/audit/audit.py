"""Exact message audit from the sequence headers: sent, received, lost, duplicated, reordered...

Pure bookkeeping, no I/O. The master (or a local runner) :meth:`Audit.merge`\\ s the deltas of every
process's ledgers (:mod:`mqusers.audit.ledgers`, which says what is recorded) in any order and
grouping (multisets are summed, counters added, times combined by min/max) and asks
:meth:`Audit.verdict`.

A time T to a seq boundary, for producer P (T on P's clock; mqusers producers first-send seqs in
increasing order): ``before(T)``, the highest seq up to which all were certainly sent before T, is
the last checkpoint before T (every seq if P's last send was before T); ``after(T)``, the lowest
seq from which all were certainly sent after T, is the first checkpoint after T. Seqs in between
(at most 100 ms of sends) are *uncertain*. Times from other processes are converted with
``clock_offsets``: process → its clock minus the master's, in ns (as the coordination applies
them: 0 within their error; missing means 0).

Figures per destination (:meth:`Audit.verdict`; ``horizon`` = ``now_ns - drain_ns``)

- ``sent``: distinct seqs sent, Σ over producers; ``resent``: sends of a seq beyond its first;
  ``skipped``: seqs a producer never sent below its highest (gaps in its numbering, from 1).
- ``foreign``, ``other_run``: deliveries without mqusers headers, and deliveries of another run,
  counted by the receiving subscription and left out of every other figure; ``foreign`` also
  counts deliveries from producers no SentLedger reported.
- Expected set, per producer. **queue** (the destination's subscriptions of kind ``"queue"``
  compete as one group): every seq sent, once for the group, if the group has any subscription.
  **topic** (each ``"topic"`` subscription on its own), per session: from the producer's first seq
  if the subscription joined before the producer's first send, else from ``after(joined)``; up to
  ``before(left)``, or every seq while subscribed; the uncertain seqs at either end are not
  expected. A **durable** subscription has one window from its first join to its latest session's
  leave (open while subscribed), so messages sent while it was offline are expected.
- ``expected``: Σ |expected set|; ``subscriptions``, ``producers``: how many.
- ``received``: distinct seqs received from known producers (queue: over the whole group; topic:
  Σ per subscription); ``unexpected``: of those, seqs not expected (sent in an uncertain zone or
  before joining, or whose send record has not been merged yet).
- ``duplicated``: deliveries of a seq beyond the number of times it was sent (queue: over the
  group; topic: Σ per subscription), not counting those the broker flagged ``redelivered`` (a
  message an un-ACKed consumer left, or NACKed, coming back: ``redelivered``, received once). A
  producer's resend is not one.
- ``unconfirmed``: expected, not received, and in the producer's *unconfirmed* set (written, but no
  RECEIPT came, or sent without receipts on a connection that then dropped or closed without the
  broker's DISCONNECT receipt): outcome unknown. Where no subscription of the run reads the
  destination (a put-only fill), nothing is expected: the sends in that set.
- ``in_flight``: expected, not received, not unconfirmed, and possibly sent after
  ``before(horizon)``, or, for a subscription that left at L, after ``before(L - drain_ns)``:
  uncertain counts as in flight.
- ``lost``: expected, not received, not unconfirmed, not in flight, and below the highest seq of
  that producer the group (queue) or subscription (topic) did receive, when ``settled`` (the
  consumers went idle): a later message arrived, so this one is not merely still queued.
- ``unreceived``: the rest of the missing: still queued at the broker or lost, the client cannot
  tell (every missing one when not ``settled``).
- ``worker_lost``: with ``lost_processes`` (processes whose worker died: their last shipment never
  came), what would be ``lost`` or ``unreceived`` where a lost process took part: its producer sent
  the seq (it may never have left the dying process), or the seq's receiver may have been it (a
  queue group with a subscription of it; its own topic subscription), which got it after its last
  shipment, acknowledged or not. Never ``lost``: the client cannot tell. A lost process's
  subscriptions count as a drop each (what it had not acknowledged comes again); deliveries from
  its producers' unshipped sends are not ``foreign``; a lost process that shipped nothing may have
  consumed from any destination, and deliveries above its producer's last shipped seq are not
  ``unexpected``.
- ``aborted``: distinct seqs sent in a transaction that was aborted or rolled back (its connection
  closed before COMMIT): never expected, never lost. ``aborted_delivered``: of those, seqs a
  subscription received anyway (queue: the group; topic: Σ per subscription), a broker's violation
  of the ABORT (the report's gates fail on it). A COMMIT without its RECEIPT leaves its messages
  ``unconfirmed``, as a send without one.
- ``drops``: subscription sessions that ended with the connection dropping; on such a destination
  the duplicates are reported as ``after_reconnect`` (at-least-once redelivery), not ``duplicated``.
- ``by_subscription``: each subscription's own expected, received (a queue's: its share of the
  deliveries), lost, unreceived... and its sessions, drops, foreign and other-run counts.
- ``expired``: expected, not received, not unconfirmed, and certainly sent more than the producer's
  time-to-live (``--mq-ttl``) before ``now_ns`` (on its clock): the broker may drop it, so it is not
  lost, nor unreceived, nor in flight; the broker's own expired count is the check.
- ``delivered_expired``: deliveries after their expiry (by the receiver's clock, the producer's
  send time moved onto it with the clock offsets; :data:`~mqusers.audit.ledgers.EXPIRY_GRACE_NS`
  allowed): a violation, counted besides ``received``.
- ``reordered``, ``redelivered``: Σ over subscriptions, for known producers.
- ``kind``: ``"queue"``, ``"topic"``, ``"mixed"`` or ``None`` (no subscription).
- ``not_selected``: with selectors (:mod:`mqusers.options.selectors`), what a producer sent whose
  label no selector takes: a topic subscription's (Σ over subscriptions, within its window), or a
  queue group's when no subscription of the group takes it (those stay on the queue). Never
  expected, never lost. ``selector_violations``: deliveries to a subscription whose selector does
  not take the producing producer's label; left out of ``received``.
- ``groups``, ``group_violations``: with message groups, the groups delivered, and those two
  subscriptions had at once (:mod:`mqusers.audit.groupaudit`; per-group order is ``reordered``).
- ``nacks``: deliveries a consumer NACKed (``--mq-nack-ratio``), never received; ``dead_lettered``:
  expected, not received, and NACKed when last delivered, once ``settled``: the broker dead-lettered it
  (:mod:`mqusers.stomp.nacks`; what each broker does with a NACK: :mod:`mqusers.stomp.dialects`).
  Never lost. A delivery of a seq its process NACKed before is ``redelivered``, flagged or not.
"""

from __future__ import annotations

from mqusers.audit.auditstate import (
    FIGURES,
    SUB_FIGURES,
    Stream,
    Sub,
    figures_of,
    of_processes,
    pick,
    sub_entry,
    sub_figures,
    takes,
    with_nacked,
)
from mqusers.audit.bagsum import PendingBags, count
from mqusers.audit.entries import Delta, QueueEntry
from mqusers.audit.expected import END, Figures, compare, topic_window
from mqusers.audit.groupaudit import Span, judge
from mqusers.audit.intervals import IntervalBag, IntervalSet
from mqusers.audit.sendrecord import SendRecord

__all__ = ["FIGURES", "SUB_FIGURES", "Audit"]


class Audit:
    """Master side: merges drained deltas from any workers, in any order; see the module docs."""

    def __init__(self) -> None:
        self._producers: dict[tuple[str, str], SendRecord] = {}
        self._subs: dict[tuple[str, str], Sub] = {}
        # What a destination's queue group received, as its competing consumers' shares came (bagsum).
        self._shares: dict[tuple[str, str], PendingBags] = {}
        self._flagged: dict[tuple[str, str], IntervalSet] = {}  # of it, flagged redelivered (not in the bag)
        self._nacked: dict[tuple[str, str], IntervalSet] = {}  # seqs the group NACKed

    def merge(self, delta: Delta) -> None:
        """Add a :meth:`SentLedger.drain`, :meth:`ReceiveLedger.drain` or :meth:`snapshot` (or all)."""
        for e in delta.get("producers", ()):
            p = self._producers.setdefault((e["destination"], e["producer"]), SendRecord())
            p.process = pick(p.process, e["process"])
            p.bag.merge(IntervalBag.decode(e["seqs"]))
            p.last_ns = max(p.last_ns, e["last_ns"])
            p.add_checkpoints(e["checkpoints"])
            p.unconfirmed.union(IntervalSet.decode(e["unconfirmed"]))
            p.aborted.union(IntervalSet.decode(e["aborted"]))
            p.label = p.label or e.get("label", "")
            p.ttl_ns = max(p.ttl_ns, e.get("ttl_ns", 0))
            p.group = p.group or e.get("group", "")
        for entry in delta.get("subscriptions", ()):
            destination, kind = entry["destination"], entry["kind"]
            sub = self._subs.setdefault((destination, entry["key"]), Sub(kind))
            sub.kind, sub.durable = min(sub.kind, kind), sub.durable or bool(entry["durable"])
            sub.process = pick(sub.process, entry["process"])
            sub.broker = sub.broker or entry.get("broker", "")
            sub.probes += entry.get("probes", 0)
            sub.probes_sent += entry.get("probes_sent", 0)
            sub.foreign += entry["foreign"]
            sub.other_run += entry["other_run"]
            sub.drops += entry["drops"]
            sub.deliveries += entry["deliveries"]
            if (selects := entry.get("selects")) is not None:
                sub.selects = frozenset(selects)
            for session in entry["sessions"]:
                joined, left = session["joined_ns"], session["left_ns"]
                old = sub.sessions.get(joined, left)
                sub.sessions[joined] = left if old is None else old if left is None else max(old, left)
            for s in entry["streams"]:
                stream = sub.streams.get(s["producer"])
                if stream is None:
                    stream = sub.streams[s["producer"]] = Stream()
                stream.reordered += s["reordered"]
                stream.redelivered += s["redelivered"]
                stream.nacks += s.get("nacks", 0)
                deliveries = s.get("deliveries")
                if deliveries is None:
                    deliveries = count(s["seqs"]) + s["redelivered"] + s.get("nacks", 0)
                stream.deliveries += deliveries
                stream.late += s.get("late", 0)
                if "span" in s:
                    first, last = s["span"]
                    stream.first_ns = min(stream.first_ns or first, first)
                    stream.last_ns = max(stream.last_ns, last)
                # A queue group's receipts are one bag per destination and producer.
                key = (destination, s["producer"])
                if kind == "queue":
                    shares = self._shares.get(key)
                    if shares is None:
                        shares = self._shares[key] = PendingBags()
                    shares.add(s["seqs"])
                else:
                    stream.bag.merge(IntervalBag.decode(s["seqs"]))
                if s["flagged"]:
                    flagged = self._flagged.setdefault(key, IntervalSet()) if kind == "queue" else stream.flagged
                    flagged.union(IntervalSet.decode(s["flagged"]))
                if "nacked" in s:
                    nacked = self._nacked.setdefault(key, IntervalSet()) if kind == "queue" else stream.nacked
                    nacked.union(IntervalSet.decode(s["nacked"]))
        for share in delta.get("shares", ()):
            destination = share["destination"]
            for producer, seqs in zip(share["producers"], share["seqs"], strict=True):
                pending = self._shares.get((destination, producer))
                if pending is None:
                    pending = self._shares[(destination, producer)] = PendingBags()
                pending.add(seqs)
        for q in delta.get("queues", ()):
            key = (q["destination"], q["producer"])
            self._shares.setdefault(key, PendingBags()).add(q["seqs"])
            self._flagged.setdefault(key, IntervalSet()).union(IntervalSet.decode(q["flagged"]))
            self._nacked.setdefault(key, IntervalSet()).union(IntervalSet.decode(q.get("nacked", [])))

    def _queue_bags(self) -> dict[tuple[str, str], IntervalBag]:
        """Each queue group's receipts per producer, every share summed."""
        return {key: shares.bag() for key, shares in self._shares.items()}

    def shipped_by(self, process: str) -> dict[str, int]:
        """What one process's ledgers shipped: distinct seqs sent and deliveries taken, over all destinations."""
        sent = sum(len(p.bag.distinct) for p in self._producers.values() if p.process == process)
        received = sum(s.deliveries for s in self._subs.values() if s.process == process)
        return {"sent": sent, "received": received}

    def snapshot(self) -> Delta:
        """The whole state as one canonical delta: merging it into an empty Audit reproduces it."""
        return {
            "producers": [{"destination": d, "producer": n, "process": p.process, "seqs": p.bag.encode(),
                           "checkpoints": [list(c) for c in zip(p.cp_seq, p.cp_ns, strict=True)],
                           "last_ns": p.last_ns, "unconfirmed": p.unconfirmed.encode(), "aborted": p.aborted.encode(),
                           "label": p.label, "ttl_ns": p.ttl_ns, "group": p.group}
                          for (d, n), p in sorted(self._producers.items())],
            "subscriptions": [sub_entry(d, k, s) for (d, k), s in sorted(self._subs.items())],
            "queues": [with_nacked(QueueEntry(destination=d, producer=n, seqs=bag.encode(),
                                          flagged=self._flagged.get((d, n), IntervalSet()).encode()),
                               self._nacked.get((d, n)))
                       for (d, n), bag in sorted(self._queue_bags().items())],
        }  # fmt: skip

    def verdict(
        self,
        now_ns: int,
        drain_ns: int,
        clock_offsets: dict[str, int] | None = None,
        *,
        settled: bool = True,
        lost_processes: frozenset[str] = frozenset(),
    ) -> dict[str, Figures]:
        """Figures per destination (see the module docs); ``now_ns`` is on the master's clock.

        ``settled`` says the consumers went idle before the end: a missing message below one that
        arrived from the same producer is then lost; otherwise every missing one is unreceived.
        ``lost_processes``: processes whose worker died (``worker_lost``).
        """
        gone = lost_processes
        # A lost process that never shipped a thing may have consumed from any destination.
        seen = {p.process for p in self._producers.values()} | {sub.process for sub in self._subs.values()}
        blind = bool(gone - seen)
        offsets = clock_offsets or {}
        horizon = now_ns - drain_ns
        out: dict[str, Figures] = {}
        known: dict[str, dict[str, SendRecord]] = {}
        for (destination, name), p in sorted(self._producers.items()):
            fig, sent = figures_of(out, destination), p.bag.distinct
            fig["producers"] += 1
            fig["sent"] += len(sent)
            fig["resent"] += len(p.bag) - len(sent)
            fig["aborted"] += len(sent.intersection(p.aborted)) if p.aborted else 0
            if sent:
                fig["skipped"] += sent.missing_in(min(1, sent.first or 0), sent.last or 0)
            known.setdefault(destination, {})[name] = p
        queues: set[str] = set()
        selecting: dict[str, list[Sub]] = {}  # a queue group's confirmed subscriptions
        touched: set[str] = set()  # queues a lost process consumed from
        for (destination, key), sub in sorted(self._subs.items()):
            fig, producers = figures_of(out, destination), known.get(destination, {})
            fig["subscriptions"] += 1
            fig["kind"] = sub.kind if fig["kind"] in (None, sub.kind) else "mixed"
            fig["foreign"] += sub.foreign
            fig["other_run"] += sub.other_run
            fig["drops"] += sub.drops + (sub.process in gone)
            if (blind or sub.process in gone) and sub.kind == "queue":
                touched.add(destination)
            own = sub_figures(key, sub)
            fig["by_subscription"].append(own)
            fig["probes"] += sub.probes
            fig["probes_sent"] += sub.probes_sent
            own["probes"] = sub.probes
            for name, stream in sub.streams.items():
                if name in producers and not takes(sub, producers[name]):
                    fig["selector_violations"] += stream.deliveries
                    own["selector_violations"] += stream.deliveries
                elif name in producers:
                    for into in (fig, own):
                        into["reordered"] += stream.reordered
                        into["redelivered"] += stream.redelivered
                        into["delivered_expired"] += stream.late
                        into["nacks"] += stream.nacks
                elif not of_processes(name, gone):
                    fig["foreign"] += len(stream.bag) + stream.redelivered  # a queue's bag: below
            if sub.kind == "queue":
                own["received"] = sub.deliveries - own["selector_violations"] - own["nacks"]
                if sub.sessions:  # a queue nobody was confirmed to read expects no delivery
                    queues.add(destination)
                    group = selecting.setdefault(destination, [])
                    group.append(sub)
                continue
            for name, p in producers.items():
                stream = sub.streams.get(name, Stream())
                window, zone = topic_window(sub.process, sub.sessions, sub.durable, p, offsets, drain_ns, horizon)
                lost = blind or p.process in gone or sub.process in gone
                expected = p.bag.distinct.intersection(window)
                if not takes(sub, p):
                    fig["not_selected"] += len(expected)
                    own["not_selected"] += len(expected)
                    continue
                gone_by = p.expired_by(now_ns + offsets.get(p.process, 0))
                both = (fig, own)
                compare(both, p, expected, stream.bag, zone, settled, lost, stream.flagged, gone_by, stream.nacked)
        queue_bags = self._queue_bags()
        for (destination, name), received in sorted(queue_bags.items()):
            if name not in known.get(destination, {}) and not of_processes(name, gone):
                out[destination]["foreign"] += len(received)
        for destination in queues:
            for name, p in known.get(destination, {}).items():
                if not any(takes(sub, p) for sub in selecting[destination]):
                    out[destination]["not_selected"] += len(p.bag.distinct)  # left on the queue
                    continue
                zone = IntervalSet([(p.before(horizon + offsets.get(p.process, 0)) + 1, END)])
                received = queue_bags.get((destination, name), IntervalBag())
                flagged = self._flagged.get((destination, name), IntervalSet())
                lost = p.process in gone or destination in touched
                gone_by = p.expired_by(now_ns + offsets.get(p.process, 0))
                nacked = self._nacked.get((destination, name))
                compare((out[destination],), p, p.bag.distinct, received, zone, settled, lost, flagged, gone_by, nacked)
        for destination, producers in known.items():
            # A put-only fill, or no SUBSCRIBE confirmed: no delivery expected, sends still unsure.
            if not any(sub["sessions"] for sub in out[destination]["by_subscription"]):
                out[destination]["unconfirmed"] = sum(len(p.bag.distinct.intersection(p.unconfirmed))
                                                      for p in producers.values())  # fmt: skip
        spans: dict[str, list[Span]] = {}
        for (destination, key), sub in self._subs.items():
            producers = known.get(destination, {})
            shift = offsets.get(sub.process, 0)  # onto the master's clock
            spans.setdefault(destination, []).extend(
                (producers[name].group, key, stream.first_ns - shift, stream.last_ns - shift)
                for name, stream in sub.streams.items()
                if stream.first_ns and name in producers and producers[name].group
            )
        for destination, found in spans.items():
            out[destination]["groups"], out[destination]["group_violations"] = judge(found)
        for fig in out.values():
            if fig["drops"]:
                # At-least-once: what a dropped connection had not acknowledged comes again.
                fig["after_reconnect"], fig["duplicated"] = fig["duplicated"], 0
        return out
