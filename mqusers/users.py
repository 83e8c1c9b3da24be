"""Abstract Locust Users that load a STOMP broker. Configure by subclassing and setting attributes.

Each class attribute is the scenario's default; a non-empty ``--mq-*`` option overrides it for the
run. The Users hold no sockets: :class:`mqusers.client.StompClient` (``client_cls``) does the
messaging and fires the request events.
"""

from __future__ import annotations

from locust import User, task
from locust.exception import StopUser

import contextlib
import logging
import random
import time
from typing import Any, ClassVar

import gevent

from mqusers.client import MqError, Publisher, Sent, StompClient
from mqusers.names import REQUEST_TYPE, SCHEDULE_LAG, destination_kind, event_name
from mqusers.receiver import Receiver, Replier
from mqusers.run import RunContext, client_config, context, coordinator_for
from mqusers.wire import SendFrames, make_body

_RETRY_MIN_S, _RETRY_MAX_S = 0.5, 5.0
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
        self.client = self.client_cls(client_config(settings, self.client_id()), environment.events.request.fire)
        self._retry_at = 0.0
        self._retry_s = _RETRY_MIN_S
        self._lost_generation = 0

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
            self.on_connection_lost(client.dropped)
        if now < self._retry_at:
            return False
        try:
            client.connect()
            self.on_connected()
        except MqError:
            client.abort()
            self._lost_generation = client.generation
            self._back_off(now)
            return False
        return True

    def _back_off(self, now: float) -> None:
        self._retry_at = now + self._retry_s * random.uniform(0.5, 1.0)
        self._retry_s = min(self._retry_s * 2, _RETRY_MAX_S)

    def backoff_remaining(self) -> float:
        """Seconds until the next reconnect attempt (0 when connected or due)."""
        return 0.0 if self.client.connected else max(0.0, self._retry_at - time.monotonic())

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
        self._next_due = 0.0
        self.coordinator = coordinator_for(environment, self.mq)
        #: On the run-wide schedule of --mq-total-rate / --mq-total-messages rather than per user.
        self.shared = bool(self.mq.settings.total_rate or self.mq.settings.total_messages)
        self._finished = False
        self._t0, self._interval, self._index, self._block_end = time.perf_counter(), 0.0, 0, 0
        self._drawn = False
        self._lag_name = event_name(SCHEDULE_LAG, self.destination)
        self._due_header = b""
        self.publisher = self.make_publisher(self.destination, {})
        self._sent = self.mq.sent.producer(self.destination, self.producer_id)
        #: The first seq sent on the current connection.
        self._connection_seq = 1
        self.mq.producers.append((self.destination, self.client))

    def make_publisher(self, destination: str, headers: dict[str, str]) -> Publisher:
        frame_headers = {**self.headers, **headers}
        if self.persistent:
            frame_headers["persistent"] = "true"
        body = make_body(self.message_size)
        return Publisher(destination, SendFrames(destination, body, self.mq.run_id, self.producer_id, frame_headers))

    def wait_time(self) -> float:
        # A fixed schedule (next = previous + 1/rate) keeps the rate exact over the run.
        if self.done():
            return 1.0
        if self.rate <= 0 or self.shared:
            return 0.0
        now = time.perf_counter()
        # Behind by more than a second (a stall, a reconnect): resume the schedule from now.
        self._next_due = max(self._next_due + 1.0 / self.rate, now - 1.0) if self._next_due else now
        return max(0.0, self._next_due - now)

    def on_start(self) -> None:
        timeout = self.mq.settings.timeout
        plan = self.coordinator.wait_for_plan(timeout)
        if plan is None:
            logger.warning("mqusers: producers start before all subscribers subscribed (waited %gs)", timeout)
        elif self.shared:
            # Message k is due at t0 + k/rate on the master's clock; move t0 to this process's clocks.
            t0_local_ns = plan.t0_ns + self.coordinator.follower.own_offset_ns
            self._t0 = time.perf_counter() + (t0_local_ns - time.time_ns()) / 1e9
            self._interval = 1.0 / plan.rate if plan.rate > 0 else 0.0
        super().on_start()

    def done(self) -> bool:
        return self._finished or not self.mq.producing or 0 < self.max_messages <= self.seq

    def on_connected(self) -> None:
        self._connection_seq = self.seq + 1

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
        if self.shared and not self._wait_for_slot():
            return
        self.seq += 1
        self.emit(self.seq)

    def _wait_for_slot(self) -> bool:
        """Take the next global index from the shared schedule and sleep until it is due."""
        if self._index >= self._block_end:
            block = self.coordinator.next_block(self.mq.settings.timeout, first=not self._drawn)
            if block is None:
                self.environment.events.request.fire(
                    request_type=REQUEST_TYPE, name=self._lag_name, response_time=self.mq.settings.timeout * 1000.0,
                    response_length=0, exception=MqError("no block of the shared schedule from the master in time"),
                    context={},
                )  # fmt: skip
                return False
            self._drawn = True
            start, count = block
            if count == 0:
                self._finished = True
                return False
            self._index, self._block_end = start, start + count
        due = self._t0 + self._index * self._interval
        self._index += 1
        if self._interval:
            # Unpaced, nothing is "due": only a schedule gives a coordinated-omission-corrected latency.
            self._due_header = b"mq-due-ns:%d\n" % (time.time_ns() + int((due - time.perf_counter()) * 1e9))
            delay = due - time.perf_counter()
            if delay > 0:
                gevent.sleep(delay)
            lag_ms = (time.perf_counter() - due) * 1000.0
            self.environment.events.request.fire(
                request_type=REQUEST_TYPE, name=self._lag_name, response_time=lag_ms, response_length=0,
                exception=None, context={},
            )  # fmt: skip
        return True

    def emit(self, seq: int) -> None:
        """Send message ``seq``. (One task for all producers: Locust also runs inherited tasks.)"""
        outcome = self.client.publish(self.publisher, seq, sync=self.receipts, extra=self._due_header)
        if outcome:
            self._sent.record(seq, time.time_ns())
            if outcome is Sent.UNCONFIRMED:
                self._sent.unconfirmed.add(seq)


class StompConsumerUser(StompUser):
    """Subscribes to ``destination`` and fires ``receive`` with every message's latency."""

    abstract = True
    role: ClassVar[str] = "consumer"
    #: ``auto``, ``client`` (cumulative ACKs) or ``client-individual``.
    ack = "auto"
    #: Unacknowledged messages the broker may push ahead; 0 leaves the broker's default.
    prefetch = 0
    #: A durable topic subscription: it keeps messages published while this user is away.
    durable = False
    #: Remove a durable subscription when the user stops (UNSUBSCRIBE with its name).
    remove_durable_on_stop = False
    #: Extra SUBSCRIBE headers, e.g. ``{"selector": "type = 'a'"}``.
    subscribe_headers: ClassVar[dict[str, str]] = {}
    #: Messages of other runs and foreign ones: ``apart`` (counted apart), ``fail`` (also Locust
    #: failures) or ``receive`` (other runs' messages count as received: draining a backlog).
    other_runs = "apart"

    def __init__(self, environment: Any):
        super().__init__(environment)  # calls client_id(), which settles self.durable
        self.ack, self.prefetch = self.setting("ack"), self.setting("prefetch")
        self.subscription: str | None = None
        self._joined = False
        self.receiver = self.make_receiver()

    def client_id(self) -> str | None:
        self.durable = self.setting("durable")
        return self.durable_name() if self.durable else None

    def durable_name(self) -> str:
        """Stable across runs of the same topology: destination, worker index, user ordinal."""
        runner = self.environment.runner
        worker = getattr(runner, "worker_index", 0) if runner is not None else 0
        slug = self.destination.strip("/").replace("/", ".")
        return f"mqusers.{slug}.{worker}.{self.ordinal}"

    def make_receiver(self) -> Receiver:
        # Small batches: ActiveMQ pages 200 messages in at a time and waits for their ACKs.
        ack_every = max(1, min(self.prefetch or 100, 100) // 2)
        clock = coordinator_for(self.environment, self.mq).follower
        return Receiver(
            self.client, self.destination, self.ack, ack_every=ack_every, clock=clock, **self.receiver_options()
        )

    def receiver_options(self) -> dict[str, Any]:
        return {"run_id": self.mq.run_id, "other_runs": self.setting("other_runs")}

    def on_connection_lost(self, dropped: bool) -> None:
        if self.receiver.audit is not None:
            self.receiver.audit.leave(time.time_ns(), dropped)

    def on_connected(self) -> None:
        self.receiver.reset()
        dialect = self.client.dialect
        headers = {**self.subscribe_headers, **dialect.prefetch_headers(self.prefetch, self.message_size)}
        if self.durable:
            headers.update(dialect.durable_headers(self.durable_name()))
            headers["id"] = self.durable_name()
        first = self.subscription is None and not self._joined
        key = self.durable_name() if self.durable else f"{self.mq.process_tag}/{type(self).__name__}/{self.ordinal}"
        kind = destination_kind(self.destination)
        # In place before SUBSCRIBE: deliveries may come before the RECEIPT is read.
        audit = self.receiver.audit = self.mq.received.subscription(key, self.destination, kind, None, self.durable)
        self.subscription = self.client.subscribe(self.destination, self.receiver, ack=self.ack, headers=headers)
        # A broker confirms SUBSCRIBE with its RECEIPT: from now on this subscription expects messages.
        audit.join(time.time_ns())
        if first:
            self._joined = True
            coordinator_for(self.environment, self.mq).joined()

    def on_stop(self) -> None:
        # Locust may call on_stop twice when a stop interrupts a task: act once. DISCONNECT ends a
        # plain subscription; an UNSUBSCRIBE racing in-flight deliveries makes RabbitMQ send ERRORs.
        subscription, self.subscription = self.subscription, None
        if self.receiver.audit is not None:
            self.receiver.audit.leave(time.time_ns())
        if self.client.connected and subscription is not None:
            self.receiver.flush()
            if self.durable and self.remove_durable_on_stop:
                headers = self.client.dialect.durable_unsubscribe_headers(self.durable_name())
                # A failure is recorded as an event; disconnecting is all that is left to do.
                with contextlib.suppress(MqError):
                    self.client.unsubscribe(self.destination, subscription, headers)
        super().on_stop()

    def wait_time(self) -> float:
        return 1.0

    @task
    def keep_connected(self) -> None:
        # Also acknowledge a batch the stream stopped short of filling (the end of a backlog).
        if self.ensure_connected():
            self.receiver.flush()


class StompResponderUser(StompConsumerUser):
    """Answers requests on ``destination`` (a queue) on each request's ``reply-to``."""

    abstract = True

    def make_receiver(self) -> Receiver:
        replier = Replier(self.client, self.destination)
        clock = coordinator_for(self.environment, self.mq).follower
        return Receiver(
            self.client, self.destination, self.ack, observer=replier, clock=clock, **self.receiver_options()
        )


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
            self._sent.record(seq, time.time_ns())
