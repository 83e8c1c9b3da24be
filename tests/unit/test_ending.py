"""The drain's three ways to end and the shared schedule's end: no broker, on a fake clock."""

from collections.abc import Callable
from typing import Any

import gevent
import pytest

from mqusers.coordination.conductor import Conductor
from mqusers.run.ending import (
    ALL_ARRIVED,
    AUDIT_EVERY_S,
    NONE_CONFIRMED,
    NOTHING_EXPECTED,
    NOTHING_SENT,
    POLL_S,
    Drain,
    arrival,
)
from tests.unit.fake_clock import Clock


def drain(clock: Clock, received: Callable[[], int], complete: Callable[[], str | None], **kw: Any) -> Drain:
    return Drain(received, complete, clock=clock, sleep=clock.sleep, **kw)


def test_the_drain_ends_when_everything_arrived() -> None:
    clock = Clock()

    def arrived() -> int:
        return min(5, int((clock.now - 1000.0) / 0.05))  # one every 50 ms, five in all

    outcome = drain(clock, arrived, lambda: ALL_ARRIVED if arrived() == 5 else None).run(idle_s=10, limit_s=None)
    assert outcome.settled and outcome.reason == "every expected message arrived"
    assert 0.25 <= outcome.seconds <= 0.25 + AUDIT_EVERY_S + POLL_S  # the first audit after the fifth


def figures(
    sent: int = 0, subscriptions: int = 0, expected: int = 0, missing: int = 0, confirmed: bool = True
) -> dict[str, Any]:
    return {"sent": sent, "subscriptions": subscriptions, "expected": expected, "unreceived": missing,
            "unconfirmed": 0, "in_flight": 0,
            "by_subscription": [{"sessions": int(confirmed)} for _ in range(subscriptions)]}  # fmt: skip


def test_the_drain_says_nothing_arrived_when_nothing_was_sent_or_expected() -> None:
    # The audit's figures per destination: a run that sent nothing, a fill nobody reads, a delivery still missing.
    assert arrival([]) == arrival([figures(subscriptions=2)]) == NOTHING_SENT
    assert arrival([figures(sent=50)]) == NOTHING_EXPECTED
    assert arrival([figures(sent=50, subscriptions=2, expected=100)]) == ALL_ARRIVED
    assert arrival([figures(sent=50, subscriptions=2, expected=100, missing=1)]) is None
    assert arrival([figures(sent=50), figures(subscriptions=1, missing=1)]) is None


def test_the_drain_never_says_all_arrived_when_no_subscription_was_confirmed() -> None:
    # Every SUBSCRIBE unanswered: the subscriptions expect nothing, which proves nothing.
    unanswered = figures(sent=50, subscriptions=2, confirmed=False)
    assert arrival([unanswered]) == arrival([unanswered, figures(sent=5)]) == NONE_CONFIRMED
    assert arrival([figures(subscriptions=1, confirmed=False)]) == NONE_CONFIRMED  # whether or not any was sent
    assert arrival([unanswered, figures(sent=5, subscriptions=1, expected=5)]) == ALL_ARRIVED


def test_the_drain_ends_after_its_idle_timeout_and_that_settles_it() -> None:
    outcome = drain(Clock(), lambda: 7, lambda: None).run(idle_s=0.3, limit_s=None)
    assert outcome.settled and outcome.reason == "no delivery for 0.3 s"
    assert outcome.seconds == pytest.approx(0.3, abs=POLL_S)  # the first poll at or after 0.3 s


def test_a_drain_still_receiving_is_cut_by_its_limit_and_settles_nothing() -> None:
    ticks = iter(range(10**6))
    outcome = drain(Clock(), lambda: next(ticks), lambda: None).run(idle_s=0.2, limit_s=0.5)
    assert not outcome.settled and "cut short" in outcome.reason
    assert outcome.seconds == pytest.approx(0.5, abs=POLL_S)


def test_a_later_end_shortens_a_running_drain_and_shares_its_outcome() -> None:
    ticks, clock = iter(range(10**6)), Clock()
    running = drain(clock, lambda: next(ticks), lambda: None)
    first = gevent.spawn(running.run, 0.2, None)  # a fixed-count end: no limit of its own
    gevent.sleep(0)  # runs the first drain up to its first poll
    assert running.running
    second = running.run(0.2, 0.3)  # then -t: at most 0.3 s more
    assert first.get(timeout=10) is second and not second.settled
    assert second.seconds <= 0.3 + 2 * POLL_S  # from the first drain's start: shortened, not endless


def test_the_shared_schedule_is_done_when_every_drawing_producer_was_told_so() -> None:
    conductor = Conductor(target_consumers=0, rate=0, total=25, block_size=10)
    assert conductor.allocate(first=True) == (0, 10)
    assert conductor.allocate(first=True) == (10, 10)
    assert conductor.allocate() == (20, 5)
    assert conductor.allocate() == (25, 0) and not conductor.all_sent  # the other one still sends
    assert conductor.allocate() == (25, 0) and conductor.all_sent


def test_a_drain_with_no_consumer_left_ends_unsettled() -> None:
    ticks = iter(range(10**6))
    outcome = drain(Clock(), lambda: next(ticks), lambda: None, deserted=lambda: True).run(idle_s=5, limit_s=None)
    assert not outcome.settled and outcome.reason == "no worker left to receive" and outcome.seconds == 0
