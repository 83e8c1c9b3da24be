"""A backlog run's figures, pure: the switch from build to drain, the backlog then, when it emptied, the drain.

The build ends at the *switch* (``switch_ns``): what this run sent before it is the backlog; a
delivery sent earlier is the backlog's (its latency is its age in the queue), a later one is *new*
(sent while the backlog drained). The backlog is empty once as many of its messages arrived as were
sent before the switch: ``emptied_ns``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mqusers.measure.priority import PriorityFigures

#: The drain's per-second counts stop growing after this many seconds (bounded memory).
MAX_SECONDS = 86_400


@dataclass
class BacklogFigures:
    """``messages`` / ``seconds``: the build's end asked for (0: not by that)."""

    messages: int = 0
    seconds: float = 0.0
    started_ns: int = 0
    #: ``--mq-backlog-drain-rate``: msg/s the consumers take at most (0: as fast as they can).
    drain_rate: float = 0.0
    #: 0 while building.
    switch_ns: int = 0
    #: Why the build ended: the count reached, the time passed, or the run ended.
    reason: str = ""
    #: This run's messages sent before the switch.
    at_switch: int = 0
    #: Deliveries of the backlog's messages and of new ones.
    drained: int = 0
    fresh: int = 0
    emptied_ns: int = 0
    #: The backlog's deliveries in each second since the switch.
    per_second: list[int] = field(default_factory=list)
    #: Producer flow control: blocked-send episodes that began while building and after the switch.
    blocked_build: int = 0
    blocked_drain: int = 0
    #: ``--mq-priorities``: each consumer's delivery order, its inversions (:mod:`mqusers.measure.priority`).
    priority: PriorityFigures = field(default_factory=PriorityFigures)

    @property
    def building(self) -> bool:
        return not self.switch_ns

    def switch(self, sent: int, now_ns: int, reason: str) -> None:
        if self.switch_ns:
            return
        self.switch_ns, self.at_switch, self.reason = now_ns, sent, reason
        if not sent:
            self.emptied_ns = now_ns

    def delivered(self, sent_ns: int, received_ns: int) -> bool:
        """Count one delivery of this run; True when it is the backlog's (sent before the switch)."""
        if not self.switch_ns or sent_ns >= self.switch_ns:
            self.fresh += 1
            return False
        self.drained += 1
        second = max(0, (received_ns - self.switch_ns) // 1_000_000_000)
        if second < MAX_SECONDS:
            if second >= len(self.per_second):
                self.per_second.extend([0] * (second + 1 - len(self.per_second)))
            self.per_second[second] += 1
        if not self.emptied_ns and self.drained >= self.at_switch:
            self.emptied_ns = received_ns
        return True

    def blocked_send(self, began_s: float) -> None:
        """Count a blocked-send episode that began at ``began_s`` (epoch s) in its phase."""
        if self.switch_ns and began_s * 1e9 >= self.switch_ns:
            self.blocked_drain += 1
        else:
            self.blocked_build += 1

    def document(self) -> dict[str, Any]:
        """The report's figures (seconds and messages; ``time_to_empty_s`` None while not empty)."""
        emptied = self.emptied_ns and self.switch_ns
        peak = max(self.per_second, default=0)
        return {
            "build_messages": self.messages,
            "build_seconds": self.seconds,
            "drain_rate_asked": self.drain_rate or None,
            "build_s": (self.switch_ns - self.started_ns) / 1e9 if self.switch_ns else None,
            "switch_ns": self.switch_ns,
            "switch_reason": self.reason,
            "at_switch": self.at_switch,
            "drained": self.drained,
            "new": self.fresh,
            "emptied_ns": self.emptied_ns,
            "time_to_empty_s": (self.emptied_ns - self.switch_ns) / 1e9 if emptied else None,
            "drain_rate_msgs": self.drained / ((self.emptied_ns - self.switch_ns) / 1e9)
            if emptied and self.emptied_ns > self.switch_ns
            else None,
            "peak_drain_rate_msgs": peak,
            "drain_per_second": list(self.per_second),
            "blocked_sends": {"build": self.blocked_build, "drain": self.blocked_drain},
            "priority": self.priority.document(),
        }
