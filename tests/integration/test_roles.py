"""Every run exercises its scenario: one user per role from -u 2 on, --mq-consumers exact, nothing sent fails.

Real Locust processes against the shared ActiveMQ; what ran is read from Locust's own spawn line,
what arrived from the broker's counters as well as the report.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.broker_stats import wait_for
from tests.integration.brokers import started
from tests.integration.locust_runs import LocustRun, assert_refused_before_load, run_locust

pytestmark = pytest.mark.activemq


def spawned(run: LocustRun) -> dict[str, int]:
    """Locust's own count of each User class, from its "All users spawned" line."""
    found = re.search(r"All users spawned: (\{.*?\})", run.output)
    assert found, run.output[-2000:]
    return dict(json.loads(found.group(1)))


@pytest.mark.parametrize(
    ("locustfile", "kind", "users", "split"),
    [
        ("pubsub.py", "topic", 2, {"Publisher": 1, "Subscriber": 1}),  # Locust alone: 2 subscribers
        ("queue_balance.py", "queue", 2, {"Producer": 1, "Worker": 1}),  # Locust alone: 3 fixed workers first
        ("queue_balance.py", "queue", 3, {"Producer": 1, "Worker": 2}),  # Locust alone: 3 workers, no producer
    ],
)
def test_the_fewest_users_run_a_producer_and_a_consumer(
    locustfile: str, kind: str, users: int, split: dict[str, int], destination: Callable[[str], str], tmp_path: Path
) -> None:
    broker = started("activemq")
    target = destination(kind)
    run = run_locust(locustfile, broker.url, "--mq-destination", target, "--mq-messages", "100", "--mq-rate", "200",
                     users=users, seconds=2, tmp_path=tmp_path)  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    assert spawned(run) == split
    row = run.row(target)
    assert (row["sent"], row["received"], row["lost"]) == (100, 100, 0)
    assert wait_for(lambda: broker.counters(target)["accepted"] == 100, timeout=10), broker.counters(target)


def test_one_user_on_a_scenario_of_two_roles_is_refused_before_load(tmp_path: Path) -> None:
    run = run_locust("pubsub.py", started("activemq").url, users=1, tmp_path=tmp_path)
    assert_refused_before_load(run, "-u 1 runs 1 Subscriber, 0 Publisher: no producer would run; use -u 2 or more")


def test_mq_consumers_zero_runs_requesters_without_a_responder(destination, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    broker = started("activemq")
    queue = destination("queue")
    run = run_locust("request_reply.py", broker.url, "--mq-destination", queue, "--mq-consumers", "0",
                     "--mq-rate", "20", "--mq-timeout", "0.5", users=2, seconds=2, tmp_path=tmp_path)  # fmt: skip
    assert spawned(run) == {"Requester": 2, "Responder": 0}
    requests = run.operation(f"request {queue}")
    assert requests["count"] == requests["errors"] > 0  # no reply: every request timed out
    assert run.row(queue)["received"] == 0
    # The broker holds every request: nobody consumed one.
    counters = broker.counters(queue)
    assert counters["accepted"] == run.row(queue)["sent"] == counters["held"] > 0 and counters["delivered"] == 0


def test_a_run_with_producers_that_sent_nothing_fails(destination, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # The whole run inside the warm-up: the summary has no message to show.
    run = run_locust("pubsub.py", started("activemq").url, "--mq-destination", destination("topic"),
                     "--mq-warmup", "30", users=2, seconds=2, tmp_path=tmp_path)  # fmt: skip
    assert run.code == 3, run.output[-3000:]
    assert "mqusers: gate failed: nothing was sent after the 30 s warm-up" in run.output


def test_a_consume_only_run_that_received_nothing_fails_and_says_nothing_was_sent(destination, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run = run_locust("get_only.py", started("activemq").url, "--mq-destination", destination("queue"), users=1,
                     seconds=1, tmp_path=tmp_path)  # fmt: skip
    assert run.code == 3 and "gate failed: nothing was received" in run.output, run.output[-3000:]
    assert run.report["drain"]["reason"] == "nothing was sent by this run"
    assert "every expected message arrived" not in run.output


@pytest.mark.parametrize(("reply_to", "row"), [("temp", "/temp-queue/mqusers-*"), ("queue", "/queue/mqusers.reply.*")])
def test_every_requesters_reply_destination_is_one_row(reply_to: str, row: str, destination, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    queue = destination("queue")
    run = run_locust("request_reply.py", started("activemq").url, "--mq-destination", queue, "--mq-reply-to", reply_to,
                     "--mq-messages", "20", "--mq-rate", "100", users=4, seconds=2, tmp_path=tmp_path)  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    assert spawned(run)["Requester"] == 2
    subscribes = [op for op in run.report["operations"] if op["name"].startswith("subscribe /") and op["name"] !=
                  f"subscribe {queue}"]  # fmt: skip
    assert [(op["name"], op["count"], op["errors"]) for op in subscribes] == [(f"subscribe {row}", 2, 0)]
    # Locust's own tables (requests and percentiles) name that one row too.
    prefix = row.removesuffix("*")
    assert set(re.findall(rf"subscribe ({re.escape(prefix)}\S*)", run.output)) == {row}
