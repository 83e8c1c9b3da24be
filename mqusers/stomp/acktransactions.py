"""A subscription's ACKs sent in transactions (``--mq-tx-ack``): BEGIN at the first, COMMIT after the Nth.

The ACK frames are written by the reader greenlet, at the end of each read, so a COMMIT cannot be
waited for there: :meth:`~mqusers.stomp.client.StompClient.commit_awaited` times it to its RECEIPT
(``commit-acks <destination>``) in a greenlet of its own. Until its transaction commits an ACK does
not count: what a connection dropped with uncommitted the broker gives out again (``redelivered``).
"""

from __future__ import annotations

from mqusers.measure.names import COMMIT_ACKS, event_name
from mqusers.stomp.client import StompClient
from mqusers.stomp.wire import transaction_ack_frame, transaction_frame


class AckTransactions:
    def __init__(self, client: StompClient, label: str, size: int):
        self._client, self.size = client, size
        self._operation = client.operation(event_name(COMMIT_ACKS, label))
        #: The open transaction (b"": none), the ACKs sent in it and its connection's generation.
        self._id = b""
        self._acks = self._generation = 0

    def ack(self, ack_id: bytes) -> bytes:
        """The frames that acknowledge ``ack_id``: a BEGIN first when none is open, a COMMIT after the Nth."""
        begin = b""
        if not self._id or self._generation != self._client.generation:  # a new connection: the old one's is void
            self._id, self._acks, self._generation = self._client.transaction_id(), 0, self._client.generation
            begin = transaction_frame(b"BEGIN", self._id)
        self._acks += 1
        frame = begin + transaction_ack_frame(ack_id, self._id)
        return frame + self.commit() if self._acks >= self.size else frame

    def commit(self) -> bytes:
        """The open transaction's COMMIT (b"" when none is open), its RECEIPT awaited elsewhere."""
        if not self._id or self._generation != self._client.generation:
            return b""  # none open on this connection: the broker rolled back the old one's
        transaction, self._id, self._acks = self._id, b"", 0
        return self._client.commit_awaited(transaction, self._operation)
