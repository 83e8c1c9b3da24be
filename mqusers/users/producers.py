"""Abstract producer Users: stamped messages to a destination (or each of a pattern's), paced or not.

Configured like every mqusers User (:mod:`mqusers.users.base`): class attributes, overridden by
non-empty ``--mq-*`` options. :mod:`mqusers.users.pacing` says when to send.
"""

from __future__ import annotations

from locust import task

import functools
import logging
import random
import time
from typing import Any, ClassVar

import gevent
from gevent import GreenletExit

from mqusers.audit.ledgers import SentStream
from mqusers.measure.names import REQUEST_TYPE, SCHEDULE_LAG, event_name
from mqusers.options.groups import HEADER as GROUP
from mqusers.options.groups import group_of
from mqusers.options.payloadspec import PayloadSpec
from mqusers.options.selectors import HEADER, label_of
from mqusers.run.context import coordinator_for
from mqusers.stomp.client import MqError, Publisher, Sent
from mqusers.stomp.probe import DEMAND_WAIT_S
from mqusers.stomp.wire import due_line
from mqusers.users import payloads
from mqusers.users.base import StompUser
from mqusers.users.inflight import ReceiptWindow
from mqusers.users.lanes import Lane, dealt
from mqusers.users.pacing import FixedRate, NoBlock, SharedSchedule, due_epoch_ns, until_due
from mqusers.users.publishers import Stamping, choose, publishers_for

#: Unpaced bursts: at most this many messages, or bytes of bodies, per write.
_BURST_MAX, _BURST_BYTES = 64, 64 * 1024
#: Unpaced sync sends: at most this many one after another in a task run.
_SYNC_BURST = 32
logger = logging.getLogger(__name__)


class StompProducerUser(StompUser):
    """Sends stamped messages to ``destination``, paced at ``rate`` messages/s per user.

    A destination pattern: this user sends to its share of the pattern's destinations
    (:func:`~mqusers.users.base.lanes`) in turn, each write to the next, each destination numbered
    from 1 on its own (the audit's seqs are per destination and producer). ``seq`` counts every
    message it sent (``max_messages``); ``_sent`` is the current lane's, its bodies dealt to it
    (:func:`~mqusers.users.lanes.dealt`).
    """

    abstract = True
    #: Persistent messages (``persistent:true``) survive a broker restart.
    persistent = False
    #: Wait for the broker's RECEIPT on every message (sync send) and time it.
    receipts = False
    #: With receipts: sends that may await their RECEIPT at once (1: each waits for its own).
    in_flight = 1
    #: Paced: the first message after a random part of the interval, so many slow producers spread out.
    random_start = False
    #: Messages per second for this user; 0 sends as fast as the connection takes them.
    rate = 0.0
    #: Messages this user sends before it idles; 0 means until the run ends.
    max_messages = 0
    #: Extra SEND headers, e.g. ``{"priority": "4"}``.
    headers: ClassVar[dict[str, str]] = {}
    #: Priority levels (``--mq-priorities``, 2 to 10): message seq has level seq mod K; 0: no priority header.
    priorities = 0
    #: What the bodies are made of (``--mq-payload``); random printable ones by default.
    payload = PayloadSpec()

    def __init__(self, environment: Any):
        super().__init__(environment)
        self.persistent, self.receipts = self.setting("persistent"), self.setting("receipts")
        self.rate, self.max_messages = self.setting("rate"), self.setting("max_messages")
        self.producer_id = f"{self.mq.process_tag}.{type(self).__name__}.{self.ordinal}"
        self.seq = 0
        self.coordinator = coordinator_for(environment, self.mq)
        self.pacer = FixedRate(self.rate)
        #: Seconds before the first message: a random part of the interval (``random_start``), else none.
        self.phase_s = random.random() / self.rate if self.setting("random_start") and self.rate > 0 else 0.0
        in_flight = self.setting("in_flight")
        self.window = ReceiptWindow(self.client, in_flight) if self.receipts and in_flight > 1 else None
        #: On the run-wide schedule of --mq-total-rate / --mq-total-messages rather than per user.
        settings = self.mq.settings
        self.shared = bool(settings.total_rate or settings.total_messages or settings.profile)
        self.schedule = SharedSchedule(self._draw_block)
        self._lag = self.client.operation(event_name(SCHEDULE_LAG, self.destination))
        self._due_header = b""
        self.payload = self.mq.settings.payload or self.payload
        #: A CSV profile's size column: each message is sent at the size in effect at its due time.
        self.sizes = settings.profile if settings.profile is not None and settings.profile.sizes else None
        self.size = (self.sizes.size_at(0.0) if self.sizes else None) or self.message_size
        self.bodies = payloads.bodies(self.payload, self.size, settings.size_dist)
        sent, labels, ttl_ns = self.mq.sent, self.setting("labels"), self.setting("ttl_ms") * 1_000_000
        self.priorities = self.setting("priorities") or 0
        #: The ``mqlabel`` header its messages carry, which consumers' selectors take or leave.
        self.label = label_of(self.ordinal, labels) if labels else ""
        groups = self.setting("groups")
        #: The message group all its messages are in ("" for none).
        self.message_group = group_of(self.ordinal, groups) if groups else ""
        stamp = {
            **({HEADER: self.label} if self.label else {}),
            **({GROUP: self.message_group} if groups else {}),
        }
        self.stamping = Stamping(self.mq.run_id, self.producer_id, self.destination, self.persistent,
                                 self.setting("ttl_ms"), self.priorities, {**self.headers, **stamp})  # fmt: skip
        self.lane_list = [Lane(d, self._publishers(i),
                               sent.producer(d, self.producer_id, self.label, ttl_ns, self.message_group),
                               size=self.size)
                          for i, d in enumerate(self.lanes)]  # fmt: skip
        self._lane_index = len(self.lane_list) - 1  # the first write goes to the first lane
        self.lane = self.lane_list[0]
        self._sent = self.lane.sent
        #: Which of the lane's bodies goes next; producers start at different ones.
        self._turn = self.ordinal
        #: The dialect ``publisher`` was made for: remade once the broker says which it is.
        self._publisher_dialect = self.client.dialect
        #: Messages per task run: unpaced sends without receipts go out in one write of up to 64 KB;
        #: unpaced sync sends (receipts, a count of its own per producer) up to 32 one after another,
        #: each awaiting its turn, as a Locust task run costs a hub turn a message otherwise; a
        #: subclass with its own ``emit`` gets one message a run.
        single = self.rate > 0 or settings.total_rate or settings.profile or self.priorities
        single = single or type(self).emit is not StompProducerUser.emit or (self.receipts and self.shared)
        largest = max(map(len, self.bodies))
        if single:
            self.burst = 1
        else:
            self.burst = _SYNC_BURST if self.receipts else max(1, min(_BURST_MAX, _BURST_BYTES // max(1, largest)))
        #: When the last send the broker took (written, or confirmed with receipts) went out; -1: none.
        self.ok_ns = -1
        self.mq.producers.append((self.destination, self.client))

    def _publishers(self, lane: int) -> list[Publisher]:
        """Lane ``lane``'s publishers: its share of the bodies (:func:`~mqusers.users.lanes.dealt`), each stamped."""
        bodies = dealt(self.bodies, len(self.lanes), lane)
        return publishers_for(self.client, self.stamping, self.lanes[lane], bodies)

    def publisher(self, seq: int = 0) -> Publisher:
        """The current lane's next publisher, one body per write; with priorities, of message ``seq``'s level."""
        self._turn += 1
        return choose(self.lane.publishers, self._turn, seq, self.priorities)

    def wait_time(self) -> float:
        if self.done():
            return 1.0
        return 0.0 if self.shared else self.pacer.delay()

    def on_start(self) -> None:
        settings = self.mq.settings
        # A subscriber on another broker counts at the barrier once the network's demand reached this one.
        timeout = settings.timeout + (DEMAND_WAIT_S if settings.consumer_brokers else 0.0)
        plan = self.coordinator.wait_for_plan(timeout)
        if plan is None:
            logger.warning("mqusers: producers start before all subscribers subscribed (waited %gs)", timeout)
        elif self.shared:
            # Message k is due at t0 + k/rate on the master's clock; move t0 to this process's clocks.
            t0_local_ns = plan.t0_ns + self.coordinator.follower.own_offset_ns
            profile = self.mq.settings.profile
            self.schedule.start(time.perf_counter() + (t0_local_ns - time.time_ns()) / 1e9, plan.rate,
                                profile.due_s if profile is not None else None)  # fmt: skip
        super().on_start()
        if self.phase_s and not self.shared:
            gevent.sleep(self.phase_s)

    def done(self) -> bool:
        return self.schedule.finished or not self.mq.producing or 0 < self.max_messages <= self.seq

    def on_connected(self) -> None:
        remake = self.client.dialect is not self._publisher_dialect
        self._publisher_dialect = self.client.dialect
        for index, lane in enumerate(self.lane_list):
            lane.connection_seq = lane.seq + 1
            if remake:
                lane.publishers, lane.size = self._publishers(index), self.size

    def last_ok_ns(self) -> int:
        return self.ok_ns

    def on_connection_lost(self, dropped: bool) -> None:
        if dropped and not self.receipts:
            for lane in self.lane_list:
                if lane.seq >= lane.connection_seq:
                    # No receipts: what the broker made of the dropped connection's messages is unknown.
                    lane.sent.unconfirmed.add_range(lane.connection_seq, lane.seq)

    def on_stop(self) -> None:
        if self.window is not None:
            self.window.abandon_all()
        super().on_stop()

    @task
    def send(self) -> None:
        # The one task of every producer (Locust runs a base class's tasks too): subclasses override send_burst.
        self.send_burst()

    def send_burst(self) -> None:
        """Send this task run's messages (one, or an unpaced burst in one write), connecting first if needed."""
        if self.done():
            if self.window is not None:
                self.window.settle_all(self.mq.settings.timeout)
            return
        if not self.ensure_connected():
            gevent.sleep(min(self.backoff_remaining(), 1.0))
            return
        if self.done():
            return  # the run (or this producer's share) ended while it connected: a send now would follow the stop
        count = self.burst_size()
        if self.shared:
            count = self._take_slots(count)
            if not count:
                return
        lane = self._next_lane()
        if lane.size != self.size:  # the profile's size changed: publishers of the new bodies, made once
            lane.publishers = self._publishers(self._lane_index)
            lane.size = self.size
        if self.receipts:
            self._emit_each(lane, count)
        else:
            first, lane.seq = lane.seq + 1, lane.seq + count
            self.seq += count
            self._guarded(first, count)
        if self.availability.pending:
            self.availability.back(self.ok_ns)  # the first good send after a reconnect ends the outage

    def _emit_each(self, lane: Lane, count: int) -> None:
        """Up to ``count`` sync sends, each numbered as it goes: a stop or a dropped connection between
        two leaves the rest unsent and unnumbered."""
        for index in range(count):
            if index and (self.done() or not self.client.connected):
                return
            lane.seq += 1
            self.seq += 1
            self._guarded(lane.seq, 1)

    def _guarded(self, first: int, count: int) -> None:
        """Send messages ``first`` .. ``first + count - 1`` (one write), accounting for a stop mid-send."""
        try:
            if count == 1:
                self.emit(first)
            else:
                self.emit_many(first, count)
        except (GreenletExit, gevent.Timeout):
            # Stopped mid-send (the run's end found the broker not reading): what went out whole may
            # still reach the broker, so it counts as sent, its outcome unknown.
            in_window = self.window is not None and self.window.written
            if self.window is not None:
                self.window.abandon_all()  # this message among them when it was written
            if not in_window:
                self._sent_unsure(first, self.client.interrupted_whole(count))
            raise

    def _draw_block(self, first: bool) -> tuple[int, int] | None:
        # The master counts this producer done once a draw comes back empty, and may end the run at
        # once: the RECEIPTs its window still awaits come in first.
        timeout = self.mq.settings.timeout
        if self.window is not None:
            self.window.settle_all(timeout)
        return self.coordinator.next_block(timeout, first)

    def _next_lane(self) -> Lane:
        """The lane this write goes to: the next in turn (the only one for a plain destination)."""
        lanes = self.lane_list
        if len(lanes) > 1:
            self._lane_index = (self._lane_index + 1) % len(lanes)
            self.lane = lanes[self._lane_index]
            self._sent = self.lane.sent
        return self.lane

    def burst_size(self) -> int:
        """Messages this task run sends (one write unless paced), within ``max_messages``."""
        return min(self.burst, self.max_messages - self.seq) if self.max_messages else self.burst

    def _take_slots(self, count: int) -> int:
        """Take up to ``count`` slots of the shared schedule (one when paced, slept until it is due)."""
        taken, slot = 0, None
        try:
            while taken < count:
                slot = self.schedule.next()
                if slot is None:
                    break
                taken += 1
                if slot.due is not None:
                    break
        except NoBlock as error:
            if taken:
                return taken
            self.client.fire(
                request_type=REQUEST_TYPE, name=self._lag.name, response_time=self.mq.settings.timeout * 1000.0,
                response_length=0, exception=MqError(str(error)), context={},
            )  # fmt: skip
            return 0
        if slot is not None and slot.due is not None:
            # Unpaced, nothing is "due": only a schedule gives a coordinated-omission-corrected latency.
            # Never sent before its due time (up to a loop tick late instead), and the due time in
            # epoch ns from the clocks read after the wait: the send stamp, read later, is never below it.
            late = until_due(slot.due, time.perf_counter, gevent.sleep)
            if not self.mq.producing:
                return 0  # the run ended while this producer waited: a send now would follow the stop
            self._due_header = due_line(due_epoch_ns(slot.due, time.perf_counter(), time.time_ns()))
            self._lag.record(int(late * 1e6), 0, time.time_ns())
            if self.sizes is not None:  # the size in effect at its due time, however late it goes
                size = self.sizes.size_at(self.sizes.due_s(slot.index)) or self.message_size
                if size != self.size:  # the bodies of each size made once per process (payloads.bodies)
                    self.size, self.bodies = size, payloads.bodies(self.payload, size)
        return taken

    def emit(self, seq: int) -> None:
        """Send message ``seq``. (One task for all producers: Locust also runs inherited tasks.)"""
        if self.window is not None:
            self.window.send(self.publisher(seq), seq, self._due_header, functools.partial(self._settled, self._sent))
        else:
            outcome = self.client.publish(self.publisher(seq), seq, sync=self.receipts, extra=self._due_header)
            self._settled(self._sent, seq, outcome)

    def _settled(self, sent: SentStream, seq: int, outcome: Sent) -> None:
        """What became of message ``seq`` of the lane whose ledger is ``sent``: sent (confirmed, or its
        outcome unknown), or refused."""
        if outcome:
            now = time.time_ns()
            sent.record(seq, now)
            if outcome is Sent.UNCONFIRMED:
                sent.unconfirmed.add(seq)
            else:
                self.ok_ns = now

    def emit_many(self, first: int, count: int) -> None:
        """Send messages ``first`` .. ``first + count - 1`` in one write (unpaced, no receipts)."""
        whole = self.client.publish_many(self.publisher(), first, count)
        if whole == count:
            self.ok_ns = time.time_ns()
            self._sent.record_run(first, count, self.ok_ns)
        else:  # the write failed after these: the broker may still read them
            self._sent_unsure(first, whole)

    def _sent_unsure(self, first: int, count: int) -> None:
        """Messages ``first`` .. ``first + count - 1`` left whole on a write that then failed or was cut."""
        if count:
            self._sent.record_run(first, count, time.time_ns())
            self._sent.unconfirmed.add_range(first, first + count - 1)
