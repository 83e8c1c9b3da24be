"""Abstract Locust Users that load a STOMP broker: the base User, producers and requesters.

Configure by subclassing and setting attributes: each class attribute is the scenario's default; a
non-empty ``--mq-*`` option overrides it for the run. The Users hold no sockets:
:class:`mqusers.client.StompClient` (``client_cls``) does the messaging and fires the request
events; :mod:`mqusers.pacing` says when to send. Consumers and responders are in
:mod:`mqusers.consumers`.
"""

from __future__ import annotations

from locust import User, task
from locust.exception import StopUser

import logging
import random
import time
from typing import Any, ClassVar

import gevent

from mqusers.client import MqError, Publisher, Sent, StompClient
from mqusers.measure.outages import Availability
from mqusers.names import REQUEST_TYPE, SCHEDULE_LAG, event_name
from mqusers.pacing import FixedRate, NoBlock, SharedSchedule
from mqusers.run import RunContext, client_config, context, coordinator_for
from mqusers.wire import SendFrames, due_line, make_body

#: Reconnect back-off: doubling from the minimum, capped so a client is back within ~1 s of its broker.
_RETRY_MIN_S, _RETRY_MAX_S = 0.25, 1.0
#: The event loop's timer resolution: libev's epoll backend sleeps at least 1 ms.
_TICK_S = 0.001
#: Unpaced bursts: at most this many messages, or bytes of bodies, per write.
_BURST_MAX, _BURST_BYTES = 64, 64 * 1024
#: A connection that lived this long has worked: the next reconnect starts the back-off afresh.
_STABLE_S = _RETRY_MAX_S
logger = logging.getLogger(__name__)


class StompUser(User):
    """Connects on start, reconnects with back-off when the connection drops, disconnects on stop."""

    abstract = True
    client_cls: type[StompClient] = StompClient
    #: ``"producer"`` or ``"consumer"``: ``--mq-consumers N`` pins the number of consumer users.
    role: ClassVar[str] = "producer"
    #: The destination, e.g. ``/queue/orders`` or ``/topic/prices``.
    destination = "/queue/mqusers"
    #: Body size in bytes.
    message_size = 1024

    def __init__(self, environment: Any):
        super().__init__(environment)
        self.mq: RunContext = context(environment)
        if self.mq.error:
            raise StopUser()
        settings = self.mq.settings
        self.destination = settings.destination or self.destination
        self.message_size = settings.size or self.message_size
        self.ordinal = self.mq.next_ordinal(type(self))
        self.client = self.client_cls(
            client_config(settings, self.client_id()), environment.events.request.fire, recorder=self.mq.recorder
        )
        self._retry_at = 0.0
        self._retry_s = _RETRY_MIN_S
        self._lost_generation = 0
        self.availability = Availability(
            self.mq.outages, self.role, self.destination, f"{self.mq.process_tag}.{type(self).__name__}.{self.ordinal}"
        )

    def client_id(self) -> str | None:
        """The CONNECT ``client-id``; only durable subscribers need a stable one."""
        return None

    def on_start(self) -> None:
        self.ensure_connected()

    def on_stop(self) -> None:
        self.client.disconnect()

    def ensure_connected(self) -> bool:
        """Connect if needed, at most once per back-off period; the connect event records each try.

        The back-off (doubling, jittered, capped) starts afresh only after a connection that lasted:
        a broker that accepts CONNECT and then refuses the subscription must not be hammered.
        """
        client = self.client
        if client.connected:
            return True
        now = time.monotonic()
        if client.generation != self._lost_generation:
            self._lost_generation = client.generation
            if now - client.connected_at >= _STABLE_S:
                self._retry_s, self._retry_at = _RETRY_MIN_S, 0.0
            else:
                self._back_off(now)
            if client.dropped:
                self.availability.lost(self.last_ok_ns(), client.lost_ns)
            self.on_connection_lost(client.dropped)
        if now < self._retry_at:
            return False
        attempt_ns = time.time_ns()
        try:
            client.connect()
            connected_ns = time.time_ns()
            self.on_connected()
        except MqError as error:
            client.abort()
            self._lost_generation = client.generation
            self._back_off(now)
            self.availability.refused(attempt_ns, str(error))
            return False
        self.availability.reconnected(connected_ns)
        return True

    def _back_off(self, now: float) -> None:
        self._retry_at = now + self._retry_s * random.uniform(0.5, 1.0)
        self._retry_s = min(self._retry_s * 2, _RETRY_MAX_S)

    def backoff_remaining(self) -> float:
        """Seconds until the next reconnect attempt (0 when connected or due)."""
        return 0.0 if self.client.connected else max(0.0, self._retry_at - time.monotonic())

    def last_ok_ns(self) -> int:
        """When this User last did its job (a send, a delivery), -1 for never: where an outage starts."""
        return -1

    def on_connected(self) -> None:
        """Subscribe or prepare frames once connected (again)."""

    def on_connection_lost(self, dropped: bool) -> None:
        """The connection ended (``dropped``: not by this User); called once, before reconnecting."""

    def setting(self, name: str) -> Any:
        """The run's ``--mq-<name>`` value when given, else this class's attribute."""
        value = getattr(self.mq.settings, name)
        return getattr(self, name) if value is None else value


class StompProducerUser(StompUser):
    """Sends stamped messages to ``destination``, paced at ``rate`` messages/s per user."""

    abstract = True
    #: Persistent messages (``persistent:true``) survive a broker restart.
    persistent = False
    #: Wait for the broker's RECEIPT on every message (sync send) and time it.
    receipts = False
    #: Messages per second for this user; 0 sends as fast as the connection takes them.
    rate = 0.0
    #: Messages this user sends before it idles; 0 means until the run ends.
    max_messages = 0
    #: Extra SEND headers, e.g. ``{"priority": "4"}``.
    headers: ClassVar[dict[str, str]] = {}

    def __init__(self, environment: Any):
        super().__init__(environment)
        self.persistent, self.receipts = self.setting("persistent"), self.setting("receipts")
        self.rate, self.max_messages = self.setting("rate"), self.setting("max_messages")
        self.producer_id = f"{self.mq.process_tag}.{type(self).__name__}.{self.ordinal}"
        self.seq = 0
        self.coordinator = coordinator_for(environment, self.mq)
        self.pacer = FixedRate(self.rate)
        #: On the run-wide schedule of --mq-total-rate / --mq-total-messages rather than per user.
        self.shared = bool(self.mq.settings.total_rate or self.mq.settings.total_messages)
        timeout = self.mq.settings.timeout
        self.schedule = SharedSchedule(lambda first: self.coordinator.next_block(timeout, first))
        self._lag = self.client.operation(event_name(SCHEDULE_LAG, self.destination))
        self._due_header = b""
        self.publisher = self.make_publisher(self.destination, {})
        #: Messages per task run: unpaced sends without receipts go out in one write of up to 64 KB;
        #: a subclass with its own ``emit`` gets it called per message.
        paced = self.receipts or self.rate > 0 or self.mq.settings.total_rate
        own_emit = type(self).emit is not StompProducerUser.emit
        self.burst = 1 if paced or own_emit else max(1, min(_BURST_MAX, _BURST_BYTES // max(1, self.message_size)))
        self._sent = self.mq.sent.producer(self.destination, self.producer_id)
        #: The first seq sent on the current connection.
        self._connection_seq = 1
        #: When the last send the broker took (written, or confirmed with receipts) went out; -1: none.
        self.ok_ns = -1
        self.mq.producers.append((self.destination, self.client))

    def make_publisher(self, destination: str, headers: dict[str, str]) -> Publisher:
        frame_headers = {**self.headers, **headers}
        if self.persistent:
            frame_headers["persistent"] = "true"
        body = make_body(self.message_size)
        return self.client.publisher(
            destination, SendFrames(destination, body, self.mq.run_id, self.producer_id, frame_headers)
        )

    def wait_time(self) -> float:
        if self.done():
            return 1.0
        return 0.0 if self.shared else self.pacer.delay()

    def on_start(self) -> None:
        timeout = self.mq.settings.timeout
        plan = self.coordinator.wait_for_plan(timeout)
        if plan is None:
            logger.warning("mqusers: producers start before all subscribers subscribed (waited %gs)", timeout)
        elif self.shared:
            # Message k is due at t0 + k/rate on the master's clock; move t0 to this process's clocks.
            t0_local_ns = plan.t0_ns + self.coordinator.follower.own_offset_ns
            self.schedule.start(time.perf_counter() + (t0_local_ns - time.time_ns()) / 1e9, plan.rate)
        super().on_start()

    def done(self) -> bool:
        return self.schedule.finished or not self.mq.producing or 0 < self.max_messages <= self.seq

    def on_connected(self) -> None:
        self._connection_seq = self.seq + 1

    def last_ok_ns(self) -> int:
        return self.ok_ns

    def on_connection_lost(self, dropped: bool) -> None:
        if dropped and not self.receipts and self.seq >= self._connection_seq:
            # No receipts: what the broker made of the dropped connection's messages is unknown.
            self._sent.unconfirmed.add_range(self._connection_seq, self.seq)

    @task
    def send(self) -> None:
        if self.done():
            return
        if not self.ensure_connected():
            gevent.sleep(min(self.backoff_remaining(), 1.0))
            return
        count = self.burst
        if self.max_messages:
            count = min(count, self.max_messages - self.seq)
        if self.shared:
            count = self._take_slots(count)
            if not count:
                return
        first, self.seq = self.seq + 1, self.seq + count
        if count == 1:
            self.emit(first)
        else:
            self.emit_many(first, count)
        if self.availability.pending:
            self.availability.back(self.ok_ns)  # the first good send after a reconnect ends the outage

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
            self._due_header = due_line(time.time_ns() + int((slot.due - time.perf_counter()) * 1e9))
            delay = slot.due - time.perf_counter()
            if delay > _TICK_S:
                # gevent's loop cannot sleep less than its tick (epoll waits whole ms): wake within a
                # tick before the due time and send then, rather than up to a tick late.
                gevent.sleep(delay - _TICK_S)
            if not self.mq.producing:
                return 0  # the run ended while this producer waited: a send now would follow the stop
            late = time.perf_counter() - slot.due
            self._lag.record(int(late * 1e6) if late > 0 else 0, 0, time.time_ns())
        return taken

    def emit(self, seq: int) -> None:
        """Send message ``seq``. (One task for all producers: Locust also runs inherited tasks.)"""
        outcome = self.client.publish(self.publisher, seq, sync=self.receipts, extra=self._due_header)
        if outcome:
            now = time.time_ns()
            self._sent.record(seq, now)
            if outcome is Sent.UNCONFIRMED:
                self._sent.unconfirmed.add(seq)
            else:
                self.ok_ns = now

    def emit_many(self, first: int, count: int) -> None:
        """Send messages ``first`` .. ``first + count - 1`` in one write (unpaced, no receipts)."""
        if self.client.publish_many(self.publisher, first, count):
            self.ok_ns = time.time_ns()
            self._sent.record_run(first, count, self.ok_ns)


class StompRequesterUser(StompProducerUser):
    """Sends requests to ``destination`` and times each reply (sync request/reply)."""

    abstract = True
    #: ``temp`` replies on a temporary queue; ``queue`` on a queue of this requester's own.
    reply_to = "temp"

    def __init__(self, environment: Any):
        super().__init__(environment)
        self.reply_to = self.setting("reply_to")
        self.reply_destination = ""

    def on_connected(self) -> None:
        super().on_connected()
        dialect = self.client.dialect
        name = self.producer_id.replace(".", "-")
        if self.reply_to == "temp" and dialect.temp_queue_needs_subscribe is not None:
            self.reply_destination = f"/temp-queue/mqusers-{name}"
            if not dialect.temp_queue_needs_subscribe:
                self.client.route(self.reply_destination, self.client.reply_arrived)
                return
            self.client.subscribe(self.reply_destination, self.client.reply_arrived, ack="auto", headers={})
            return
        queue = f"mqusers.reply.{name}"
        headers = dict(dialect.reply_queue_subscribe)
        self.client.subscribe(f"/queue/{queue}", self.client.reply_arrived, ack="auto", headers=headers)
        self.reply_destination = dialect.reply_queue_address.format(name=queue)

    def emit(self, seq: int) -> None:
        outcome = self.client.request(self.publisher, seq, self.reply_destination)
        if outcome:
            self.ok_ns = time.time_ns()
            self._sent.record(seq, self.ok_ns)
