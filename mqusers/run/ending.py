"""How a run ends: producers stop first, consumers drain, and only then do the Users stop.

Every end takes the same path. Locust fires ``test_stopping`` before it stops any User (on
``-t``, the web UI's stop button, Ctrl-C via :func:`interrupted`, and mqusers' own end of a
``--mq-total-messages`` run); :meth:`Drain.run` then

1. stops every producer (workers hear it in one message),
2. waits until every expected delivery of this run has arrived (the audit; :func:`arrival` says
   so, or that nothing was sent or expected, or that no subscription was confirmed; ``complete``
   also waits while a producer awaits a RECEIPT, its send in no ledger yet), or no delivery has
   arrived for ``--mq-drain-idle`` seconds (an idle timeout), or, for a run ended by time or by the user,
   ``--mq-drain-max`` seconds have passed or Ctrl-C came (again: see
   :func:`mqusers.wiring.lifecycle.catch_interrupts`).

The drain *settles* when the consumers went idle or everything arrived: a missing message below
one that arrived is then lost. A drain cut short leaves missing messages ``unreceived``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import gevent
from gevent.event import Event

logger = logging.getLogger(__name__)
POLL_S = 0.1
#: How often the audit is asked whether everything arrived (linear in its intervals).
AUDIT_EVERY_S = 0.25
ALL_ARRIVED = "every expected message arrived"
NOTHING_SENT = "nothing was sent by this run"
NOTHING_EXPECTED = "nothing was expected: no subscription of this run reads what was sent"
NONE_CONFIRMED = "no subscription was confirmed by the broker: no delivery could be checked"


@dataclass
class DrainOutcome:
    settled: bool
    seconds: float
    reason: str


def arrival(figures: Iterable[Mapping[str, Any]]) -> str | None:
    """From the audit's figures per destination: None while an expected message is missing, else
    why waiting is over, which is not "every expected message arrived" when none was expected."""
    figures = list(figures)
    read = [f for f in figures if f["subscriptions"]]
    if any(f["unreceived"] + f["unconfirmed"] + f["in_flight"] for f in read):
        return None
    if read and not any(s["sessions"] for f in read for s in f.get("by_subscription", ())):
        return NONE_CONFIRMED  # every SUBSCRIBE went unanswered or was refused
    if not sum(f["sent"] for f in figures):
        return NOTHING_SENT
    return ALL_ARRIVED if sum(f["expected"] for f in read) else NOTHING_EXPECTED


class Drain:
    """One run's drain. ``received`` counts this run's deliveries so far; ``complete`` asks the
    audit whether the wait is over (:func:`arrival`: why, or None); ``refresh`` pulls the latest
    figures in first. ``clock`` and ``sleep`` are injectable, for tests on a fake clock."""

    def __init__(
        self,
        received: Callable[[], int],
        complete: Callable[[], str | None],
        refresh: Callable[[], None] = lambda: None,
        deserted: Callable[[], bool] = lambda: False,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Any] = gevent.sleep,
    ):
        self.received, self.complete, self.refresh = received, complete, refresh
        self._clock, self._sleep = clock, sleep
        #: True when no consumer is left to drain (a master whose workers all quit, e.g. on Ctrl-C).
        self.deserted = deserted
        self.running = False
        self.outcome: DrainOutcome | None = None
        self.cut = False  # Ctrl-C during the drain: end it now
        self._deadline = float("inf")
        self._done = Event()

    def run(self, idle_s: float, limit_s: float | None) -> DrainOutcome:
        """Wait as described in the module docs; runs once per test, later callers get the outcome."""
        if self.outcome is not None:
            return self.outcome
        began = self._clock()
        if limit_s is not None:
            # A later end (e.g. -t during a fixed-count drain) can only shorten the drain.
            self._deadline = min(self._deadline, began + limit_s)
        if self.running:
            self._done.wait()
            assert self.outcome is not None
            return self.outcome
        self.running = True
        last_change = began
        count, checked = self.received(), 0.0
        while True:
            now = self._clock()
            if now - checked >= AUDIT_EVERY_S:
                checked = now
                self.refresh()
                if (arrived := self.complete()) is not None:
                    outcome = DrainOutcome(True, now - began, arrived)
                    break
            latest = self.received()
            if latest != count:
                count, last_change = latest, now
            elif now - last_change >= idle_s:
                outcome = DrainOutcome(True, now - began, f"no delivery for {idle_s:g} s")
                break
            if self.deserted():
                outcome = DrainOutcome(False, now - began, "no worker left to receive")
                break
            if self.cut or now >= self._deadline:
                outcome = DrainOutcome(False, now - began, "cut short: messages may still be queued")
                break
            self._sleep(POLL_S)
        self.outcome = outcome
        self.running = False
        self._done.set()
        if not outcome.settled:
            logger.warning("mqusers: drain %s after %.1f s", outcome.reason, outcome.seconds)
        return outcome
