"""A producer's sends awaiting their RECEIPT, at most ``--mq-in-flight`` of them (pipelined confirms).

With one, a send waits for its own RECEIPT (a sync send). With N, a producer sends on while fewer
than N wait, and waits for the oldest once N do, as a publisher with a window of unconfirmed messages
does. Every RECEIPT is timed from its own send, whenever it is waited for.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from mqusers.stomp.client import Awaited, Publisher, Sent, StompClient

#: ``(seq, outcome)`` once a send's RECEIPT came, was refused, or was given up.
Settled = Callable[[int, Sent], None]


class ReceiptWindow:
    def __init__(self, client: StompClient, size: int):
        self._client, self.size = client, size
        #: Each send awaiting its RECEIPT, oldest first, with what to tell when it is settled.
        self._waiting: deque[tuple[Awaited, Settled]] = deque()
        self.written = False

    def __len__(self) -> int:
        return len(self._waiting)

    def send(self, publisher: Publisher, seq: int, extra: bytes, settled: Settled) -> None:
        """Send ``seq``; then, while ``size`` sends wait, wait for the oldest. ``settled`` is told its outcome.

        ``written`` says, when this is interrupted, whether ``seq`` was in the window by then.
        """
        self.written = False
        awaited = self._client.publish_receipted(publisher, seq, extra)
        if awaited is None:
            settled(seq, Sent.FAILED)
            return
        self._waiting.append((awaited, settled))
        self.written = True
        while len(self._waiting) >= self.size:
            self._settle_oldest(None)

    def settle_all(self, within_s: float) -> None:
        """Wait for every RECEIPT still due, all within ``within_s`` (a stalled broker costs it once)."""
        deadline = time.monotonic() + within_s
        while self._waiting:
            self._settle_oldest(max(0.0, deadline - time.monotonic()))

    def abandon_all(self) -> list[int]:
        """Give up on every RECEIPT still due (the User stopped): sent, their outcome unknown."""
        seqs = []
        while self._waiting:
            awaited, settled = self._waiting.popleft()
            self._client.abandon(awaited)
            settled(awaited.seq, Sent.UNCONFIRMED)
            seqs.append(awaited.seq)
        return seqs

    def _settle_oldest(self, timeout: float | None) -> None:
        # Left in the window while waited for: a User stopped mid-wait abandons it with the rest.
        outcome = self._client.settle(self._waiting[0][0], timeout)
        awaited, settled = self._waiting.popleft()
        settled(awaited.seq, outcome)
