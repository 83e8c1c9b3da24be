"""A backlog run's phases: consumers wait at the gate while producers build, then subscribe and drain.

``--mq-backlog-messages N`` / ``--mq-backlog-seconds T``: :func:`watch` opens the gate once this
run's producers sent N messages (with ``--mq-receipts``: the broker confirmed them) or T seconds
passed, whichever comes first, or when the run ends while still building (its drain is then the
backlog's). Consumers count at the start barrier at once (producers must not wait for them) and
subscribe when the gate opens; the run's drain waits for every one of them (:meth:`Phases.ready`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import gevent
from gevent.event import Event

from mqusers.measure.backlogfigures import BacklogFigures
from mqusers.stomp.ackpace import AckPace

#: How often the build's count is read: the backlog may overshoot N by what unpaced producers send meanwhile.
WATCH_EVERY_S = 0.01
BY_COUNT, BY_TIME, BY_END = "messages sent", "time passed", "the run ended"


class Phases:
    """One test's build and drain; ``figures`` is what the receivers count and the report shows."""

    def __init__(
        self,
        messages: int,
        seconds: float,
        *,
        drain_rate: float = 0.0,
        clock: Callable[[], int] = time.time_ns,
        announce: Callable[[str, int], None] = lambda text, ts_ns: None,
    ):
        self.clock = clock
        #: Told the switch, in words, at its time: a ``phase`` mark on the live dashboards.
        self.announce = announce
        self.figures = BacklogFigures(messages, seconds, started_ns=clock(), drain_rate=drain_rate)
        self.gate = Event()
        #: Consumers that passed the gate and have not subscribed yet.
        self.joining = 0
        #: ``--mq-backlog-drain-rate``: every consumer's ACKs on one schedule (None: as fast as they can).
        self.pace = AckPace(drain_rate) if drain_rate else None

    def switch(self, sent: int, reason: str) -> None:
        if self.gate.is_set():
            return
        self.figures.switch(sent, self.clock(), reason)
        self.gate.set()
        self.announce(f"backlog built: {sent:,} messages ({reason}); the consumers drain it", self.figures.switch_ns)

    def ready(self) -> bool:
        """Whether the drain can be judged: the build is over and every waiting consumer subscribed."""
        return self.gate.is_set() and not self.joining

    def hold(self) -> None:
        """A consumer waits here until the build is over."""
        self.joining += 1
        self.gate.wait()

    def joined(self) -> None:
        self.joining -= 1


def watch(phases: Phases, sent: Callable[[], int], sleep: Callable[[float], Any] = gevent.sleep) -> None:
    """Open the gate on the count or the time (a greenlet, for one test)."""
    figures = phases.figures
    while not phases.gate.is_set():
        count = sent()
        if figures.messages and count >= figures.messages:
            phases.switch(count, BY_COUNT)
        elif figures.seconds and (phases.clock() - figures.started_ns) / 1e9 >= figures.seconds:
            phases.switch(count, BY_TIME)
        else:
            sleep(WATCH_EVERY_S)
