"""MESSAGE handlers: measure each delivery, acknowledge it, and answer requests.

These run in the connection's reader greenlet once per message, so they do a handful of dict
lookups, one CRC-32 and one :meth:`~mqusers.measure.recorder.Operation.record`; failures fire
Locust events as they happen.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable

from mqusers.audit.ledgers import EXPIRY_GRACE_NS, Subscription
from mqusers.coordination.messages import Follower
from mqusers.measure.backlogfigures import BacklogFigures
from mqusers.measure.names import (
    ACK,
    RECEIVE,
    RECEIVE_BACKLOG,
    RECEIVE_DUE,
    RECEIVE_NEW,
    REQUEST_TYPE,
    event_name,
)
from mqusers.measure.perdestination import Spot
from mqusers.measure.priority import PriorityTally
from mqusers.stomp.ackpace import AckPace
from mqusers.stomp.acktransactions import AckTransactions
from mqusers.stomp.client import MqError, StompClient
from mqusers.stomp.nacks import NackCounts
from mqusers.stomp.probe import Probe
from mqusers.stomp.wire import (
    CRC,
    DUE_NS,
    PROBE,
    PRODUCER,
    RUN,
    SENT_NS,
    SEQ,
    SIZE,
    Headers,
    ack_frame,
    nack_frame,
)

Observer = Callable[[Headers, bytes], None]
#: Every broker flags a redelivery with this header (Artemis sends it on every delivery, true or false, and
#: flags only the first of what a departed consumer left: mqusers.stomp.dialects.ARTEMIS).
_REDELIVERED = b"redelivered"
#: A delivery this late (µs) is part of a backlog: its connection's reader may pause between reads
#: (mqusers.stomp.session.BEHIND_PAUSE_S), an error under 1.2 % of such a latency.
RECEIVE_BEHIND_US = 100_000

_NO_STAMP = MqError("message of this run without its mqusers headers (mq-sent-ns, mq-size, mq-crc32)")
_CORRUPT = MqError("body does not match its mq-size / mq-crc32 headers")
_FOREIGN = MqError("message without mqusers headers (not sent by mqusers)")
_OTHER_RUN = MqError("message of another mqusers run")
logger = logging.getLogger(__name__)


class Receiver:
    """Fires ``receive <destination>`` with the send-to-receive latency of every message.

    ``ack`` is the subscription's ack mode. In ``client`` mode one ACK covers every earlier message,
    so the receiver acknowledges every ``ack_every`` messages (and on :meth:`flush`); in
    ``client-individual`` mode it acknowledges each message. ACKs are written once per socket read,
    all of that read's in one write, after its last message: not a syscall per message.
    """

    def __init__(
        self,
        client: StompClient,
        destination: str,
        ack: str,
        ack_every: int = 1,
        observer: Observer | None = None,
        clock: Follower | None = None,
        run_id: str = "",
        other_runs: str = "apart",
        label: str = "",
        spot: Spot | None = None,
        backlog: BacklogFigures | None = None,
        pace: AckPace | None = None,
        ttl_ns: int = 0,
        nacks: NackCounts | None = None,
        priorities: int = 0,
    ):
        self.destination = destination
        #: What its events are named after: the destination, or the pattern it is one of.
        self.label = label or destination
        self.name = event_name(RECEIVE, self.label)
        self._receive = client.operation(self.name)
        self._due = client.operation(event_name(RECEIVE_DUE, self.label))
        #: A backlog run: this run's deliveries counted by phase, their latency apart beside ``receive``.
        self._backlog = backlog
        if backlog is not None:
            self._old = client.operation(event_name(RECEIVE_BACKLOG, self.label))
            self._new = client.operation(event_name(RECEIVE_NEW, self.label))
            self._old.cut = self._new.cut = False
        #: ``--mq-priorities`` in a backlog run: each delivery's level in order, latency per priority.
        self._priority = (
            None
            if backlog is None or not priorities
            else PriorityTally(
                backlog.priority.order(priorities),
                lambda operation: client.operation(event_name(operation, self.label)),
            )
        )
        #: A pattern's destination: its own deliveries' latency, beside the pattern's row.
        self._spot = spot
        # Cut by each message's send time here, not by its receive time (on the producer's clock).
        self._receive.cut = self._due.cut = False
        #: Clock offsets of every process (distributed runs): remote send times onto this clock.
        self._clock = clock
        self._offsets: dict[str, int] | None = None
        self._corrections: dict[bytes, int] = {}
        #: The message audit's record of this subscription (set once it is subscribed).
        self.audit: Subscription | None = None
        #: Message groups: each producer's first and last delivery time go to the audit too.
        self.spans = False
        self.received = 0
        #: The last delivery's and, since the last :meth:`reset`, the first's receive time (ns; 0: none).
        self.last_ns = self.first_ns = 0
        self._client = client
        #: Where the measured window's start is read (``measured_from_ns``): set per test.
        self._recorder = client.recorder
        self._fire = client.fire
        self._acks = ack != "auto"
        self._client_mode = ack == "client"
        self.batch_acks(ack_every)
        self._individual = ack == "client-individual"
        #: ``client`` mode: the newest ack id not yet acknowledged.
        self._unacked: bytes | None = None
        #: A paced drain: each ACK waits its turn there (:mod:`mqusers.stomp.ackpace`), not the read's end.
        self._pace = pace
        #: ACK frames for the end of the current read.
        self._out: list[bytes] = []
        #: ``--mq-tx-ack``: ACKs in transactions (:meth:`ack_in_transactions`); what frames an ACK is.
        self._tx: AckTransactions | None = None
        self._frame_of: Callable[[bytes], bytes] = ack_frame
        self._observer = observer
        self._context: dict[str, object] = {}
        self._run = run_id.encode()
        #: ``apart``: other runs' and foreign messages are counted apart; ``fail``: also Locust failures;
        #: ``receive``: other mqusers runs' messages count as received (draining a backlog).
        self._other_runs = other_runs
        self._warned = False
        #: Messages expire ``ttl_ns`` after their send: a delivery later than that (and the grace) is counted.
        self._late_ns = ttl_ns + EXPIRY_GRACE_NS if ttl_ns else 0
        #: ``--mq-nack-ratio`` (client-individual acks): which deliveries to NACK, shared by the process's
        #: consumers of a queue, so a redelivery to any of them is known as one.
        self.nacks = nacks
        #: While a consumer waits for the network's demand (mqusers.stomp.probe): its probes coming back.
        self.probe: Probe | None = None

    def ack_in_transactions(self, size: int) -> None:
        """Send ACKs in transactions of ``size`` ACKs (0: none), each committed after its last and on :meth:`flush`."""
        self._tx = AckTransactions(self._client, self.label, size) if size else None
        self._frame_of = ack_frame if self._tx is None else self._tx.ack

    def batch_acks(self, every: int) -> None:
        """``client`` mode: one cumulative ACK per ``every`` messages (other modes ACK each)."""
        self._ack_every = max(1, every) if self._client_mode else 1

    def __call__(self, headers: Headers, body: bytes, received_ns: int) -> None:
        if self._acks and self._client.closing:
            return  # never acknowledged, so the broker redelivers it to another consumer
        self.last_ns = arrived_ns = received_ns
        if not self.first_ns:
            self.first_ns = received_ns
        own = headers.get(RUN) == self._run
        if not own and self._stray(headers, len(body)):
            return
        size = len(body)
        refuse = False
        measured_from_ns = self._recorder.measured_from_ns
        if self._clock is not None and self._clock.offsets:
            correction = self._correction(headers.get(PRODUCER, b""))
            received_ns -= correction
            measured_from_ns -= correction  # onto the producer's clock, as its send time
        try:
            sent_ns = int(headers[SENT_NS])
            intact = int(headers[SIZE]) == size and zlib.crc32(body) == int(headers[CRC])
        except (KeyError, ValueError):
            self._failed(size, _NO_STAMP)
        else:
            if not intact:
                self._failed(size, _CORRUPT)
            else:
                if self.audit is not None and own:  # the audit is of this run's messages only
                    producer, seq = headers[PRODUCER], int(headers[SEQ])
                    again = headers.get(_REDELIVERED) == b"true"
                    if self.nacks is None:
                        self.audit.record(producer, seq, again)
                    else:
                        refuse = self.nacks.deliver(self.audit, producer, seq, again)
                    # Both times on the producer's clock (received_ns corrected above).
                    if self._late_ns and received_ns - sent_ns > self._late_ns:
                        self.audit.record_late(producer)
                    if self.spans:
                        self.audit.seen(producer, arrived_ns)
                latency_us = (received_ns - sent_ns) // 1000
                backlog = self._backlog if own else None
                old = backlog is not None and backlog.delivered(sent_ns, received_ns)
                if self._priority is not None and own:
                    self._priority.delivered(int(headers[SEQ]), old, latency_us, size, received_ns,
                                             sent_ns >= measured_from_ns)  # fmt: skip
                # Auto ack only: the broker sends on without waiting for our ACKs, so a pause throttles nothing.
                if latency_us >= RECEIVE_BEHIND_US and not self._acks:
                    self._client.behind = True
                # A message sent during the warm-up is left out of the figures whenever it arrives, as
                # its send is: received on a topic stays subscribers x sent.
                if sent_ns >= measured_from_ns:
                    due = headers.get(DUE_NS)
                    if due is not None:
                        # Coordinated omission corrected: measured from when the schedule wanted it sent.
                        self._due.record((received_ns - int(due)) // 1000, size, received_ns)
                    self._receive.record(latency_us, size, received_ns)
                    if backlog is not None:
                        (self._old if old else self._new).record(latency_us, size, received_ns)
                    if self._spot is not None:
                        self._spot.record(latency_us, received_ns)
        self.received += 1
        if refuse:
            self._acknowledge(headers.get(b"ack"), True, nack_frame)
        elif self._acks:
            self._acknowledge(headers.get(b"ack"), self.received % self._ack_every == 0)
        if self._observer is not None:
            self._observer(headers, body)

    def _failed(self, size: int, error: MqError) -> None:
        self._fire(request_type=REQUEST_TYPE, name=self.name, response_time=0.0, response_length=size,
                   exception=error, context=self._context)  # fmt: skip

    def _stray(self, headers: Headers, size: int) -> bool:
        """Count a message that is not this run's apart; False when it is to be received as usual."""
        token = headers.get(PROBE)
        if token is not None:  # a network-demand probe: no message of anyone's, but the brokers count it
            if self.probe is not None and token == self.probe.token:
                self.probe.back(self.destination)
            if self.audit is not None:
                self.audit.probes += 1
            if self._acks:
                self._acknowledge(headers.get(b"ack"), True)
            return True
        foreign = RUN not in headers
        if not foreign and self._other_runs == "receive":
            return False
        if self.audit is not None:
            if foreign:
                self.audit.foreign += 1
            else:
                self.audit.other_run += 1
        if self._other_runs == "fail":
            self._failed(size, _FOREIGN if foreign else _OTHER_RUN)
        elif not self._warned:
            self._warned = True
            what = "messages without mqusers headers" if foreign else "messages of another run"
            logger.warning("mqusers: %s: %s arrive; counted apart (foreign / other_run), not as received",
                           self.destination, what)  # fmt: skip
        if self._acks:
            self._acknowledge(headers.get(b"ack"), True)
        return True

    def _acknowledge(self, ack_id: bytes | None, now: bool, frame: Callable[[bytes], bytes] | None = None) -> None:
        """ACK (or ``frame``: NACK) this delivery (``client`` mode: with the next ``now``) at the end of this read."""
        if ack_id is None:
            return
        if not (now or self._individual):
            self._unacked = ack_id
            return
        self._unacked = None
        if self._pace is not None:
            self._pace.hold(self, (frame or self._frame_of)(ack_id))
            return
        if not self._out:
            self._client.after_read(self._write)
        self._out.append((frame or self._frame_of)(ack_id))

    @property
    def generation(self) -> int:
        """Its connection's: ACKs held across a reconnect are void."""
        return self._client.generation

    def write_acks(self, frames: list[bytes]) -> None:
        """Write ACKs a paced drain released."""
        self._out.extend(frames)
        self._write()

    def reset(self) -> None:
        """A new connection: ack ids of the old one mean nothing to the broker now."""
        self._unacked = None
        self._out.clear()
        self.first_ns = 0

    def _correction(self, producer: bytes) -> int:
        """This process's clock offset minus the producer's (its id starts with its process tag)."""
        clock = self._clock
        assert clock is not None
        if self._offsets is not clock.offsets:
            self._offsets, self._corrections = clock.offsets, {}
        correction = self._corrections.get(producer)
        if correction is None:
            tag = producer.split(b".", 1)[0].decode("ascii", "replace")
            own = clock.own_offset_ns
            correction = self._corrections[producer] = own - clock.offsets.get(tag, own)
        return correction

    def flush(self) -> None:
        """Acknowledge everything received so far now (``client`` mode batches ACKs)."""
        ack_id, self._unacked = self._unacked, None
        if ack_id is not None:
            self._out.append(self._frame_of(ack_id))
        if self._tx is not None and (commit := self._tx.commit()):
            self._out.append(commit)  # what the stream stopped short of a full transaction
        self._write()

    def _write(self) -> None:
        if self._out:
            data = b"".join(self._out)
            self._out.clear()
            try:
                self._client.send_raw(data)
            except MqError as error:
                if self._client.closing:
                    return  # closing: the broker redelivers what was not acknowledged
                self._fire(request_type=REQUEST_TYPE, name=event_name(ACK, self.label), response_time=0.0,
                           response_length=0, exception=error, context=self._context)  # fmt: skip
