"""One STOMP session's lifecycle: connecting, routing what the broker sends, dropping and closing.

:class:`Session` opens a :class:`mqusers.stomp.seam.Connection` through its transport, routes what
the broker sends (MESSAGE to its subscription's handler, RECEIPT and replies to their waiters, ERROR
to the operation it refuses) and fires the ``connect`` and ``error`` events. What to send is
:class:`mqusers.stomp.client.StompClient`'s business.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping
from typing import Any

import gevent
from gevent.event import AsyncResult, Event

from mqusers.measure.names import CONNECT, DISCONNECT, ERROR, REQUEST_TYPE, SUBSCRIBE, UNSUBSCRIBED, event_name
from mqusers.measure.recorder import Record, Recorder
from mqusers.stomp.answers import Answers
from mqusers.stomp.dialects import ACTIVEMQ, Dialect, dialect_for
from mqusers.stomp.errors import BrokerError, ConnectionLost, MqError, error_text
from mqusers.stomp.seam import ClientConfig, Connection, Listener, Transport, Unreachable
from mqusers.stomp.transport import StompTransport, os_reason
from mqusers.stomp.wire import Headers, disconnect_frame

__all__ = ["BEHIND_PAUSE_S", "BrokerError", "ConnectionLost", "MessageHandler", "MqError", "Session"]

#: How long the reader waits between reads while deliveries arrive already late (a backlog, auto ack:
#: the broker waits for nothing from us). A wake-up costs more CPU than a message; at a backlog's pace
#: one read per millisecond takes many messages at once. A receive time is then at most ~1.2 ms late
#: (the timer's resolution), under 1.2 % of a latency of RECEIVE_BEHIND_US (mqusers.stomp.receiver).
BEHIND_PAUSE_S = 0.001

#: ``handler(headers, body, received_ns)`` for each MESSAGE of a subscription.
MessageHandler = Callable[[Headers, bytes, int], None]


class Session:
    """One connection at a time. ``fire`` is ``environment.events.request.fire``; ``recorder`` (the
    process's, shared by every client) takes the per-message successes, else each fires an event."""

    def __init__(
        self,
        config: ClientConfig,
        fire: Callable[..., Any],
        *,
        transport: Transport | None = None,
        recorder: Recorder | None = None,
    ):
        self.config = config
        self.recorder = recorder or Recorder(fire, per_message=True)
        #: Fires one request event (failures, connects...), after the recorder's pending successes.
        self.fire = self.recorder.fire
        self.dialect: Dialect = ACTIVEMQ
        self.server = ""
        self._transport: Transport = transport or StompTransport()
        self._connection: Connection | None = None
        self.write_cut = 0
        #: What runs once the frames of the current socket read are handled (e.g. their ACKs).
        self._after_read: list[Callable[[], None]] = []
        #: Set by a receiver when a delivery of the current read was already late (see BEHIND_PAUSE_S).
        self.behind = False
        self._connected = Event()
        #: Set by the broker's answer to CONNECT: None for CONNECTED, else why not (ERROR, closed).
        self._handshake: AsyncResult | None = None
        self._handlers: dict[bytes, MessageHandler] = {}
        self._answers = Answers(config.timeout, self._fire)
        self._ids = itertools.count(1)
        self._context: dict[str, Any] = {}
        #: Set while disconnecting: unacknowledged deliveries now will go to another consumer.
        self.closing = False
        #: Successful connects so far; a change tells holders of ack ids that theirs are void.
        self.generation = 0
        #: True when the last connection ended without this client closing it (a drop).
        self.dropped = False
        self.connected_at = 0.0
        #: When the last drop was seen (wall clock, ns).
        self.lost_ns = 0
        #: Destination and start of the last SUBSCRIBE: an unclaimed ERROR soon after (before any
        #: delivery) is the broker refusing it.
        self._last_subscribe: tuple[str, float] | None = None

    def after_read(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once the frames of the socket read being handled are done."""
        self._after_read.append(callback)

    def _read_done(self) -> float:
        if self._after_read:
            callbacks, self._after_read = self._after_read, []
            for callback in callbacks:
                callback()
        if self.behind:
            self.behind = False
            if not self._answers.pending:  # a receipt or a reply is timed: read it at once
                return BEHIND_PAUSE_S
        return 0.0

    @property
    def awaiting(self) -> bool:
        """True while a RECEIPT or reply this client asked for has neither come nor timed out."""
        return bool(self._answers.pending)

    def operation(self, name: str) -> Record:
        """Where the per-message path records a success of ``name``."""
        return self.recorder.operation(name)

    @property
    def connected(self) -> bool:
        # No syscall per message: the reader clears the event when the connection drops.
        return self._connected.is_set() and self._connection is not None

    def send_progress(self) -> tuple[bool, int]:
        """(a send is in progress, frames sent so far): the same pair twice, a while apart, is a blocked send."""
        connection = self._connection
        return (False, 0) if connection is None else (connection.in_send, connection.sends)

    def peer_unanswered(self) -> bool | None:
        """Whether the broker's host acknowledges nothing sent: a stalled send's cause is then not the broker."""
        connection = self._connection
        return None if connection is None else connection.peer_unanswered()

    # -- lifecycle ---------------------------------------------------------------------------

    def connect(self) -> None:
        """Connect and wait for CONNECTED; raise :class:`MqError` with one line on failure."""
        name = event_name(CONNECT, self.config.address)
        start = time.perf_counter()
        try:
            self._open()
        except MqError as error:
            self._fire(name, start, 0, error)
            raise
        self._fire(name, start, 0, None)

    def _open(self) -> None:
        config = self.config
        # ActiveMQ and Artemis key durable subscriptions on client-id; RabbitMQ ignores it.
        headers = {"client-id": config.client_id} if config.client_id else {}
        self._connected.clear()
        handshake = self._handshake = AsyncResult()
        self.closing = False
        self._last_subscribe = None
        listener = Listener(
            self._take_frame,
            self._on_connected,
            lambda: self._on_disconnected(handshake),
            self._read_done,
            self._on_protocol_error,
        )
        try:
            self._connection = self._transport.open(config, headers, listener)
        except Unreachable as error:
            raise MqError(f"cannot reach the broker at {config.address} ({error})") from None
        handshake.wait(config.timeout)
        if not handshake.ready() or handshake.value is not None:
            reason = handshake.value or f"no CONNECTED frame within {config.timeout:g}s"
            self._close_quietly()
            raise MqError(f"broker at {config.address} refused the connection: {reason}")
        self.generation += 1
        self.dropped = False
        self.connected_at = time.monotonic()

    def disconnect(self, *, timed: bool = False) -> bool:
        """DISCONNECT politely within ``timeout`` (a stalled broker never answers), then close the socket.

        True when the broker's RECEIPT came: it had read every frame written before it (STOMP's
        graceful shutdown). False when it did not, or there was no connection: what was written
        on it since the last confirmation may never have reached the broker. ``timed`` fires the
        ``disconnect`` event (DISCONNECT to RECEIPT, or why none came): Users that churn connections
        time each close; the others' one close at stop is no figure of the run.
        """
        self.closing = True
        confirmed = False
        if self.connected:
            receipt = b"mq-bye-%d" % next(self._ids)
            waiter = self._answers.expect(receipt)
            start = time.perf_counter()
            failed: MqError | None = None
            # The Timeout also ends a send blocked by a broker that stopped reading.
            with gevent.Timeout(self.config.timeout, False):
                try:
                    self.send_raw(disconnect_frame(receipt))
                    waiter.wait(self.config.timeout)
                except MqError as error:
                    failed = error
            confirmed = waiter.ready() and waiter.successful()
            self._answers.forget(receipt)
            if timed:
                if confirmed:
                    self._fire(event_name(DISCONNECT, self.config.address), start, 0, None, waiter.value)
                else:
                    why = failed or waiter.exception or MqError(f"no RECEIPT within {self.config.timeout:g}s")
                    self._fire(event_name(DISCONNECT, self.config.address), start, 0, why)
        self._close_quietly()
        return confirmed

    def abort(self) -> None:
        """Close at once, without DISCONNECT (e.g. after a refused SUBSCRIBE)."""
        self.closing = True
        self._close_quietly()

    def _close_quietly(self) -> None:
        connection, self._connection = self._connection, None
        self._connected.clear()
        if connection is not None:
            connection.close()

    def send_raw(self, data: bytes) -> None:
        """Write pre-encoded frames; raise :class:`MqError` when not connected or the write fails.

        After a write that failed or was interrupted, ``write_cut`` is how many of its bytes left.
        """
        connection = self._connection
        if connection is None:
            self.write_cut = 0
            raise MqError("not connected")
        try:
            connection.send(data)
        except BaseException as error:
            self.write_cut = connection.accepted
            if isinstance(error, OSError):
                raise MqError(f"connection lost: {os_reason(error)}") from None
            raise

    def reply_arrived(self, headers: Headers, body: bytes, received_ns: int) -> None:
        """For reply subscriptions: wake the request waiting on this correlation id."""
        self._answers.answer(headers.get(b"correlation-id", b""))

    def _fire(self, name: str, start: float, size: int, error: Exception | None, end: float | None = None) -> None:
        self.fire(
            request_type=REQUEST_TYPE,
            name=name,
            response_time=((end or time.perf_counter()) - start) * 1000.0,
            response_length=size,
            exception=error,
            context=self._context,
        )

    # -- the reader greenlet -----------------------------------------------------------------

    def _take_frame(self, command: bytes, headers: Headers, body: bytes, received_ns: int) -> bool:
        if command == b"MESSAGE":
            if self._last_subscribe is not None:
                self._last_subscribe = None  # a delivery proves the subscription works
            handler = self._handlers.get(headers.get(b"subscription", b""))
            if handler is not None:
                handler(headers, body, received_ns)
            else:
                stray = MqError("message for no subscription")
                self._fire(UNSUBSCRIBED, time.perf_counter(), len(body), stray)
            return True
        if command == b"RECEIPT":
            return self._answers.answer(headers.get(b"receipt-id", b""))
        if command == b"ERROR":
            self._on_error(headers, body)
        return False

    def _on_error(self, headers: Headers, body: bytes) -> None:
        message = error_text(headers, body)
        error = BrokerError(f"broker ERROR: {message}")
        if not self._connected.is_set():
            self._answer_connect(message or "ERROR frame")
            return
        if self._answers.refuse(headers.get(b"receipt-id", b""), error):
            return
        subscribed = self._last_subscribe
        if subscribed is not None and time.perf_counter() - subscribed[1] < self.config.timeout:
            # RabbitMQ confirms a SUBSCRIBE to a missing queue or exchange, then refuses it in an ERROR.
            self._last_subscribe = None
            self._fire(event_name(SUBSCRIBE, subscribed[0]), subscribed[1], 0, error)
            return
        self._fire(event_name(ERROR, self.config.address), time.perf_counter(), 0, error)

    def _on_protocol_error(self, what: str) -> None:
        """The broker sent something that is not STOMP: a failure naming it; the transport then drops
        the connection (pending answers fail with it) and the User reconnects with back-off."""
        error = MqError(f"protocol error, connection dropped: {what}")
        self._fire(event_name(ERROR, self.config.address), time.perf_counter(), 0, error)

    def _on_connected(self, headers: Mapping[str, str]) -> None:
        self.server = headers.get("server", "")
        self.dialect = dialect_for(self.config.dialect, self.server)
        self._connected.set()
        self._answer_connect(None)

    def _answer_connect(self, refusal: str | None) -> None:
        handshake = self._handshake
        if handshake is not None and not handshake.ready():
            handshake.set(refusal)

    def _on_disconnected(self, handshake: AsyncResult) -> None:
        if handshake is not self._handshake:
            return  # an earlier connection's reader, ending after the next connection opened
        if not self.closing and self._connected.is_set():
            self.dropped, self.lost_ns = True, time.time_ns()
        self._connected.clear()
        # Closed before CONNECTED (a dying broker's backlog, one not serving yet): no need to wait
        # out --mq-timeout for an answer that cannot come.
        self._answer_connect("the connection closed before CONNECTED")
        self._answers.fail_all(ConnectionLost("connection lost"))
