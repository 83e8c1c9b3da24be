"""The producer's pacing and the conductor's arithmetic, on fake clocks: no broker, no sleeping."""

import pytest

from mqusers.coordination.conductor import Conductor
from mqusers.users.pacing import RESYNC_S, FixedRate, NoBlock, SharedSchedule


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_fixed_rate_keeps_its_schedule_and_resyncs_after_a_stall() -> None:
    clock = Clock()
    pacer = FixedRate(10, clock)
    assert pacer.delay() == pytest.approx(0.1)  # asked after the first message: the second is 0.1 s later
    clock.now += 0.1
    assert pacer.delay() == pytest.approx(0.1)
    clock.now += 0.15  # the send took longer: the next one is only 0.05 s away, not 0.1 s
    assert pacer.delay() == pytest.approx(0.05)
    clock.now += 5.0  # a stall: no burst of 50 catch-up messages, at most RESYNC_S worth
    assert pacer.delay() == 0.0
    late = 0
    while pacer.delay() == 0.0:
        late += 1
    assert late == pytest.approx(RESYNC_S * 10, abs=1)
    assert FixedRate(0, clock).delay() == 0.0  # unpaced


def test_the_shared_schedule_hands_out_global_slots_in_blocks() -> None:
    conductor = Conductor(target_consumers=0, rate=4, total=5, block_size=2)
    draws: list[bool] = []

    def draw(first: bool) -> tuple[int, int]:
        draws.append(first)
        return conductor.allocate(first)

    schedule = SharedSchedule(draw)
    schedule.start(t0=10.0, rate=4)
    slots = [schedule.next() for _ in range(6)]
    assert [(s.index, s.due) for s in slots if s] == [(0, 10.0), (1, 10.25), (2, 10.5), (3, 10.75), (4, 11.0)]
    assert slots[5] is None and schedule.finished and schedule.next() is None
    assert draws == [True, False, False, False]  # one first draw, then blocks of 2, 2, 1 and the final 0
    assert conductor.all_sent


def test_an_unpaced_schedule_has_nothing_due_and_a_missing_block_is_an_error() -> None:
    schedule = SharedSchedule(lambda first: None)
    schedule.start(t0=0.0, rate=0)
    with pytest.raises(NoBlock):
        schedule.next()
    unpaced = SharedSchedule(lambda first: (0, 3))
    unpaced.start(t0=0.0, rate=0)
    slot = unpaced.next()
    assert slot is not None and slot.due is None


def test_the_barrier_opens_once_every_fixed_consumer_joined() -> None:
    conductor = Conductor(target_consumers=3, rate=0, total=0, block_size=1000)
    assert conductor.join() is None and conductor.join() is None
    plan = conductor.join()
    assert plan is not None and conductor.join() is plan  # later joins see the same plan


def test_clock_offset_and_error_bound_from_the_fastest_ping() -> None:
    conductor = Conductor(target_consumers=0, rate=0, total=0, block_size=1)
    # Worker clock 5 ms ahead; a slow ping (40 ms round trip, asymmetric) and a fast one (2 ms).
    conductor.record_pong("w", t1=0, t2=5_000_000 + 30_000_000, t3=5_000_000 + 30_000_000, t4=40_000_000, tag="p1")
    conductor.record_pong("w", t1=100_000_000, t2=106_000_000, t3=106_000_000, t4=102_000_000, tag="p1")
    estimate = conductor.clocks["w"]
    assert estimate.offset_ns == 5_000_000 and estimate.rtt_ns == 2_000_000
    assert estimate.error_ns == 1_000_001  # half the round trip: the true offset lies within it
    assert conductor.offsets_by_tag() == {}  # not used before every ping of that worker came back
    conductor.settled.add("w")
    assert conductor.offsets_by_tag() == {"p1": 5_000_000}


def test_an_offset_within_its_error_bound_is_not_corrected_with() -> None:
    conductor = Conductor(target_consumers=0, rate=0, total=0, block_size=1)
    # One host, one clock: a 0.3 ms one-way asymmetry in a 0.4 ms round trip reads as +0.1 ms.
    conductor.record_pong("same", t1=0, t2=300_000, t3=300_000, t4=400_000, tag="p1")
    conductor.record_pong("skewed", t1=0, t2=250_200_000, t3=250_200_000, t4=400_000, tag="p2")
    conductor.settled.update({"same", "skewed"})
    assert conductor.clocks["same"].offset_ns == 100_000 and conductor.clocks["same"].error_ns == 200_001
    assert conductor.offsets_by_tag() == {"p1": 0, "p2": 250_000_000}
