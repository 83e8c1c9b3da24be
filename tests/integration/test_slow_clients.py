"""Many slow producers: a random start within their interval spreads them, read back from the messages' own stamps."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.brokers import started
from tests.integration.locust_runs import run_locust
from tests.integration.reference_client import read_left

# alone: gaps between sends of 0.9-1.5 s and each profile step's count within 10 %
pytestmark = pytest.mark.alone

PRODUCERS, RATE = 20, 1.0


def test_random_starts_spread_slow_producers_over_their_interval(destination, tmp_path: Path) -> None:
    """20 producers at 1 msg/s, spawned within a moment: their first messages spread over most of the second,
    each producer's next ones a second apart (the send stamps in the messages, read by plain stomp.py)."""
    broker = started("activemq")
    queue = destination("queue")
    run = run_locust(
        "put_only.py", broker.url, "--mq-destination", queue, "--mq-rate", str(RATE), "--mq-messages", "2",
        "--mq-random-start", "true", users=PRODUCERS, seconds=5, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    sent: dict[str, list[int]] = {}
    for frame in read_left(broker, queue, 2 * PRODUCERS):
        sent.setdefault(frame.headers["mq-producer"], []).append(int(frame.headers["mq-sent-ns"]))
    firsts = sorted(min(stamps) for stamps in sent.values())
    assert len(firsts) == PRODUCERS
    # Spawned together, without the random start all first sends fall within the spawn (~0.1 s here).
    assert (firsts[-1] - firsts[0]) / 1e9 > 0.5 / RATE, firsts
    gaps = [(max(stamps) - min(stamps)) / 1e9 for stamps in sent.values()]
    assert all(0.9 / RATE < gap < 1.5 / RATE for gap in gaps), gaps


def test_a_rate_profile_drives_the_shared_schedule_step_by_step(destination, tmp_path: Path) -> None:
    """steps:200/2s,600/2s for 1,600 messages from 2 producers: the messages' own send stamps (read by
    plain stomp.py) show 200 msg/s, then 600, none sent before it was due; the broker took all 1,600."""
    broker = started("activemq")
    queue = destination("queue")
    run = run_locust(
        "put_only.py", broker.url, "--mq-destination", queue, "--mq-profile", "steps:200/2s,600/2s",
        "--mq-total-messages", "1600", users=2, seconds=20, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    assert "profile steps:200/2s,600/2s asked in all (peak 600 msg/s)" in " ".join(run.output.split())
    frames = read_left(broker, queue, 1600)
    due = [int(frame.headers["mq-due-ns"]) for frame in frames]
    sent = [int(frame.headers["mq-sent-ns"]) for frame in frames]
    assert all(s >= d for s, d in zip(sent, due, strict=True))
    start = min(due)
    first, second = (sum(1 for s in sent if a <= (s - start) / 1e9 < b) for a, b in ((0.2, 1.8), (2.2, 3.8)))
    assert 0.9 * 200 * 1.6 <= first <= 1.1 * 200 * 1.6, (first, second)
    assert 0.9 * 600 * 1.6 <= second <= 1.1 * 600 * 1.6, (first, second)
    assert broker.counters(queue)["accepted"] == 1600
