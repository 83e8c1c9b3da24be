"""Message groups: each group's messages to one consumer at a time, in order, against the broker's counts.

The planted fault is a broker that ignores groups: RabbitMQ, told (``--mq-dialect activemq``) to take
the ActiveMQ dialect, hands every group to every consumer in turn, and the run must fail on it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.broker_stats import wait_for
from tests.integration.brokers import Broker, on_four, started
from tests.integration.locust_runs import LocustRun, assert_refused_before_load, run_locust

LOCUSTFILE = "groups.py"
#: Four producers (one group each) of this many messages, three consumers.
EACH = 100


def grouped_run(broker: Broker, queue: str, tmp_path: Path, *args: str) -> LocustRun:
    return run_locust(LOCUSTFILE, broker.url, "--mq-destination", queue, "--mq-messages", str(EACH), *args,
                      users=7, seconds=5, tmp_path=tmp_path)  # fmt: skip


@pytest.mark.parametrize("broker", on_four("message groups"), indirect=True)
def test_each_group_goes_to_one_consumer_at_a_time_in_order(
    broker: Broker, destination: Callable[[str], str], tmp_path: Path
) -> None:
    queue = destination("queue")
    run = grouped_run(broker, queue, tmp_path)
    assert run.code == 0, run.output[-3000:]
    row = run.row(queue)
    assert (row["sent"], row["received"], row["lost"], row["duplicated"]) == (4 * EACH, 4 * EACH, 0, 0), row
    assert (row["groups"], row["group_violations"], row["reordered"]) == (4, 0, 0), row
    assert "4 message groups delivered, 0 of them to two consumers at once" in " ".join(run.output.split())
    # The broker's own counts: every message accepted once and taken, none left.
    assert wait_for(lambda: broker.counters(queue)["accepted"] == 4 * EACH), broker.counters(queue)
    assert broker.counters(queue)["held"] == 0


@pytest.mark.rabbitmq
def test_a_broker_that_ignores_groups_fails_the_run_and_rabbitmq_is_refused(
    destination: Callable[[str], str], tmp_path: Path
) -> None:
    broker = started("rabbitmq")
    queue = destination("queue")
    run = grouped_run(broker, queue, tmp_path, "--mq-dialect", "activemq")
    assert run.code == 3, run.output[-3000:]
    row = run.row(queue)
    assert (row["received"], row["lost"], row["groups"]) == (4 * EACH, 0, 4), row
    assert row["group_violations"] == 4, row  # three consumers in turn: every group split
    assert f"{queue}: 4 message groups two consumers had at once" in run.output
    refused = run_locust(LOCUSTFILE, broker.url, users=7, seconds=2, tmp_path=tmp_path)
    assert_refused_before_load(refused, "--mq-groups: rabbitmq has no message groups")
