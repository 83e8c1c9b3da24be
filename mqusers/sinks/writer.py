"""A bounded line buffer with its own flushing greenlet: the store may be slow or down, the test is not.

Points are encoded lines; :meth:`LineWriter.add` only appends (and copies them to an optional
file), so a User's greenlet never waits on the store. One flusher greenlet posts batches; a
failed batch stays at the head of the buffer and is retried with back-off. When the buffer is
full the oldest lines go (the live view wants the newest) and are counted. A rejected batch (a
4xx other than 429: bad token, no such bucket, a field type conflict) would fail again, so it
is dropped and counted with its reason rather than retried.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import IO

import gevent
from gevent.event import Event

from mqusers.errors import MqusersError

logger = logging.getLogger(__name__)

BACKOFF_S = (0.5, 1.0, 2.0, 4.0)


class StoreRejected(MqusersError):
    """The store refused the batch for good (retrying cannot help); the message is one line."""


@dataclass
class WriterStats:
    written: int = 0
    overflowed: int = 0  # dropped because the buffer was full
    rejected: int = 0  # dropped because the store refused them
    failures: int = 0  # failed write attempts (each retried)
    last_error: str = ""

    @property
    def dropped(self) -> int:
        return self.overflowed + self.rejected


class LineWriter:
    """``send(body)`` posts newline-joined lines and raises on failure (:class:`StoreRejected` if final)."""

    def __init__(
        self,
        send: Callable[[str], None],
        *,
        capacity: int,
        batch: int,
        flush_every: float,
        copy_to: str | None = None,
    ):
        self.send = send
        self.capacity = capacity
        self.batch = batch
        self.flush_every = flush_every
        self.stats = WriterStats()
        self._lines: deque[str] = deque()
        self._wake = Event()
        self._greenlet: gevent.Greenlet | None = None
        self._copy: IO[str] | None = open(copy_to, "a", encoding="utf-8") if copy_to else None  # noqa: SIM115
        self._stopping = False
        self._in_flight = 0  # lines taken out of the buffer by the post under way
        self._failing_since = 0  # consecutive failures, for the back-off
        self._rejections_logged: set[str] = set()

    @property
    def buffered(self) -> int:
        return len(self._lines) + self._in_flight

    def add(self, lines: Iterable[str]) -> None:
        batch = list(lines)
        if not batch:
            return
        if self._copy is not None:
            try:
                self._copy.write("\n".join(batch) + "\n")
                self._copy.flush()  # whole lines on disk at once: readers never see half a point
            except OSError as error:  # a full disk ends the copy, not the listener
                logger.error("mqusers: influx: stopped copying points to %s: %s", self._copy.name, error)
                self._copy = None
        self._lines.extend(batch)
        self._trim()
        if len(self._lines) >= self.batch:
            self._wake.set()

    def wake(self) -> None:
        """Flush now rather than at the next period (e.g. at test stop)."""
        self._wake.set()

    def start(self) -> None:
        if self._greenlet is None:
            self._greenlet = gevent.spawn(self._run)

    def _run(self) -> None:
        while not self._stopping:
            self._wake.wait(self.flush_every)
            self._wake.clear()
            while self._lines and not self._stopping and self._send_batch():
                pass
            if self._failing_since and not self._stopping:
                self._wake.wait(BACKOFF_S[min(self._failing_since, len(BACKOFF_S)) - 1])

    def _send_batch(self) -> bool:
        """Post one batch from the head of the buffer; True if it left the buffer."""
        lines = [self._lines.popleft() for _ in range(min(self.batch, len(self._lines)))]
        self._in_flight = len(lines)
        try:
            self.send("\n".join(lines))
        except StoreRejected as error:
            self.stats.rejected += len(lines)
            self._note_failure(str(error))
            if str(error) not in self._rejections_logged:
                self._rejections_logged.add(str(error))
                logger.warning("mqusers: influx: the store rejected %d points: %s", len(lines), error)
            self._failing_since = 0
            return True
        except BaseException as error:
            # Down or slow (or this greenlet killed mid-post): the lines go back to the head, oldest
            # first, and the bound applies again to what arrived meanwhile.
            self._lines.extendleft(reversed(lines))
            self._trim()
            if not isinstance(error, Exception):
                raise
            self._failing_since += 1
            self._note_failure(_one_line(error))
            return False
        finally:
            self._in_flight = 0
        self.stats.written += len(lines)
        self._failing_since = 0
        return True

    def _trim(self) -> None:
        excess = len(self._lines) - self.capacity
        if excess > 0:
            for _ in range(excess):
                self._lines.popleft()
            self.stats.overflowed += excess

    def _note_failure(self, reason: str) -> None:
        self.stats.failures += 1
        self.stats.last_error = reason

    def flush(self, timeout: float) -> bool:
        """Send what is buffered, retrying until ``timeout``; True if nothing is left."""
        deadline = time.monotonic() + timeout
        attempt = 0
        while self._lines and time.monotonic() < deadline:
            if not self._send_batch():
                attempt += 1
                gevent.sleep(min(BACKOFF_S[min(attempt, len(BACKOFF_S)) - 1], max(0.0, deadline - time.monotonic())))
        return not self._lines

    def close(self, timeout: float) -> int:
        """Stop the flusher, flush within ``timeout``; return how many lines could not be sent."""
        deadline = time.monotonic() + timeout
        if self._greenlet is not None:
            # Let a post under way finish: killed mid-post, a batch the store did take would be sent
            # again (InfluxDB overwrites the same point; VictoriaMetrics would count it twice).
            self._stopping = True
            self._wake.set()
            self._greenlet.join(timeout)
            self._greenlet.kill(block=True)
            self._greenlet = None
        self.flush(max(0.0, deadline - time.monotonic()))
        unsent = len(self._lines)
        self._lines.clear()
        if self._copy is not None:
            self._copy.close()
            self._copy = None
        return unsent


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 200 else text[:197] + "..."
