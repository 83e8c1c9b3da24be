"""A STOMP client that fires Locust request events, in the shape of ``locust.contrib.mqtt``.

Every operation fires ``request_type="STOMP"`` with a name of the form ``"<operation> <target>"``:
``connect``, ``subscribe``, ``send`` (frame handed to the socket), ``receipt`` (send to the
broker's RECEIPT: a synchronous send), ``receive`` (send-to-receive latency from the message's
send-time header), ``request`` (request/reply round trip) and ``error`` (an ERROR frame no pending
operation claimed). ``response_length`` is the body size. The client holds no User logic.
"""

from __future__ import annotations

import contextlib
import enum
import itertools
import logging
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gevent
import stomp
from gevent.event import AsyncResult, Event
from stomp import exception as stomp_exception

from mqusers.dialects import ACTIVEMQ, Dialect, dialect_for
from mqusers.names import (
    CONNECT,
    ERROR,
    RECEIPT,
    REQUEST,
    REQUEST_TYPE,
    SEND,
    SUBSCRIBE,
    UNSUBSCRIBE,
    UNSUBSCRIBED,
    event_name,
)
from mqusers.parsing import BrokerAddress
from mqusers.transport import LeanConnection
from mqusers.wire import Headers, SendFrames, encode_frame

MessageHandler = Callable[[Headers, bytes], None]

# The client reports connection failures itself, in one line; stomp.py would add a warning per attempt.
logging.getLogger("stomp.py").setLevel(logging.ERROR)


class MqError(Exception):
    """A messaging failure whose message is one readable line."""


class BrokerError(MqError):
    """The broker sent an ERROR frame; the message is its ``message`` header."""


class ConnectionLost(MqError):
    """The connection dropped while an answer was pending: the outcome is unknown."""


class Sent(enum.IntEnum):
    """What became of one message handed to :meth:`StompClient.publish`."""

    FAILED = 0  # not written, or refused by the broker: not sent
    WRITTEN = 1  # written to the socket; no receipt asked
    CONFIRMED = 2  # the broker's RECEIPT arrived
    UNCONFIRMED = 3  # written, but no RECEIPT before the timeout or the connection dropped


@dataclass(frozen=True)
class ClientConfig:
    address: BrokerAddress
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    vhost: str = "/"
    heartbeats: tuple[int, int] = (0, 0)
    timeout: float = 10.0
    dialect: str = "auto"
    #: Stable identity for durable subscriptions (CONNECT ``client-id``), else None.
    client_id: str | None = None
    #: CA bundle to verify a stomp+ssl broker; None uses the system's trusted CAs.
    ca_file: str | None = None


def _why_unreachable(config: ClientConfig) -> str:
    """stomp.py only says that connecting failed; try the first host again to say why."""
    host, port = config.address.hosts[0]
    try:
        with socket.create_connection((host, port), timeout=config.timeout) as sock:
            if config.address.ssl:
                context = ssl.create_default_context(cafile=config.ca_file)
                with context.wrap_socket(sock, server_hostname=host):
                    pass
    except ssl.SSLCertVerificationError as error:
        return f"TLS: {error.verify_message}; --mq-ca-file names the CA to trust"
    except OSError as error:
        return error.strerror or str(error) or type(error).__name__
    return "it answered a retry; check its STOMP connector"


class _Listener(stomp.ConnectionListener):  # type: ignore[misc]
    """The frames left to stomp.py's dispatch: connection state only."""

    def __init__(self, client: StompClient):
        self._client = client

    def on_connected(self, frame: Any) -> None:
        self._client._on_connected(frame.headers)

    def on_disconnected(self) -> None:
        self._client._on_disconnected()


@dataclass
class Publisher:
    """Pre-encoded frames and event names for one producer and one destination."""

    destination: str
    frames: SendFrames
    send_name: str = ""
    receipt_name: str = ""
    request_name: str = ""

    def __post_init__(self) -> None:
        self.send_name = event_name(SEND, self.destination)
        self.receipt_name = event_name(RECEIPT, self.destination)
        self.request_name = event_name(REQUEST, self.destination)


class StompClient:
    """One STOMP connection. ``fire`` is ``environment.events.request.fire``."""

    def __init__(self, config: ClientConfig, fire: Callable[..., Any]):
        self.config = config
        self.fire = fire
        self.dialect: Dialect = ACTIVEMQ
        self.server = ""
        self._connection: LeanConnection | None = None
        self._transport: Any = None
        self._connected = Event()
        self._disconnected = Event()
        self._refusal: str | None = None
        self._handlers: dict[bytes, MessageHandler] = {}
        self._waiters: dict[bytes, AsyncResult] = {}
        self._ids = itertools.count(1)
        self._context: dict[str, Any] = {}
        #: Set while disconnecting: unacknowledged deliveries now will go to another consumer.
        self.closing = False
        #: Successful connects so far; a change tells holders of ack ids that theirs are void.
        self.generation = 0
        #: True when the last connection ended without this client closing it (a drop).
        self.dropped = False
        self.connected_at = 0.0
        #: Destination and start of the last SUBSCRIBE: an unclaimed ERROR soon after (before any
        #: delivery) is the broker refusing it.
        self._last_subscribe: tuple[str, float] | None = None

    @property
    def connected(self) -> bool:
        # No syscall per message: the reader clears the event when the connection drops.
        return self._connected.is_set() and self._transport is not None

    def send_progress(self) -> tuple[bool, int]:
        """(a send is in progress, frames sent so far): the same pair twice, a while apart, is a blocked send."""
        transport = self._transport
        return (False, 0) if transport is None else (transport.in_send, transport.sends)

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
        config, headers = self.config, {}
        if config.client_id:
            # ActiveMQ and Artemis key durable subscriptions on it; RabbitMQ ignores it.
            headers["client-id"] = config.client_id
        connection = LeanConnection(
            list(config.address.hosts),
            on_frame=self._take_frame,
            heartbeats=config.heartbeats,
            vhost=config.vhost,
            connect_timeout=config.timeout,
            use_ssl=config.address.ssl,
            ca_file=config.ca_file,
        )
        connection.set_listener("mqusers", _Listener(self))
        self._connected.clear()
        self._disconnected.clear()
        self._refusal = None
        self.closing = False
        self._last_subscribe = None
        try:
            connection.connect(config.user, config.password, wait=False, headers=headers)
        except stomp_exception.ConnectFailedException:
            raise MqError(f"cannot reach the broker at {config.address} ({_why_unreachable(config)})") from None
        self._connection, self._transport = connection, connection.transport
        if not self._connected.wait(config.timeout) or self._refusal is not None:
            reason = self._refusal or f"no CONNECTED frame within {config.timeout:g}s"
            self._close_quietly()
            raise MqError(f"broker at {config.address} refused the connection: {reason}")
        self.generation += 1
        self.dropped = False
        self.connected_at = time.monotonic()

    def disconnect(self) -> None:
        """DISCONNECT politely within ``timeout`` (a stalled broker never answers), then close the socket."""
        self.closing = True
        connection = self._connection
        if connection is not None and self.connected:
            with (
                gevent.Timeout(self.config.timeout, False),
                contextlib.suppress(stomp_exception.StompException, OSError),
            ):
                connection.disconnect(receipt=f"mq-bye-{next(self._ids)}")
                # The broker closes the socket after its RECEIPT; the reader then signals the end.
                self._disconnected.wait()
        self._close_quietly()

    def abort(self) -> None:
        """Close at once, without DISCONNECT (e.g. after a refused SUBSCRIBE)."""
        self.closing = True
        self._close_quietly()

    def _close_quietly(self) -> None:
        """Close without waiting on the broker: shutting the socket down ends the reader greenlet too."""
        connection, self._connection, self._transport = self._connection, None, None
        self._connected.clear()
        if connection is None:
            return
        transport = connection.transport
        transport.running = False
        sock = transport.socket
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()

    # -- sending -----------------------------------------------------------------------------

    def publish(self, publisher: Publisher, seq: int, *, sync: bool = False, extra: bytes = b"") -> Sent:
        """Send message ``seq``; with ``sync`` wait for its RECEIPT.

        ``extra`` is pre-encoded header lines (e.g. the message's due time on a shared schedule).
        """
        frames = publisher.frames
        start = time.perf_counter()
        if sync:
            receipt = b"mq-%d" % next(self._ids)
            waiter = self._waiters[receipt] = AsyncResult()
            data = frames.frame_with(seq, time.time_ns(), b"%sreceipt:%s\n" % (extra, receipt))
        elif extra:
            data = frames.frame_with(seq, time.time_ns(), extra)
        else:
            data = frames.frame(seq, time.time_ns())
        if not self._write(publisher.send_name, start, frames.body_size, data):
            if sync:
                self._waiters.pop(receipt, None)
            return Sent.FAILED
        if not sync:
            return Sent.WRITTEN
        error = self._await(waiter, receipt, publisher.receipt_name, start, frames.body_size, "RECEIPT")
        if error is None:
            return Sent.CONFIRMED
        # An ERROR frame answering the receipt is the broker refusing the message: it was not sent.
        return Sent.FAILED if isinstance(error, BrokerError) else Sent.UNCONFIRMED

    def request(self, publisher: Publisher, seq: int, reply_to: str) -> Sent:
        """Send a request with ``reply-to`` and wait for the reply carrying its correlation id.

        CONFIRMED when the reply came, UNCONFIRMED when the request went out but no reply did.
        """
        correlation = b"%s-%d" % (publisher.frames.producer_id, seq)
        waiter = self._waiters[correlation] = AsyncResult()
        start = time.perf_counter()
        extra = b"reply-to:%s\ncorrelation-id:%s\n" % (reply_to.encode(), correlation)
        data = publisher.frames.frame_with(seq, time.time_ns(), extra)
        if not self._write(publisher.send_name, start, publisher.frames.body_size, data):
            self._waiters.pop(correlation, None)
            return Sent.FAILED
        error = self._await(waiter, correlation, publisher.request_name, start, publisher.frames.body_size, "reply")
        return Sent.CONFIRMED if error is None else Sent.UNCONFIRMED

    def send_raw(self, data: bytes) -> None:
        """Write a pre-encoded frame (ACKs, replies); raise :class:`MqError` when not connected."""
        if self._transport is None:
            raise MqError("not connected")
        try:
            self._transport.send(data)
        except (OSError, stomp_exception.StompException) as error:
            self._transport.in_send = False
            raise MqError(f"connection lost: {error or type(error).__name__}") from None

    def _write(self, name: str, start: float, size: int, data: bytes) -> bool:
        try:
            self.send_raw(data)
        except MqError as error:
            self._fire(name, start, size, error)
            return False
        self.fire(
            request_type=REQUEST_TYPE,
            name=name,
            response_time=(time.perf_counter() - start) * 1000.0,
            response_length=size,
            exception=None,
            context=self._context,
        )
        return True

    def _await(self, waiter: AsyncResult, key: bytes, name: str, start: float, size: int, what: str) -> MqError | None:
        """Wait for ``waiter``, fire ``name`` with the outcome, return the error (None: answered).

        ``wait`` returns on timeout instead of raising ``gevent.Timeout``, a BaseException that would
        end the User's greenlet (and could be another, outer timeout's).
        """
        try:
            waiter.wait(self.config.timeout)
        finally:
            self._waiters.pop(key, None)
        error: MqError | None
        if not waiter.ready():
            error = MqError(f"no {what} within {self.config.timeout:g}s")
        elif waiter.successful():
            self._fire(name, start, size, None, end=waiter.value)
            return None
        else:
            exception = waiter.exception
            error = exception if isinstance(exception, MqError) else MqError(str(exception))
        self._fire(name, start, size, error)
        return error

    # -- subscriptions -----------------------------------------------------------------------

    def subscribe(self, destination: str, handler: MessageHandler, *, ack: str, headers: dict[str, str]) -> str:
        """SUBSCRIBE and wait for the broker's RECEIPT; return the subscription id."""
        sub_id = headers.pop("id", None) or f"mq-sub-{next(self._ids)}"
        self._handlers[sub_id.encode()] = handler
        # Set first: RabbitMQ's ERROR may arrive in the same read as the RECEIPT, before this resumes.
        self._last_subscribe = (destination, time.perf_counter())
        self.frame_with_receipt(
            event_name(SUBSCRIBE, destination),
            "SUBSCRIBE",
            {"destination": destination, "id": sub_id, "ack": ack, **headers},
        )
        return sub_id

    def route(self, subscription: str, handler: MessageHandler) -> None:
        """Deliver MESSAGE frames of ``subscription`` (e.g. a RabbitMQ temp queue) to ``handler``."""
        self._handlers[subscription.encode()] = handler

    def unsubscribe(self, destination: str, sub_id: str, headers: dict[str, str]) -> None:
        self.frame_with_receipt(event_name(UNSUBSCRIBE, destination), "UNSUBSCRIBE", {"id": sub_id, **headers})
        self._handlers.pop(sub_id.encode(), None)

    def frame_with_receipt(self, name: str, command: str, headers: dict[str, str]) -> None:
        """Send a control frame, wait for its RECEIPT, fire ``name``; raise :class:`MqError` on failure."""
        receipt = b"mq-%d" % next(self._ids)
        waiter = self._waiters[receipt] = AsyncResult()
        start = time.perf_counter()
        try:
            self.send_raw(encode_frame(command, {**headers, "receipt": receipt.decode()}))
        except MqError as error:
            self._fire(name, start, 0, error)
            raise
        refused = self._await(waiter, receipt, name, start, 0, "RECEIPT")
        if refused is not None:
            raise refused

    # -- the reader greenlet -----------------------------------------------------------------

    def _take_frame(self, command: bytes, headers: Headers, body: bytes) -> bool:
        if command == b"MESSAGE":
            if self._last_subscribe is not None:
                self._last_subscribe = None  # a delivery proves the subscription works
            handler = self._handlers.get(headers.get(b"subscription", b""))
            if handler is not None:
                handler(headers, body)
            else:
                stray = MqError("message for no subscription")
                self._fire(UNSUBSCRIBED, time.perf_counter(), len(body), stray)
            return True
        if command == b"RECEIPT":
            waiter = self._waiters.get(headers.get(b"receipt-id", b""))
            if waiter is not None:
                waiter.set(time.perf_counter())
                return True
            return False
        if command == b"ERROR":
            self._on_error(headers, body)
        return False

    def reply_arrived(self, headers: Headers, body: bytes) -> None:
        """For reply subscriptions: wake the request waiting on this correlation id."""
        waiter = self._waiters.get(headers.get(b"correlation-id", b""))
        if waiter is not None:
            waiter.set(time.perf_counter())

    def _on_error(self, headers: Headers, body: bytes) -> None:
        message = headers.get(b"message", b"").decode("utf-8", "replace").strip()
        detail = " ".join(body[:300].decode("utf-8", "replace").split())
        if detail and detail not in message:
            message = f"{message}: {detail}" if message else detail
        error = BrokerError(f"broker ERROR: {message}")
        if not self._connected.is_set():
            self._refusal = message or "ERROR frame"
            self._connected.set()
            return
        waiter = self._waiters.get(headers.get(b"receipt-id", b""))
        if waiter is not None:
            waiter.set_exception(error)
            return
        subscribed = self._last_subscribe
        if subscribed is not None and time.perf_counter() - subscribed[1] < self.config.timeout:
            # RabbitMQ confirms a SUBSCRIBE to a missing queue or exchange, then refuses it in an ERROR.
            self._last_subscribe = None
            self._fire(event_name(SUBSCRIBE, subscribed[0]), subscribed[1], 0, error)
            return
        self._fire(event_name(ERROR, self.config.address), time.perf_counter(), 0, error)

    def _on_connected(self, headers: dict[str, str]) -> None:
        self.server = headers.get("server", "")
        self.dialect = dialect_for(self.config.dialect, self.server)
        self._connected.set()

    def _on_disconnected(self) -> None:
        if not self.closing and self._connected.is_set():
            self.dropped = True
        self._connected.clear()
        self._disconnected.set()
        for waiter in list(self._waiters.values()):
            if not waiter.ready():
                waiter.set_exception(ConnectionLost("connection lost"))

    def _fire(self, name: str, start: float, size: int, error: Exception | None, end: float | None = None) -> None:
        self.fire(
            request_type=REQUEST_TYPE,
            name=name,
            response_time=((end or time.perf_counter()) - start) * 1000.0,
            response_length=size,
            exception=error,
            context=self._context,
        )
