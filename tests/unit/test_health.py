"""The generator's health through its public interface: a fake clock, planted CPU figures, no sleeping.

The loop-lag probe on a fake clock and sleep; the monitor (:class:`mqusers.run.health.Health`) fed
by a fake probe, a second passing whenever the test moves the fake clock; blocked sends sampled on
those seconds.
"""

from __future__ import annotations

import logging
from typing import Any

import gevent
import pytest
from gevent.event import Event

from mqusers.run.blocked import BLOCKED_S
from mqusers.run.cpu import CpuInterval
from mqusers.run.looplag import IntervalLag, LoopLag
from mqusers.run.verdicts import LATE_SECONDS, overall
from tests.unit.fakehealth import WALL_START, FakeHealth

SATURATED = CpuInterval(98.0, 5.0, 60.0, 0.0)
CONTENDED = CpuInterval(12.0, 200.0, 97.0, 3.0)


def test_the_probe_hands_each_wake_ups_overshoot_to_every_watcher() -> None:
    now = [0.0]

    def late_sleep(seconds: float) -> None:  # every wake-up 4 ms late on the probe's clock
        now[0] += seconds + 0.004
        gevent.sleep(0)

    probe = LoopLag(0.05, clock=lambda: now[0], sleep=late_sleep)
    heard: list[float] = []
    three = Event()

    def watcher(lag_ms: float) -> None:
        heard.append(lag_ms)
        if len(heard) == 3:
            three.set()

    interval = IntervalLag()
    probe.watch(watcher)
    probe.watch(interval)
    assert three.wait(5)
    probe.unwatch(watcher)
    probe.unwatch(interval)
    assert heard[:3] == pytest.approx([4.0] * 3)
    lag_max, lag_mean = interval.take()
    assert lag_max == pytest.approx(4.0) and lag_mean == pytest.approx(4.0)
    assert interval.take() == (0.0, 0.0)  # each interval afresh


def test_a_second_is_judged_once_the_clock_passed_it_from_its_worst_lag() -> None:
    said: list[tuple[str, int, float, float]] = []
    fake = FakeHealth(on_second=lambda *second: said.append(second))
    fake.time.now = 0.5
    fake.probe.feed(80.0)  # half a second in: heard, not judged
    assert fake.health.report()["seconds"] == 0 and said == []
    fake.second(SATURATED, lag_ms=2.0)  # the second ends at 1.5 s: its worst sample was 80 ms
    report = fake.health.report()
    assert (report["seconds"], report["saturated_s"], report["contended_s"]) == (1, 1, 0)
    assert report["cpu_percent_max"] == 98.0 and 79.0 < report["loop_lag_ms_max"] < 81.0
    assert said == [("local", int(WALL_START + 1.5), 98.0, 80.0)]
    fake.second(CpuInterval(20.0, 0.0, 30.0, 0.0), lag_ms=1.0)  # a fresh second: its own worst lag
    assert said[-1] == ("local", int(WALL_START + 2.5), 20.0, 1.0)
    assert fake.health.report()["saturated_s"] == 1 and fake.health.verdict() == "ok"


def test_a_late_process_is_warned_about_once(caplog: pytest.LogCaptureFixture) -> None:
    fake = FakeHealth()
    with caplog.at_level(logging.WARNING, logger="mqusers.run.health"):
        for _ in range(LATE_SECONDS + 2):
            fake.second(CONTENDED, lag_ms=60.0)
    assert fake.health.verdict() == "contended"
    warned = [r.getMessage() for r in caplog.records if r.name == "mqusers.run.health"]
    assert len(warned) == 1 and "the machine is contended" in warned[0]


def test_start_begins_afresh_and_stop_stops_listening() -> None:
    fake = FakeHealth()
    for _ in range(LATE_SECONDS):
        fake.second(SATURATED, lag_ms=120.0)
    assert fake.health.verdict() == "saturated"
    fake.health.stop()
    assert fake.probe.watchers == []
    fake.health.start()
    report = fake.health.report()
    assert (report["seconds"], report["verdict"], report["loop_lag_ms_max"], report["late_cpu_percent_max"]) == (
        0, "ok", 0.0, None)  # fmt: skip
    assert fake.cpu.started == 2 and fake.probe.watchers == [fake.health.on_lag]


class Sender:
    def __init__(self) -> None:
        self.progress = (False, 0)
        self.unanswered: bool | None = False

    def send_progress(self) -> tuple[bool, int]:
        return self.progress

    def peer_unanswered(self) -> bool | None:
        return self.unanswered


def test_a_send_that_does_not_move_is_one_blocked_episode() -> None:
    fired: list[dict[str, Any]] = []
    moving, stuck = Sender(), Sender()
    fake = FakeHealth(producers=lambda: [("/queue/a", moving), ("/queue/b", stuck)], fire=lambda **e: fired.append(e))
    for sends in (1, 2, 3, 4):  # seconds 1-4: one producer moves, the other's send 1 never does
        moving.progress, stuck.progress = (True, sends), (True, 1)
        fake.second()
    blocked = fake.health.report()["blocked"]
    assert list(blocked) == ["/queue/b"]
    assert blocked["/queue/b"] == {"episodes": 1, "longest_s": 3 * BLOCKED_S, "blocked_now": 1,
                                   "until_s": WALL_START + 4}  # fmt: skip
    assert [e["name"] for e in fired] == ["blocked /queue/b"] and "flow control" in str(fired[0]["exception"])
    assert fired[0]["response_time"] == BLOCKED_S * 1000.0  # fired when it first reached the bound
    stuck.progress = (False, 1)
    fake.second()
    released = fake.health.report()["blocked"]["/queue/b"]
    assert released["blocked_now"] == 0 and released["until_s"] == WALL_START + 4  # when last seen blocked


def test_a_send_nothing_acknowledges_is_stalled_not_blocked_by_the_broker() -> None:
    fired: list[dict[str, Any]] = []
    cut, unknown = Sender(), Sender()
    cut.unanswered, unknown.unanswered = True, None  # a partition; a kernel that does not say
    fake = FakeHealth(producers=lambda: [("/queue/a", cut), ("/queue/b", unknown)], fire=lambda **e: fired.append(e))
    for _ in range(3):
        cut.progress, unknown.progress = (True, 1), (True, 1)
        fake.second()
    report = fake.health.report()
    assert list(report["stalled"]) == ["/queue/a"] and report["stalled"]["/queue/a"]["episodes"] == 1
    assert list(report["blocked"]) == ["/queue/b"]  # unknown: the broker's, as before
    assert sorted(e["name"] for e in fired) == ["blocked /queue/b", "stalled /queue/a"]
    stalled = next(e for e in fired if e["name"] == "stalled /queue/a")
    assert "partition" in str(stalled["exception"]) and "flow control" not in str(stalled["exception"])
    assert overall({"local": report})["verdict"] == "broker-slow"  # /queue/b's block only
    assert overall({"local": {**report, "blocked": {}}})["verdict"] == "ok"  # a partition is not the broker's


def test_a_blocked_producers_disconnect_blocking_too_is_the_same_episode() -> None:
    stuck = Sender()
    fake = FakeHealth(producers=lambda: [("/queue/b", stuck)])
    for progress in ((True, 7), (True, 7), (True, 8), (True, 8)):  # send 8: its DISCONNECT, after send 7
        stuck.progress = progress
        fake.second()
    assert fake.health.report()["blocked"]["/queue/b"]["episodes"] == 1
    assert fake.health.report()["blocked"]["/queue/b"]["longest_s"] == 3 * BLOCKED_S
    for progress in ((True, 60), (True, 60)):  # released, then blocked anew
        stuck.progress = progress
        fake.second()
    assert fake.health.report()["blocked"]["/queue/b"]["episodes"] == 2
