"""A STOMP client that fires Locust request events, in the shape of ``locust.contrib.mqtt``.

Every operation fires ``request_type="STOMP"`` with a name of the form ``"<operation> <target>"``:
``connect``, ``subscribe``, ``send`` (frame handed to the socket), ``receipt`` (send to the
broker's RECEIPT: a synchronous send), ``receive`` (send-to-receive latency from the message's
send-time header), ``request`` (request/reply round trip) and ``error`` (an ERROR frame no pending
operation claimed). ``response_length`` is the body size. The client holds no User logic.

Successful ``send``, ``receipt``, ``request`` and ``receive`` go to the process's
:class:`~mqusers.measure.recorder.Recorder`, which logs them in bulk (or fires an event each with
``--mq-request-events per-message``); everything else fires one event as it happens.

The operations live here; connecting, closing and matching answers to waiters live in
:mod:`mqusers.stomp.session`, and the socket behind ``transport=`` (:mod:`mqusers.stomp.seam`).
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass

import gevent
from gevent.event import AsyncResult

from mqusers.measure.names import RECEIPT, REQUEST, SEND, SUBSCRIBE, UNSUBSCRIBE, event_name
from mqusers.measure.recorder import Record
from mqusers.stomp.seam import ClientConfig
from mqusers.stomp.session import BrokerError, ConnectionLost, MessageHandler, MqError, Session
from mqusers.stomp.wire import SendFrames, receipt_line, receipted_frame, request_lines, transaction_frame

__all__ = [
    "BrokerError",
    "ClientConfig",
    "ConnectionLost",
    "MessageHandler",
    "MqError",
    "Publisher",
    "Sent",
    "StompClient",
]


class Sent(enum.IntEnum):
    """What became of one message handed to :meth:`StompClient.publish`."""

    FAILED = 0  # not written, or refused by the broker: not sent
    WRITTEN = 1  # written to the socket; no receipt asked
    CONFIRMED = 2  # the broker's RECEIPT arrived
    UNCONFIRMED = 3  # written, but no RECEIPT before the timeout or the connection dropped


@dataclass(frozen=True)
class Publisher:
    """Pre-encoded frames and the operations they are recorded under, for one producer and one
    destination: made by :meth:`StompClient.publisher`."""

    destination: str
    frames: SendFrames
    send: Record
    receipt: Record
    request: Record


@dataclass(frozen=True)
class Awaited:
    """A message sent with a RECEIPT asked and not yet waited for (:meth:`StompClient.publish_receipted`)."""

    seq: int
    publisher: Publisher
    receipt: bytes
    waiter: AsyncResult
    start: float
    measured: bool


class StompClient(Session):
    """One STOMP connection. ``fire`` is ``environment.events.request.fire``; ``transport`` opens the
    connection (default: :class:`mqusers.stomp.transport.StompTransport`)."""

    #: Set when a publish is interrupted mid-write: how many of its messages went out whole.
    _cut_whole: int | None = None

    # -- sending -----------------------------------------------------------------------------

    def publisher(self, destination: str, frames: SendFrames, label: str = "") -> Publisher:
        """``label``: what its events are named after, when not the destination (a pattern's)."""
        op, named = self.operation, label or destination
        return Publisher(destination, frames, op(event_name(SEND, named)),
                         op(event_name(RECEIPT, named)), op(event_name(REQUEST, named)))  # fmt: skip

    def publish(self, publisher: Publisher, seq: int, *, sync: bool = False, extra: bytes = b"") -> Sent:
        """Send message ``seq``; with ``sync`` wait for its RECEIPT.

        ``extra`` is pre-encoded header lines (e.g. the message's due time on a shared schedule).
        """
        if sync:
            awaited = self.publish_receipted(publisher, seq, extra)
            return Sent.FAILED if awaited is None else self.settle(awaited)
        frames = publisher.frames
        start = time.perf_counter()
        sent_ns = time.time_ns()
        data = frames.frame_with(seq, sent_ns, extra) if extra else frames.frame(seq, sent_ns)
        measured = sent_ns >= self.recorder.measured_from_ns  # the warm-up is cut by send time
        return Sent.WRITTEN if self._write(publisher.send, start, frames.body_size, data, measured) else Sent.FAILED

    def publish_receipted(self, publisher: Publisher, seq: int, extra: bytes = b"") -> Awaited | None:
        """Send message ``seq`` asking for its RECEIPT, without waiting (:meth:`settle` waits); None
        when the write failed (a failure fired: not sent)."""
        frames = publisher.frames
        start = time.perf_counter()
        sent_ns = time.time_ns()
        receipt = b"mq-%d" % next(self._ids)
        waiter = self._answers.expect(receipt)
        data = frames.frame_with(seq, sent_ns, receipt_line(receipt, extra))
        measured = sent_ns >= self.recorder.measured_from_ns  # the warm-up is cut by send time
        if not self._write(publisher.send, start, frames.body_size, data, measured):
            self._answers.forget(receipt)
            return None
        return Awaited(seq, publisher, receipt, waiter, start, measured)

    def settle(self, awaited: Awaited, timeout: float | None = None) -> Sent:
        """Wait for ``awaited``'s RECEIPT (at most ``timeout``, default ``--mq-timeout``) and record it."""
        publisher = awaited.publisher
        error = self._answers.wait(awaited.waiter, awaited.receipt, publisher.receipt, awaited.start,
                                   publisher.frames.body_size, "RECEIPT", awaited.measured, timeout)  # fmt: skip
        if error is None:
            return Sent.CONFIRMED
        # An ERROR frame answering the receipt is the broker refusing the message: it was not sent.
        return Sent.FAILED if isinstance(error, BrokerError) else Sent.UNCONFIRMED

    def abandon(self, awaited: Awaited) -> None:
        """Stop waiting for ``awaited``'s RECEIPT (its User stopped): its outcome stays unknown."""
        self._answers.forget(awaited.receipt)

    def publish_many(self, publisher: Publisher, first: int, count: int) -> int:
        """Send messages ``first`` .. ``first + count - 1`` in one write (unpaced, no receipts).

        One socket write and one clock read for the lot: every message carries the same send
        time, the moment they were handed to the socket together. Returns how many went out whole:
        ``count``, or after a failed write those the kernel took before it (each of the rest is a
        failure). The broker may still read those few: what became of them is unknown.
        """
        frames = publisher.frames
        start = time.perf_counter()
        sent_ns = time.time_ns()
        data = frames.frames(first, count, sent_ns)
        whole = count
        try:
            self.send_raw(data)
        except BaseException as error:
            whole = frames.whole(first, sent_ns, self.write_cut)
            if not isinstance(error, MqError):
                self._cut_whole = whole
                raise
            for _ in range(count - whole):
                self._fire(publisher.send.name, start, frames.body_size, error)
        finally:
            if whole and sent_ns >= self.recorder.measured_from_ns:  # the warm-up is cut by send time
                elapsed_us = int((time.perf_counter() - start) * 1e6)
                publisher.send.record_many(elapsed_us, frames.body_size, time.time_ns(), whole)
        return whole

    def interrupted_whole(self, count: int) -> int:
        """After a publish of ``count`` messages was interrupted (its User stopped mid-send): how many
        went out whole. All of them when it was waiting for an answer, else those before the cut."""
        whole, self._cut_whole = self._cut_whole, None
        return count if whole is None else whole

    def request(self, publisher: Publisher, seq: int, reply_to: str) -> Sent:
        """Send a request with ``reply-to`` and wait for the reply carrying its correlation id.

        CONFIRMED when the reply came, UNCONFIRMED when the request went out but no reply did.
        """
        correlation = b"%s-%d" % (publisher.frames.producer_id, seq)
        waiter = self._answers.expect(correlation)
        start = time.perf_counter()
        sent_ns = time.time_ns()
        data = publisher.frames.frame_with(seq, sent_ns, request_lines(reply_to.encode(), correlation))
        measured = sent_ns >= self.recorder.measured_from_ns
        if not self._write(publisher.send, start, publisher.frames.body_size, data, measured):
            self._answers.forget(correlation)
            return Sent.FAILED
        size = publisher.frames.body_size
        error = self._answers.wait(waiter, correlation, publisher.request, start, size, "reply", measured)
        return Sent.CONFIRMED if error is None else Sent.UNCONFIRMED

    def _write(self, operation: Record, start: float, size: int, data: bytes, measured: bool) -> bool:
        """Write one message's frame; a failure is recorded under ``operation``, a success if ``measured``."""
        try:
            self.send_raw(data)
        except MqError as error:
            self._fire(operation.name, start, size, error)
            return False
        except BaseException:
            self._cut_whole = 0  # interrupted before the frame's last byte left: it never will
            raise
        if measured:
            operation.record(int((time.perf_counter() - start) * 1e6), size, time.time_ns())
        return True

    # -- transactions ------------------------------------------------------------------------

    def begin(self, transaction: bytes, name: str) -> bool:
        """BEGIN ``transaction``, no RECEIPT asked (its SENDs follow at once); False when the write failed
        (a failure fired under ``name``)."""
        start = time.perf_counter()
        try:
            self.send_raw(transaction_frame(b"BEGIN", transaction))
        except MqError as error:
            self._fire(name, start, 0, error)
            return False
        return True

    def end_transaction(self, transaction: bytes, commit: bool, operation: Record) -> Sent:
        """COMMIT (or ABORT) ``transaction``, timed from its write to the broker's RECEIPT under ``operation``.

        CONFIRMED: the RECEIPT came. FAILED: the frame never left whole, so the broker never had it
        (its connection is gone, and a broker rolls an open transaction back when one closes).
        UNCONFIRMED: written, then refused by an ERROR, or no RECEIPT in time: the outcome is unknown.
        """
        receipt = b"mq-%d" % next(self._ids)
        waiter = self._answers.expect(receipt)
        data = transaction_frame(b"COMMIT" if commit else b"ABORT", transaction, receipt)
        start = time.perf_counter()
        measured = time.time_ns() >= self.recorder.measured_from_ns  # the warm-up is cut by send time
        try:
            self.send_raw(data)
        except MqError as error:
            self._answers.forget(receipt)
            self._fire(operation.name, start, 0, error)
            return Sent.UNCONFIRMED if self.write_cut >= len(data) else Sent.FAILED
        unanswered = self._answers.wait(waiter, receipt, operation, start, 0, "RECEIPT", measured)
        return Sent.CONFIRMED if unanswered is None else Sent.UNCONFIRMED

    def transaction_id(self) -> bytes:
        """A transaction id unique on this connection."""
        return b"mq-tx-%d" % next(self._ids)

    def commit_awaited(self, transaction: bytes, operation: Record) -> bytes:
        """The COMMIT of ``transaction`` for the caller to write where it cannot wait (the reader greenlet):
        its RECEIPT is waited for, and timed under ``operation``, by a greenlet of its own."""
        receipt = b"mq-%d" % next(self._ids)
        waiter = self._answers.expect(receipt)
        gevent.spawn(self._answers.wait, waiter, receipt, operation, time.perf_counter(), 0, "RECEIPT")
        return transaction_frame(b"COMMIT", transaction, receipt)

    # -- subscriptions -----------------------------------------------------------------------

    def subscribe(
        self, destination: str, handler: MessageHandler, *, ack: str, headers: dict[str, str], label: str = ""
    ) -> str:
        """SUBSCRIBE (routed as the dialect says) and wait for the broker's RECEIPT; return the subscription id.

        ``label``: what its event is named after, when not the destination (a pattern's)."""
        sub_id = headers.pop("id", None) or f"mq-sub-{next(self._ids)}"
        self._handlers[sub_id.encode()] = handler
        # Set first: RabbitMQ's ERROR may arrive in the same read as the RECEIPT, before this resumes.
        self._last_subscribe = (label or destination, time.perf_counter())
        self.frame_with_receipt(
            event_name(SUBSCRIBE, label or destination),
            "SUBSCRIBE",
            {
                "destination": destination,
                "id": sub_id,
                "ack": ack,
                **self.dialect.subscribe_headers(destination),
                **headers,
            },
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
        waiter = self._answers.expect(receipt)
        start = time.perf_counter()
        try:
            self.send_raw(receipted_frame(command, headers, receipt))
        except MqError as error:
            self._answers.forget(receipt)
            self._fire(name, start, 0, error)
            raise
        refused = self._answers.wait(waiter, receipt, name, start, 0, "RECEIPT")
        if refused is not None:
            raise refused
