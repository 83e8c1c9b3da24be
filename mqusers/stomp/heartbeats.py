"""STOMP heart-beats: the intervals both sides agreed on, our beats sent, a silent broker noticed.

:func:`negotiate` is STOMP 1.2's rule; :class:`HeartBeats` runs it for one connection as two
greenlets, so that a beat blocked behind a full socket buffer never keeps the silence from being
noticed: the watcher then drops the connection, which ends the blocked write too.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import gevent

#: What a heart-beat is on the wire.
BEAT = b"\n"
#: Our beats go out this often within the agreed send interval. ActiveMQ checks, once per interval
#: (its grace multiplier is 1.0), that something arrived since its last check: beats exactly one
#: interval apart drift across its check and leave a window empty, which drops the connection.
BEATS_PER_INTERVAL = 2
#: Silence, in receive heart-beat intervals, before the connection counts as dead. ActiveMQ beats
#: only after a whole interval without writing, so 1-2 intervals pass between its frames (1.94 s
#: seen at 1,000 ms): stomp.py's default 1.5 dropped idle consumers half the time.
GRACE = 2.5


def negotiate(ours: tuple[int, int], theirs: bytes | None) -> tuple[int, int]:
    """(ms between our beats, ms between the broker's; 0: none) from what our CONNECT asked (``ours``)
    and the CONNECTED frame's ``heart-beat`` value (``theirs``; None or unreadable: the broker beats not)."""
    try:
        sx, sy = (int(value) for value in (theirs or b"").replace(b" ", b"").split(b","))
    except ValueError:
        return 0, 0
    cx, cy = ours
    return (max(cx, sy) if cx and sy > 0 else 0), (max(cy, sx) if cy and sx > 0 else 0)


class HeartBeats:
    """Beats twice every ``send_ms`` through ``beat()``; calls ``silent()`` once when nothing was read for
    ``GRACE`` receive intervals (``last_read()`` is the monotonic time of the last read)."""

    def __init__(
        self,
        intervals: tuple[int, int],
        beat: Callable[[], None],
        last_read: Callable[[], float],
        silent: Callable[[], None],
    ):
        send_ms, receive_ms = intervals
        self._greenlets: list[gevent.Greenlet] = []
        if send_ms:
            self._greenlets.append(gevent.spawn(self._beat, send_ms / 1000 / BEATS_PER_INTERVAL, beat))
        if receive_ms:
            self._greenlets.append(gevent.spawn(self._watch, receive_ms / 1000 * GRACE, last_read, silent))

    def stop(self) -> None:
        """End both greenlets (without waiting: the caller may be one of them)."""
        greenlets, self._greenlets = self._greenlets, []
        current = gevent.getcurrent()
        for greenlet in greenlets:
            if greenlet is not current:
                greenlet.kill(block=False)

    @staticmethod
    def _beat(every_s: float, beat: Callable[[], None]) -> None:
        try:
            while True:
                gevent.sleep(every_s)
                beat()
        except OSError:
            return  # the connection is gone: its reader reports that

    @staticmethod
    def _watch(limit_s: float, last_read: Callable[[], float], silent: Callable[[], None]) -> None:
        while True:
            quiet = time.monotonic() - last_read()
            if quiet > limit_s:
                silent()
                return
            gevent.sleep(limit_s - quiet + 0.001)
