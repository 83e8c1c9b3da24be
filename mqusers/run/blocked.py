"""Stalled sends: a producer's send in progress that has not moved for ``BLOCKED_S``, and why.

Producer flow control, a full store or a stalled broker stop the broker reading while its host
still acknowledges: that is the broker's doing ("blocked"), reported apart from the generator's
verdict. A send whose bytes nobody acknowledges (:func:`mqusers.stomp.tcpinfo.unanswered`) is a
network partition or a dead host ("stalled"), never put on the broker; heart-beats then drop the
connection, an outage of the failover section. :class:`BlockedSends` is sampled once a second by
the health monitor (:mod:`mqusers.run.health`) with the times it reads from its clock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from mqusers.errors import MqusersError
from mqusers.measure.names import BLOCKED, REQUEST_TYPE, STALLED, event_name
from mqusers.run.verdicts import BlockedReport

BLOCKED_S = 1.0
BLOCKED_MESSAGE = "send blocked by the broker for over 1 s (producer flow control, a full store or a stalled broker)"
STALLED_MESSAGE = (
    "send stalled for over 1 s: the broker's host acknowledges nothing (a network partition or a dead host)"
)

logger = logging.getLogger(__name__)


class BlockedError(MqusersError):
    """A producer's send did not move: the broker stopped reading."""


class StalledError(MqusersError):
    """A producer's send did not move and nothing it sent was acknowledged: the network or the host."""


class Sender(Protocol):
    def send_progress(self) -> tuple[bool, int]: ...
    def peer_unanswered(self) -> bool | None: ...


@dataclass
class Blocked:
    """Blocked-send episodes of one destination's producers."""

    episodes: int = 0
    longest_s: float = 0.0
    now: int = 0  # producers blocked at the last sample
    until_s: float = 0.0

    def as_dict(self) -> BlockedReport:
        return {"episodes": self.episodes, "longest_s": round(self.longest_s, 3), "blocked_now": self.now,
                "until_s": self.until_s}  # fmt: skip


@dataclass
class _Watch:
    sends: int
    since: float
    counted: bool = False
    #: Counted as stalled (nothing acknowledged), not as blocked by the broker.
    unanswered: bool = False


class BlockedSends:
    """Each producer's send progress between samples; an episode per send that stopped moving."""

    def __init__(
        self,
        producers: Callable[[], Iterable[tuple[str, Sender]]] = lambda: (),
        fire: Callable[..., Any] | None = None,
    ) -> None:
        self.producers = producers
        #: ``events.request.fire``: each blocked episode is also a failure in Locust's statistics.
        self.fire = fire
        self.by_destination: dict[str, Blocked] = {}
        #: Sends stalled with nothing acknowledged, per destination: not the broker's doing.
        self.stalled: dict[str, Blocked] = {}
        self._watch: dict[int, _Watch] = {}
        #: Told when each episode began (epoch s): a backlog run counts them by phase.
        self.on_episode: Callable[[float], None] | None = None

    def reset(self) -> None:
        self.by_destination, self.stalled, self._watch = {}, {}, {}

    def sample(self, now: float, wall: float) -> None:
        """Look at every producer: ``now`` on the monitor's monotonic clock, ``wall`` epoch seconds."""
        live: set[int] = set()
        for blocked in (*self.by_destination.values(), *self.stalled.values()):
            blocked.now = 0
        for destination, sender in self.producers():
            in_send, sends = sender.send_progress()
            key = id(sender)
            watch = self._watch.get(key)
            if not in_send:
                continue
            if watch is not None and watch.counted and sends == watch.sends + 1:
                watch.sends = sends  # one write more, blocked again (its DISCONNECT, a trickle): the same episode
            elif watch is None or watch.sends != sends:
                self._watch[key] = _Watch(sends, now)
                live.add(key)
                continue
            live.add(key)
            stalled = now - watch.since
            if stalled < BLOCKED_S:
                continue
            if not watch.counted:
                watch.unanswered = bool(sender.peer_unanswered())
            book = self.stalled if watch.unanswered else self.by_destination
            entry = book.setdefault(destination, Blocked())
            entry.now += 1
            entry.longest_s = max(entry.longest_s, stalled)
            entry.until_s = wall
            if not watch.counted:
                watch.counted = True
                entry.episodes += 1
                self._episode(destination, stalled, wall, watch.unanswered)
        self._watch = {k: w for k, w in self._watch.items() if k in live}

    def _episode(self, destination: str, stalled: float, wall: float, unanswered: bool) -> None:
        if unanswered:
            logger.warning(
                "mqusers: a producer to %s has had nothing acknowledged by the broker's host for %.0f s "
                "(a network partition or a dead host)", destination, stalled,
            )  # fmt: skip
        else:
            if self.on_episode is not None:
                self.on_episode(wall - stalled)
            logger.warning(
                "mqusers: a producer to %s is blocked by the broker (flow control, a full store or a stalled "
                "broker): its send has not moved for %.0f s", destination, stalled,
            )  # fmt: skip
        if self.fire is not None:
            operation, error = (STALLED, StalledError(STALLED_MESSAGE)) if unanswered else (
                BLOCKED, BlockedError(BLOCKED_MESSAGE))  # fmt: skip
            self.fire(request_type=REQUEST_TYPE, name=event_name(operation, destination),
                      response_time=stalled * 1000.0, response_length=0, exception=error, context={})  # fmt: skip

    def report(self) -> dict[str, BlockedReport]:
        return {d: b.as_dict() for d, b in self.by_destination.items()}

    def report_stalled(self) -> dict[str, BlockedReport]:
        return {d: b.as_dict() for d, b in self.stalled.items()}
