"""Who waits on which answer: RECEIPTs and replies by id, each wait bounded, all failed when the connection drops.

:class:`Answers` belongs to one :class:`mqusers.stomp.session.Session`: its operations ``expect`` an
id before writing the frame that asks for it, the reader greenlet ``answer``\\ s or ``refuse``\\ s it,
and ``wait`` records the outcome (an operation's latency, or one request event).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gevent.event import AsyncResult

from mqusers.measure.recorder import Record
from mqusers.stomp.errors import MqError

#: ``fire(name, start, size, error, end=None)``: one request event (the session's).
Fire = Callable[..., None]


class Answers:
    def __init__(self, timeout: float, fire: Fire):
        self._timeout = timeout
        self._fire = fire
        #: Pending answers by receipt or correlation id: while any is, the reader must not pause.
        self.pending: dict[bytes, AsyncResult] = {}

    def expect(self, key: bytes) -> AsyncResult:
        waiter = self.pending[key] = AsyncResult()
        return waiter

    def forget(self, key: bytes) -> None:
        self.pending.pop(key, None)

    def answer(self, key: bytes) -> bool:
        """The answer to ``key`` arrived now; False when nobody waits for it."""
        waiter = self.pending.get(key)
        if waiter is None:
            return False
        waiter.set(time.perf_counter())
        return True

    def refuse(self, key: bytes, error: MqError) -> bool:
        waiter = self.pending.get(key)
        if waiter is None:
            return False
        waiter.set_exception(error)
        return True

    def fail_all(self, error: MqError) -> None:
        for waiter in list(self.pending.values()):
            if not waiter.ready():
                waiter.set_exception(error)

    def wait(
        self,
        waiter: AsyncResult,
        key: bytes,
        target: Record | str,
        start: float,
        size: int,
        what: str,
        measured: bool = True,
        timeout: float | None = None,
    ) -> MqError | None:
        """Wait for ``waiter``, record the outcome under ``target`` (an operation or an event name),
        return the error (None: answered). An operation's success only if ``measured`` (sent after
        the warm-up). ``timeout`` defaults to ``--mq-timeout``.

        ``wait`` returns on timeout instead of raising ``gevent.Timeout``, a BaseException that would
        end the User's greenlet (and could be another, outer timeout's).
        """
        try:
            waiter.wait(self._timeout if timeout is None else timeout)
        except BaseException:
            # The User was stopped while it waited (the run ended). A control frame (SUBSCRIBE...) stays
            # unconfirmed and says so as a failure rather than vanishing with the greenlet; a message's
            # send is the audit's `unconfirmed` already (producers stop mid-wait at every end).
            if isinstance(target, str):
                self._fire(target, start, size, MqError(f"unconfirmed: the User stopped before the broker's {what}"))
            raise
        finally:
            self.pending.pop(key, None)
        error: MqError | None
        if not waiter.ready():
            error = MqError(f"no {what} within {self._timeout if timeout is None else timeout:g}s")
        elif waiter.successful():
            if isinstance(target, str):
                self._fire(target, start, size, None, end=waiter.value)
            elif measured:
                target.record(int((waiter.value - start) * 1e6), size, time.time_ns())
            return None
        else:
            exception = waiter.exception
            error = exception if isinstance(exception, MqError) else MqError(str(exception))
        self._fire(target if isinstance(target, str) else target.name, start, size, error)
        return error
