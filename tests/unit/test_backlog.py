"""A backlog run's phases: the switch on count or time, the backlog's deliveries apart from new ones, time to empty."""

from __future__ import annotations

import time

from mqusers.measure.backlogfigures import BacklogFigures
from mqusers.report.backlogreport import backlog_sentence, phase_table
from mqusers.run.backlog import BY_COUNT, BY_TIME, Phases, watch
from mqusers.run.blocked import BlockedSends
from mqusers.stomp.receiver import Receiver
from tests.unit.fake_client import connected, environment, message

S = 1_000_000_000


def test_the_backlog_empties_when_as_many_of_its_messages_arrived_as_were_sent_before_the_switch() -> None:
    figures = BacklogFigures(messages=3, started_ns=10 * S)
    assert figures.building and not figures.delivered(11 * S, 11 * S)  # before the switch: no backlog yet
    figures.switch(3, 12 * S, BY_COUNT)
    figures.switch(9, 13 * S, BY_TIME)  # a second switch changes nothing
    assert (figures.switch_ns, figures.at_switch, figures.reason) == (12 * S, 3, BY_COUNT)
    assert figures.delivered(11 * S, 12 * S + 10) and figures.delivered(11 * S, 12 * S + 20)
    assert not figures.delivered(12 * S, 13 * S)  # sent at the switch: new
    assert figures.emptied_ns == 0
    assert figures.delivered(11 * S, 14 * S + 5)
    document = figures.document()
    assert document["time_to_empty_s"] == 2.000000005 and document["build_s"] == 2.0
    assert document["drain_per_second"] == [2, 0, 1] and document["peak_drain_rate_msgs"] == 2
    assert (document["drained"], document["new"]) == (3, 2)  # one read before the switch counts as new
    assert round(document["drain_rate_msgs"], 3) == 1.5


def test_an_empty_backlog_is_empty_at_the_switch_and_a_backlog_not_drained_has_no_time_to_empty() -> None:
    empty = BacklogFigures()
    empty.switch(0, 5 * S, BY_TIME)
    assert empty.document()["time_to_empty_s"] == 0.0
    kept = BacklogFigures()
    kept.switch(2, 5 * S, BY_TIME)
    kept.delivered(4 * S, 6 * S)
    assert kept.document()["time_to_empty_s"] is None and kept.document()["drain_rate_msgs"] is None


def test_the_gate_opens_on_the_count_or_the_time_whichever_first() -> None:
    now = [0]
    sent = iter([0, 4, 10, 11])

    def sleep(seconds: float) -> None:
        now[0] += int(seconds * S)

    by_count = Phases(10, 60, clock=lambda: now[0])
    watch(by_count, lambda: next(sent), sleep)
    assert by_count.gate.is_set() and (by_count.figures.at_switch, by_count.figures.reason) == (10, BY_COUNT)
    now[0] = 0
    by_time = Phases(10, 0.05, clock=lambda: now[0])
    watch(by_time, lambda: 3, sleep)
    assert (by_time.figures.at_switch, by_time.figures.reason) == (3, BY_TIME)
    assert by_time.figures.switch_ns >= 0.05 * S


def test_the_drain_waits_for_every_consumer_held_at_the_gate_to_subscribe() -> None:
    marks: list[tuple[str, int]] = []
    phases = Phases(1, 0, clock=lambda: 7, announce=lambda text, ts_ns: marks.append((text, ts_ns)))
    phases.joining += 1  # a consumer waiting (hold() blocks until the switch)
    assert not phases.ready()
    phases.switch(1, BY_COUNT)
    phases.switch(2, BY_TIME)  # once
    assert marks == [("backlog built: 1 messages (messages sent); the consumers drain it", 7)]
    assert not phases.ready()
    phases.joined()
    assert phases.ready()


def test_the_receiver_times_the_backlogs_messages_apart_from_new_ones() -> None:
    env = environment()
    client, _ = connected(env)
    figures = BacklogFigures()
    receiver = Receiver(client, "/queue/a", "auto", run_id="run", backlog=figures)
    now = time.time_ns()
    figures.switch(1, now - S, BY_COUNT)
    receiver(*message(b"old", now - 3 * S))
    receiver(*message(b"new", now - S // 2))
    client.recorder.flush()
    entries = env.stats.entries
    assert entries[("receive /queue/a", "STOMP")].num_requests == 2
    old, new = entries[("receive-backlog /queue/a", "STOMP")], entries[("receive-new /queue/a", "STOMP")]
    assert (old.num_requests, new.num_requests) == (1, 1)
    assert old.max_response_time >= 3000 > new.max_response_time >= 500
    assert figures.emptied_ns and (figures.drained, figures.fresh) == (1, 1)


def test_the_phase_table_has_a_row_per_phase_and_the_sentence_the_drain_per_second() -> None:
    figures = BacklogFigures(seconds=3, started_ns=0)
    figures.switch(2, 3 * S, BY_TIME)
    figures.delivered(1, 3 * S + 1)
    figures.delivered(1, 4 * S + 1)
    operations = [{"name": "receive-backlog /queue/a", "count": 2, "latency_ms": {"p50": 1.0, "p99": 2.5, "max": 3}}]
    table = phase_table(figures.document(), operations)
    assert [row[0] for row in table[1:]] == ["build", "drain (backlog)", "drain (new)"]
    assert table[1][1:3] == ["3.000", "2"] and table[2][1:5] == ["1.000", "2", "2", "1.0 / 2.5 / 3.0"]
    assert backlog_sentence(figures.document()) == (
        "backlog: 2 messages at the switch (time passed), emptied in 1.000 s; drained per second: 1, 1 (peak 1/s)"
    )


def test_blocked_sends_are_counted_by_the_phase_they_began_in_and_a_paced_drain_says_its_rate() -> None:
    blocked = BlockedSends(lambda: [("/queue/a", stuck)])
    stuck = _Stuck()
    figures = BacklogFigures(messages=2, started_ns=0, drain_rate=500)
    blocked.on_episode = figures.blocked_send
    for second in (1, 2, 3):  # one episode, begun at 1 s: while building
        blocked.sample(float(second), float(second))
    figures.switch(2, 4 * S, BY_COUNT)
    stuck.progress = (True, 5)  # moved on, then stuck again from 5 s: after the switch
    for second in (5, 6, 7):
        blocked.sample(float(second), float(second))
    document = figures.document()
    assert document["blocked_sends"] == {"build": 1, "drain": 1} and document["drain_rate_asked"] == 500
    assert backlog_sentence(document) == (
        "backlog: 2 messages at the switch (messages sent), emptied in - s, paced at 500 msg/s; drained per second: "
        "- (peak 0/s); sends blocked by the broker: 1 while building, 1 while draining"
    )


class _Stuck:
    progress = (True, 1)

    def send_progress(self) -> tuple[bool, int]:
        return self.progress

    def peer_unanswered(self) -> bool | None:
        return False
