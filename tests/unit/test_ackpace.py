"""A paced drain: ACKs held until their turn on one schedule for every consumer, over an injected clock."""

from __future__ import annotations

import time
from types import SimpleNamespace

import gevent
import pytest

from mqusers.options.parsing import OptionError
from mqusers.options.settings import read_settings
from mqusers.stomp.ackpace import AckPace
from mqusers.stomp.receiver import Receiver
from tests.unit.fake_client import connected, deliver, environment, message
from tests.unit.fake_clock import Clock


class _Acker:
    def __init__(self) -> None:
        self.generation = 1
        self.written: list[list[bytes]] = []

    def write_acks(self, frames: list[bytes]) -> None:
        self.written.append(frames)


def test_acks_are_released_at_the_rate_in_all_whoever_holds_them() -> None:
    clock = Clock()
    pace = AckPace(100, clock=clock, sleep=clock.sleep)
    a, b = _Acker(), _Acker()
    for n in range(30):
        pace.hold(a if n % 2 else b, b"ACK %d" % n)
    assert pace.due() == 1  # the first at once
    pace.release(1)
    assert pace.due() == 0
    clock.now += 0.095  # 9.5 more intervals: 9 due, the 10th not yet
    assert pace.due() == 9
    pace.release(9)
    assert [f for w in b.written for f in w] == [b"ACK %d" % n for n in range(0, 10, 2)]
    assert [f for w in a.written for f in w] == [b"ACK %d" % n for n in range(1, 10, 2)]
    assert len(b.written) == 2  # one write per holder per release


def test_a_quiet_spell_is_not_made_up_in_a_burst_and_void_acks_are_dropped() -> None:
    clock = Clock()
    pace = AckPace(10, clock=clock, sleep=clock.sleep)
    acker = _Acker()
    pace.hold(acker, b"1")
    pace.release(pace.due())
    clock.now += 60  # nothing held for a minute
    for frame in (b"2", b"3", b"4"):
        pace.hold(acker, frame)
    assert pace.due() == 1  # not 3: the schedule restarts now
    pace.release(1)
    acker.generation = 2  # reconnected: the rest are void
    clock.now += 1
    pace.release(pace.due())
    assert acker.written == [[b"1"], [b"2"]] and pace.released == 4


def test_the_greenlet_releases_on_time_and_a_stopping_holder_gets_its_acks_at_once() -> None:
    clock = Clock()
    pace = AckPace(50, clock=clock, sleep=clock.sleep)
    acker, leaving = _Acker(), _Acker()
    start = clock.now
    for n in range(10):
        pace.hold(acker, b"%d" % n)
    pace.hold(leaving, b"L")
    pace.release_all(leaving)
    assert leaving.written == [[b"L"]]
    deadline = time.monotonic() + 5
    while pace.released < 10 and time.monotonic() < deadline:
        gevent.sleep(0)
    pace.stop()
    assert [f for w in acker.written for f in w] == [b"%d" % n for n in range(10)]
    assert clock.now - start == pytest.approx(9 / 50)  # the 10th due 9 intervals after the first


def test_a_paced_receiver_holds_each_ack_until_the_pace_releases_it() -> None:
    clock = Clock()
    pace = AckPace(1000, clock=clock, sleep=clock.sleep)
    client, connection = connected(environment())
    receiver = Receiver(client, "/queue/a", "client-individual", run_id="run", pace=pace)
    client.route("s", receiver)
    deliver(connection, *(message(b"m", time.time_ns(), ack=b"a%d" % n)[:2] for n in range(3)))
    assert receiver.received == 3
    assert not [f for f in connection.sent if f.startswith(b"ACK")]  # not at the read's end
    pace.release(3)
    assert [f for f in connection.sent if f.startswith(b"ACK")] == [
        b"ACK\nid:a0\n\n\x00ACK\nid:a1\n\n\x00ACK\nid:a2\n\n\x00"
    ]


def test_a_drain_rate_needs_a_backlog_run_and_acks() -> None:
    base = {"mq_host": "stomp://127.0.0.1:61613", "mq_backlog_drain_rate": "500"}
    with pytest.raises(OptionError, match=r"^--mq-backlog-drain-rate paces a backlog.s drain: give"):
        read_settings(SimpleNamespace(**base), None)
    with pytest.raises(OptionError, match="holding their ACKs: use --mq-ack client or client-individual"):
        read_settings(SimpleNamespace(**base, mq_backlog_seconds="2", mq_ack="auto"), None)
    assert read_settings(SimpleNamespace(**base, mq_backlog_seconds="2"), None).backlog_drain_rate == 500
