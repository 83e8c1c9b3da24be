"""Producers that send in STOMP transactions: BEGIN, ``tx_size`` SENDs carrying ``transaction:``, then COMMIT or ABORT.

Which transactions abort is decided, not drawn: transaction k of a producer (from 1) aborts when
``floor(k * ratio)`` passes a whole number, so ``tx_abort_ratio`` 0.25 aborts every 4th, and any k
transactions hold exactly ``floor(k * ratio)`` aborted ones. COMMIT and ABORT each ask for a
RECEIPT and are timed from their write to it (``commit <destination>``, ``abort <destination>``).

What the audit is told of each transaction's messages (:mod:`mqusers.audit.audit`):

- COMMIT answered: sent, as any message; every one must arrive.
- ABORT written (answered or not), or the transaction left open when its connection closed or
  dropped (a broker rolls it back then): ``aborted``, never to arrive.
- COMMIT written but not answered (no RECEIPT in time, refused, the connection cut): ``unconfirmed``.

Messages in a transaction ask for no RECEIPT of their own: the COMMIT's confirms them all.
Configured like every mqusers User: class attributes, ``--mq-tx-size`` and ``--mq-tx-abort-ratio``
override them; ``tx_size`` 0 sends as a plain producer does.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction
from typing import Any

from gevent import GreenletExit

from mqusers.audit.ledgers import SentStream
from mqusers.measure.names import ABORT, BEGIN, COMMIT, event_name
from mqusers.stomp.client import Sent
from mqusers.stomp.wire import transaction_line
from mqusers.users.producers import StompProducerUser


def aborts(k: int, ratio: Fraction) -> bool:
    """Transaction ``k`` (from 1) aborts: exactly ``floor(n * ratio)`` of the first ``n`` do, evenly spread."""
    return math.floor(k * ratio) > math.floor((k - 1) * ratio)


class StompTransactionProducerUser(StompProducerUser):
    """Sends to ``destination`` in transactions of ``tx_size`` messages, aborting ``tx_abort_ratio`` of them."""

    abstract = True
    #: Messages per transaction; 0: no transactions.
    tx_size = 10
    #: The share of transactions aborted, 0 to 1, spread evenly.
    tx_abort_ratio = 0.0

    def __init__(self, environment: Any):
        super().__init__(environment)
        self.tx_size, self.tx_abort_ratio = self.setting("tx_size"), self.setting("tx_abort_ratio")
        # Exact: 0.1 is one in ten, not the float just above it.
        self._ratio = Fraction(str(self.tx_abort_ratio)).limit_denominator(1_000_000)
        self._commit = self.client.operation(event_name(COMMIT, self.destination))
        self._abort = self.client.operation(event_name(ABORT, self.destination))
        #: Transactions begun so far; the open one's id, its header line and its messages (each lane's ledger, seq).
        self.transactions = 0
        self._id = self._line = b""
        self._open: list[tuple[SentStream, int]] = []
        #: Ended so far: committed (RECEIPT came), aborted, commit unconfirmed.
        self.ended = {"committed": 0, "aborted": 0, "unconfirmed": 0}

    def emit(self, seq: int) -> None:
        if not self.tx_size:
            super().emit(seq)
            return
        if not self._id and not self._begin():
            return
        sent = self._sent
        self._open.append((sent, seq))  # before the write: one cut mid-frame is the transaction's too
        # The due time (a shared schedule's) and the transaction: pre-encoded header lines, one after the other.
        if not self.client.publish(self.publisher(seq), seq, extra=self._due_header + self._line):
            # Not written: the connection is gone, and the transaction with it.
            self._open.pop()
            self._rolled_back()
            return
        now = time.time_ns()
        sent.record(seq, now)
        if len(self._open) >= self.tx_size or self.done():
            self._end()

    def wait_time(self) -> float:
        # Once the run stops producing, the open transaction ends at once, not after a done producer's 1 s nap.
        return 0.0 if self._id and self.done() else super().wait_time()

    def send_burst(self) -> None:
        if self._id and self.done() and self.client.connected:
            self._end()  # the run stopped producing: the open transaction ends as its number says
        super().send_burst()

    def _begin(self) -> bool:
        self.transactions += 1
        transaction = b"%s-tx%d" % (self.producer_id.encode(), self.transactions)
        if not self.client.begin(transaction, event_name(BEGIN, self.destination)):
            return False
        self._id, self._line = transaction, transaction_line(transaction)
        return True

    def _end(self) -> None:
        """COMMIT or ABORT the open transaction (as its number says), timed to the RECEIPT."""
        commit = not aborts(self.transactions, self._ratio)
        transaction, messages = self._id, self._open
        self._id, self._open = b"", []
        try:
            outcome = self.client.end_transaction(transaction, commit, self._commit if commit else self._abort)
        except GreenletExit:
            # Stopped while waiting for the RECEIPT: a COMMIT's outcome is unknown, an ABORT's is not.
            self._settle(messages, "unconfirmed" if commit else "aborted")
            raise
        if not commit or outcome is Sent.FAILED:
            self._settle(messages, "aborted")  # an ABORT, or a COMMIT the broker never had
        elif outcome is Sent.UNCONFIRMED:
            self._settle(messages, "unconfirmed")
        else:
            self.ended["committed"] += 1
            self.ok_ns = time.time_ns()

    def _settle(self, messages: list[tuple[SentStream, int]], how: str) -> None:
        self.ended[how] += 1
        for sent, seq in messages:
            (sent.aborted if how == "aborted" else sent.unconfirmed).add(seq)

    def _rolled_back(self) -> None:
        """The open transaction's connection closed before its COMMIT: the broker rolls it back."""
        if self._id:
            messages, self._id, self._open = self._open, b"", []
            self._settle(messages, "aborted")

    def on_connection_lost(self, dropped: bool) -> None:
        if not self.tx_size:
            super().on_connection_lost(dropped)
            return
        # Also at stop, mid-transaction (the DISCONNECT rolls it back). Every other message's outcome is
        # known: its COMMIT was answered or not.
        self._rolled_back()
