"""The drain's three ways to end, the shared schedule's end, and the generator's judgement: no broker."""

import time
from typing import Any

import gevent

from mqusers.coordination.conductor import Conductor
from mqusers.run.ending import ALL_ARRIVED, NONE_CONFIRMED, NOTHING_EXPECTED, NOTHING_SENT, Drain, arrival
from mqusers.run.health import BLOCKED_S, Health


def test_the_drain_ends_when_everything_arrived() -> None:
    arrived = {"n": 0}

    def deliver() -> None:
        for _ in range(5):
            gevent.sleep(0.05)
            arrived["n"] += 1

    gevent.spawn(deliver)
    drain = Drain(lambda: arrived["n"], lambda: ALL_ARRIVED if arrived["n"] == 5 else None)
    outcome = drain.run(idle_s=10, limit_s=None)
    assert outcome.settled and outcome.reason == "every expected message arrived" and outcome.seconds < 2


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
    outcome = Drain(lambda: 7, lambda: None).run(idle_s=0.3, limit_s=None)
    assert outcome.settled and outcome.reason == "no delivery for 0.3 s" and 0.3 <= outcome.seconds < 1


def test_a_drain_still_receiving_is_cut_by_its_limit_and_settles_nothing() -> None:
    ticks = iter(range(10**6))
    outcome = Drain(lambda: next(ticks), lambda: None).run(idle_s=0.2, limit_s=0.5)
    assert not outcome.settled and "cut short" in outcome.reason and 0.5 <= outcome.seconds < 1.5


def test_a_later_end_shortens_a_running_drain_and_shares_its_outcome() -> None:
    ticks = iter(range(10**6))
    drain = Drain(lambda: next(ticks), lambda: None)
    first = gevent.spawn(drain.run, 0.2, None)  # a fixed-count end: no limit of its own
    gevent.idle()  # runs the first drain up to its first poll, no guessed delay
    assert drain.running
    second = drain.run(0.2, 0.3)  # then -t: at most 0.3 s more
    assert first.get(timeout=2) is second and not second.settled


def test_the_shared_schedule_is_done_when_every_drawing_producer_was_told_so() -> None:
    conductor = Conductor(target_consumers=0, rate=0, total=25, block_size=10)
    assert conductor.allocate(first=True) == (0, 10)
    assert conductor.allocate(first=True) == (10, 10)
    assert conductor.allocate() == (20, 5)
    assert conductor.allocate() == (25, 0) and not conductor.all_sent  # the other one still sends
    assert conductor.allocate() == (25, 0) and conductor.all_sent


class Sender:
    def __init__(self) -> None:
        self.progress = (False, 0)

    def send_progress(self) -> tuple[bool, int]:
        return self.progress


def test_a_send_that_does_not_move_is_one_blocked_episode() -> None:
    fired: list[dict] = []  # type: ignore[type-arg]
    moving, stuck = Sender(), Sender()
    health = Health(
        "local", producers=lambda: [("/queue/a", moving), ("/queue/b", stuck)], fire=lambda **e: fired.append(e)
    )
    for t, sends in ((0.0, 1), (BLOCKED_S / 2, 2), (BLOCKED_S * 2, 3), (BLOCKED_S * 3, 4)):
        moving.progress, stuck.progress = (True, sends), (True, 1)
        health._sample_blocked(t)
    assert list(health.blocked) == ["/queue/b"]
    assert health.blocked["/queue/b"].episodes == 1 and health.blocked["/queue/b"].longest_s == BLOCKED_S * 3
    assert [e["name"] for e in fired] == ["blocked /queue/b"] and "flow control" in str(fired[0]["exception"])
    until = health.blocked["/queue/b"].until_s
    assert abs(until - time.time()) < 5  # when it was last seen blocked, on the wall clock
    stuck.progress = (False, 1)
    health._sample_blocked(BLOCKED_S * 4)
    assert health.blocked["/queue/b"].now == 0 and health.blocked["/queue/b"].until_s == until


def test_a_blocked_producers_disconnect_blocking_too_is_the_same_episode() -> None:
    stuck = Sender()
    health = Health("local", producers=lambda: [("/queue/b", stuck)])
    for t, progress in (
        (0.0, (True, 7)),
        (BLOCKED_S * 2, (True, 7)),
        (BLOCKED_S * 3, (True, 8)),
        (BLOCKED_S * 4, (True, 8)),
    ):
        stuck.progress = progress  # send 8: its DISCONNECT, written after send 7 was given up
        health._sample_blocked(t)
    assert health.blocked["/queue/b"].episodes == 1 and health.blocked["/queue/b"].longest_s == BLOCKED_S * 4
    for t, progress in ((BLOCKED_S * 5, (True, 60)), (BLOCKED_S * 7, (True, 60))):  # released, then blocked anew
        stuck.progress = progress
        health._sample_blocked(t)
    assert health.blocked["/queue/b"].episodes == 2


def test_a_drain_with_no_consumer_left_ends_unsettled() -> None:
    ticks = iter(range(10**6))
    outcome = Drain(lambda: next(ticks), lambda: None, deserted=lambda: True).run(idle_s=5, limit_s=None)
    assert not outcome.settled and outcome.reason == "no worker left to receive" and outcome.seconds < 1
