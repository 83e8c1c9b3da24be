"""Priority: each message's level from its seq, the inversions in a consumer's delivery order, the report's rows."""

from __future__ import annotations

from locust.argument_parser import get_parser

import random
import time

import pytest

from mqusers.measure.backlogfigures import BacklogFigures
from mqusers.measure.priority import DeliveryOrder, PriorityFigures, inversions
from mqusers.options.parsing import OptionError
from mqusers.options.priorities import level_of, parse_priorities, value_of
from mqusers.options.settings import read_settings
from mqusers.report.backlogreport import priority_sentence, priority_table
from mqusers.report.htmlrun import _backlog_table
from mqusers.run.backlog import BY_COUNT
from mqusers.stomp.dialects import ACTIVEMQ, ARTEMIS, RABBITMQ
from mqusers.stomp.receiver import Receiver
from tests.unit.fake_client import connected, environment, message

S = 1_000_000_000


def brute_force(deliveries: list[tuple[int, bool]]) -> list[int]:
    """Per level: deliveries with any later delivery of a higher level that was the backlog's."""
    counts = [0] * 10
    for i, (level, _) in enumerate(deliveries):
        if any(later > level and backlog for later, backlog in deliveries[i + 1 :]):
            counts[level] += 1
    return counts


def recorded(deliveries: list[tuple[int, bool]], levels: int = 10) -> DeliveryOrder:
    order = DeliveryOrder(levels)
    for level, backlog in deliveries:
        order.record(level, backlog)
    return order


@pytest.mark.parametrize("seed", range(40))
def test_the_inversions_agree_with_a_brute_force_count(seed: int) -> None:
    rng = random.Random(seed)
    levels = rng.randint(2, 10)
    deliveries = [(rng.randrange(levels), rng.random() < 0.7) for _ in range(rng.randint(0, 300))]
    if seed % 4 == 0:  # mostly in priority order, a few swapped: the counts are small, not all-or-nothing
        deliveries.sort(key=lambda d: -d[0])
        for _ in range(3):
            if len(deliveries) > 1:
                i = rng.randrange(len(deliveries) - 1)
                deliveries[i], deliveries[i + 1] = deliveries[i + 1], deliveries[i]
    assert inversions(recorded(deliveries, levels).order) == brute_force(deliveries)


def test_a_fifo_drain_of_levels_seq_mod_k_inverts_every_message_below_a_later_higher_one() -> None:
    deliveries = [(level_of(seq, 4), True) for seq in range(1, 2001)]
    # Levels 1, 2, 3, 0, 1, ...: level 3 never; level 0 all but the last message (seq 2000).
    assert inversions(recorded(deliveries, 4).order)[:4] == [499, 500, 500, 0]
    # In priority order nothing is inverted; a new (non-backlog) higher message later inverts nothing.
    assert sum(inversions(recorded(sorted(deliveries, key=lambda d: -d[0]), 4).order)) == 0
    assert sum(inversions(recorded([(0, True), (3, False)], 4).order)) == 0


def test_a_consumers_order_is_kept_up_to_its_cap_and_the_rest_counted() -> None:
    order = DeliveryOrder(2, cap=3)
    for level in (0, 1, 1, 0, 1):
        order.record(level, True)
    assert (bytes(order.order), order.beyond_cap) == (b"\x80\x81\x81", 2)


@pytest.mark.parametrize(("levels", "values"), [(2, [0, 9]), (3, [0, 4, 9]), (4, [0, 3, 6, 9]), (10, list(range(10)))])
def test_the_levels_spread_over_priorities_0_to_9(levels: int, values: list[int]) -> None:
    assert [value_of(level, levels) for level in range(levels)] == values
    assert parse_priorities(str(levels)) == levels


@pytest.mark.parametrize(
    ("value", "words"), [("1", "1 level is no priority"), ("11", "at most 10"), ("x", "not a whole number")]
)
def test_a_bad_number_of_priorities_is_one_line(value: str, words: str) -> None:
    with pytest.raises(OptionError, match=words):
        parse_priorities(value, "--mq-priorities")


def test_priorities_need_a_backlog_run() -> None:
    with pytest.raises(OptionError, match="--mq-priorities is measured on a backlog drained"):
        read_settings(get_parser().parse_args(["-f", "x.py", "--mq-priorities", "4"]), "stomp://h:1")
    options = get_parser().parse_args(["-f", "x.py", "--mq-priorities", "4", "--mq-backlog-messages", "100"])
    assert read_settings(options, "stomp://h:1").priorities == 4


def test_only_rabbitmq_declares_a_priority_queue_and_only_for_queues() -> None:
    assert RABBITMQ.priority_queue_headers("/queue/a") == {"x-max-priority": "9"}
    assert RABBITMQ.priority_queue_headers("/topic/a") == {}
    assert ACTIVEMQ.priority_queue_headers("/queue/a") == ARTEMIS.priority_queue_headers("/queue/a") == {}


def test_the_receiver_keeps_the_order_and_times_each_priority_apart() -> None:
    env = environment()
    client, _ = connected(env)
    figures = BacklogFigures()
    receiver = Receiver(client, "/queue/a", "auto", run_id="run", backlog=figures, priorities=4)
    now = time.time_ns()
    figures.switch(3, now - S, BY_COUNT)
    for seq, sent_ns in ((3, now - 3 * S), (1, now - 2 * S), (2, now - 2 * S), (6, now - S // 2)):
        headers, body, received_ns = message(b"m%d" % seq, sent_ns)
        receiver({**headers, b"mq-seq": b"%d" % seq, b"mq-producer": b"p"}, body, received_ns)
    client.recorder.flush()
    entries = env.stats.entries
    assert entries[("receive-p9 /queue/a", "STOMP")].num_requests == 1  # seq 3: level 3 of 4
    assert entries[("receive-p6 /queue/a", "STOMP")].num_requests == 2  # seqs 2 and 6 (new)
    assert entries[("receive-p3 /queue/a", "STOMP")].num_requests == 1
    assert entries[("receive-p9 /queue/a", "STOMP")].max_response_time >= 3000
    document = figures.document()["priority"]
    # Seq 1 (level 1) came before seq 2 (level 2, the backlog's): one inversion; seq 6 is new.
    assert (document["received"], document["inversions"]) == ([0, 1, 2, 1], [0, 1, 0, 0])
    assert document["priorities"] == [0, 3, 6, 9] and document["inversions_per_consumer"] == [1]


def test_the_report_has_a_row_per_priority_highest_first_and_a_sentence() -> None:
    figures = PriorityFigures()
    for deliveries in ([(1, True), (0, True), (1, True)], [(0, True)]):
        order = figures.order(2)
        for level, backlog in deliveries:
            order.record(level, backlog)
    backlog = {"priority": figures.document()}
    operations = [{"name": "receive-p9 /queue/a", "count": 2, "latency_ms": {"p50": 1.0, "p99": 2.5, "max": 3}}]
    assert priority_table(backlog, operations) == [
        ["priority", "received", "inversions", "latency p50 / p99 / max ms"],
        ["9", "2", "0", "1.0 / 2.5 / 3.0"],
        ["0", "2", "1", "-"],
    ]
    assert priority_sentence(backlog) == (
        "priority: 1 inversions in 4 deliveries: a lower priority delivered while a higher one of the backlog "
        "waited (per consumer: 1, 0)"
    )
    assert priority_table({"priority": None}, []) is None and priority_sentence({}) is None


def test_the_html_report_shows_the_priority_table_after_the_phases_and_nothing_without_priorities() -> None:
    figures = BacklogFigures(messages=2, started_ns=0)
    figures.switch(2, S, BY_COUNT)
    order = figures.priority.order(2)
    for level in (0, 1):  # the lower first: one inversion
        order.record(level, figures.delivered(1, 2 * S))
    html = _backlog_table({"backlog": figures.document(), "operations": []})
    assert html.index("Backlog: build, then drain") < html.index("Priority: inversions and latency")
    assert "priority: 1 inversions in 2 deliveries" in html
    assert "Priority" not in _backlog_table({"backlog": BacklogFigures().document(), "operations": []})
