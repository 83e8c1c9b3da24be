"""The first screen's figures against independent truths: due times, rates, the generator's verdict.

Messages are read back with plain stomp.py (not mqusers) to check their own stamps; the generator's
verdict is judged on runs with a planted fault (a CPU hog beside the run, a generator given more
than it can do).
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import stomp

from tests.integration.conftest import Broker, run_locust, started


class Collector(stomp.ConnectionListener):  # type: ignore[misc]
    def __init__(self, count: int):
        self.headers: list[dict[str, str]] = []
        self.count, self.done = count, threading.Event()

    def on_message(self, frame: stomp.utils.Frame) -> None:
        self.headers.append(frame.headers)
        if len(self.headers) >= self.count:
            self.done.set()


def read_back(broker: Broker, queue: str, count: int) -> list[dict[str, str]]:
    """Every message left on ``queue`` (at least ``count``, waited for up to 30 s), by plain stomp.py."""
    connection = stomp.Connection12([("127.0.0.1", broker.port)], vhost="/")
    collector = Collector(count)
    connection.set_listener("collector", collector)
    connection.connect(wait=True)
    connection.subscribe(queue, id="collector", ack="auto")
    try:
        assert collector.done.wait(30), f"{len(collector.headers)} of {count} messages read back"
    finally:
        connection.disconnect()
    return collector.headers


def test_paced_messages_never_leave_before_their_due_time_and_put_only_rates_are_over_the_sends(
    destination, tmp_path: Path
) -> None:
    """Every message on the shared schedule carries a send stamp at or after its due stamp, and a
    put-only run's send rate is over its sends' own span, in msg/s and Mbit/s."""
    broker = started("activemq")
    queue, total, rate = destination("queue"), 500, 250
    run = run_locust(
        "put_only.py", broker.url, "--mq-destination", queue, "--mq-total-messages", str(total), "--mq-total-rate",
        str(rate), users=1, seconds=20, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    messages = read_back(broker, queue, total)
    early = [int(h["mq-due-ns"]) - int(h["mq-sent-ns"]) for h in messages if int(h["mq-sent-ns"]) < int(h["mq-due-ns"])]
    late = f"{len(early)} of {len(messages)} sent early, by up to {max(early, default=0)} ns"
    assert len(messages) == total and not early, late
    row = run.row(queue)
    # 500 messages due 4 ms apart: the sends span (500 - 1) / 250 s, the schedule's own length.
    assert abs(row["send_span_s"] - (total - 1) / rate) < 0.1, row
    assert abs(row["send_rate_msgs"] - rate) < 0.05 * rate, row
    assert row["send_rate_mbit"] == pytest.approx(row["send_rate_msgs"] * 1024 * 8 / 1e6), row  # 1 KB bodies
    assert (row["receive_span_s"], row["receive_rate_msgs"]) == (0.0, 0.0), row
    assert f"{row['send_rate_mbit']:.2f}" in run.output and f"{row['send_span_s']:.3f}" in run.output
