"""Many slow producers: a random start within their interval spreads them, read back from the messages' own stamps."""

from __future__ import annotations

from pathlib import Path

from tests.integration.brokers import started
from tests.integration.locust_runs import run_locust
from tests.integration.reference_client import read_left

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
