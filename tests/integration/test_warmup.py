"""The warm-up is cut per message by its send time: on a topic, received == subscribers x sent, exactly.

A message sent just before the warm-up's end and received just after belongs to the warm-up on both
sides; cut by recording time instead, it counted as received but not as sent and the per-second
backlog went negative. The broker's own count, which includes the warm-up, shows something was
left out; Locust's final table counts the same messages as the summary.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.integration.brokers import started
from tests.integration.locust_runs import run_locust

pytestmark = pytest.mark.activemq

SUBSCRIBERS = 3


# Master and workers: every worker cuts at the master's instant (carried with the go).
@pytest.mark.parametrize("processes", [[], ["--processes", "2"]], ids=["local", "master and workers"])
def test_a_topic_receives_subscribers_times_sent_after_a_warm_up(processes: list[str], tmp_path: Path) -> None:
    broker, topic = started("activemq"), f"/topic/warm.{uuid.uuid4().hex[:8]}"
    run = run_locust("pubsub.py", broker.url, "--mq-destination", topic, "--mq-consumers", str(SUBSCRIBERS),
                     "--mq-rate", "1000", "--mq-warmup", "2", *processes, users=2 * SUBSCRIBERS, seconds=5,
                     tmp_path=tmp_path)  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    row = run.row(topic)
    assert row["sent"] > 0
    assert row["received"] == SUBSCRIBERS * row["sent"], row
    backlog = run.report["series"]["destinations"][topic]["backlog"]
    # Across processes a subscriber may file a delivery in the second before its sender files the send (the
    # sender's clock is read after its write returned); more than one message a subscriber is a bug.
    assert min(backlog) >= (0 if not processes else -SUBSCRIBERS) and backlog[-1] == 0, backlog
    # Something was left out: the broker counted the warm-up's messages too.
    assert run.report["broker"]["destinations"][topic]["enqueued"] > row["sent"]

    assert (run.locust_count("send", topic), run.locust_count("receive", topic)) == (row["sent"], row["received"])
