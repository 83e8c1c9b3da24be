"""A backlog built while no consumer reads, then drained: checked against the broker's own depth, polled apart."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.integration import broker_stats
from tests.integration.brokers import Broker, broker_params, started
from tests.integration.locust_runs import assert_refused_before_load, run_locust, start_locust

PRODUCERS, EACH = 2, 1500


class DepthPoll:
    """The broker's depth of one queue, read over and over in a thread: (asked ns, answered ns, depth)."""

    def __init__(self, broker: Broker, queue: str):
        self.broker, self.queue = broker, queue
        self.samples: list[tuple[int, int, int]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            asked = time.time_ns()
            held = self.broker.counters(self.queue)["held"]
            self.samples.append((asked, time.time_ns(), held))

    def __enter__(self) -> DepthPoll:
        # Artemis's Jolokia may answer a few seconds after its STOMP port: poll once it does.
        deadline = time.monotonic() + 60
        while True:
            try:
                self.broker.counters(self.queue)
                break
            except OSError:
                assert time.monotonic() < deadline, f"no depth reading of {self.queue} within 60 s"
                time.sleep(0.5)
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join(timeout=15)


# Not on RabbitMQ yet: its management API read 2,775 of the 3,000 confirmed messages just before the switch
# (its depth is sampled), unresolved.
@pytest.mark.parametrize("broker", broker_params("activemq", "activemq6", "artemis"), indirect=True)
@pytest.mark.alone  # times and rates of a build and a drain
def test_backlog_at_the_switch_is_the_brokers_depth_and_empties_when_the_broker_does(
    broker: Broker, destination, tmp_path: Path
) -> None:
    """2 producers send 1,500 each (receipted) while the consumer waits 3 s: the backlog at the switch is
    the broker's own depth then; every message arrives once; the time to empty ends when the broker's depth
    reaches 0, polled apart from mqusers."""
    queue = destination("queue")
    with DepthPoll(broker, queue) as poll:
        running = start_locust(
            "backlog.py", broker.url, "--mq-destination", queue, "--mq-messages", str(EACH), "--mq-receipts", "true",
            "--mq-backlog-seconds", "3", "--mq-ack", "auto", users=PRODUCERS + 1, seconds=10, tmp_path=tmp_path,
        )  # fmt: skip
        run = running.finish(60)
    assert run.code == 0, run.output[-3000:]
    backlog = run.report["backlog"]
    switch, emptied = backlog["switch_ns"], backlog["emptied_ns"]
    assert backlog["switch_reason"] == "time passed"
    assert 2.9 < backlog["build_s"] < 4, backlog
    # The broker's depth just before the switch is the backlog mqusers counted (every send confirmed by then).
    before = [held for _, answered, held in poll.samples if answered < switch]
    assert before and before[-1] == backlog["at_switch"] == PRODUCERS * EACH, (before[-5:], backlog)
    # Exactly once: the audit and the phase counts.
    row = run.row(queue)
    assert row["sent"] == row["received"] == PRODUCERS * EACH, row
    assert all(row[key] == 0 for key in ("lost", "duplicated", "unreceived", "reordered")), row
    assert backlog["drained"] == PRODUCERS * EACH and backlog["new"] == 0, backlog
    assert run.operation(f"receive-backlog {queue}")["count"] == PRODUCERS * EACH
    # The broker's depth reaches 0 between its last non-empty reading and its first empty one after the
    # switch; mqusers' last backlog delivery falls in that window (auto ack: the broker counts a message
    # gone when it dispatches it, a moment before it arrives).
    samples = poll.samples
    first_empty = next(i for i, s in enumerate(samples) if s[1] > switch and s[2] == 0)
    last_full_asked, empty_answered = samples[first_empty - 1][0], samples[first_empty][1]
    assert samples[first_empty - 1][2] > 0, samples[first_empty - 3 : first_empty + 1]
    assert last_full_asked - 50_000_000 < emptied < empty_answered + 50_000_000, (
        last_full_asked,
        emptied,
        empty_answered,
    )
    broker_s = (empty_answered - switch) / 1e9
    assert 0 < backlog["time_to_empty_s"] <= broker_s + 0.05, (backlog["time_to_empty_s"], broker_s)
    assert sum(backlog["drain_per_second"]) == PRODUCERS * EACH
    assert "backlog: 3,000 messages at the switch (time passed), emptied in" in run.output


@pytest.mark.alone  # times and rates of a build and a drain
def test_backlog_and_new_messages_apart(destination, tmp_path: Path) -> None:
    """Producers at 500 msg/s each go on after a 2 s build: the backlog's deliveries and the new ones add up
    to what was sent, each exactly once; the backlog's messages waited, the new ones did not."""
    broker = started("activemq")
    queue = destination("queue")
    run = run_locust(
        "backlog.py", broker.url, "--mq-destination", queue, "--mq-rate", "500", "--mq-backlog-seconds", "2",
        users=PRODUCERS + 1, seconds=6, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    backlog, row = run.report["backlog"], run.row(queue)
    assert row["sent"] == row["received"] and row["lost"] == row["duplicated"] == 0, row
    old, new = run.operation(f"receive-backlog {queue}"), run.operation(f"receive-new {queue}")
    assert old["count"] == backlog["drained"] and new["count"] == backlog["new"], (old, new, backlog)
    assert old["count"] + new["count"] == row["received"]
    assert 1500 < old["count"] < 2600 and new["count"] > 3000, backlog
    # The backlog's oldest message waited about the build; the new ones arrive as the drain catches up.
    assert old["latency_ms"]["max"] > 1500 and new["latency_ms"]["p50"] < old["latency_ms"]["p50"], (old, new)


def test_a_negative_build_is_refused_before_load(tmp_path: Path) -> None:
    run = run_locust("backlog.py", "stomp://127.0.0.1:1", "--mq-backlog-seconds", "-1", tmp_path=tmp_path)
    assert_refused_before_load(run, "--mq-backlog-seconds")


RATE, BACKLOG = 500, 2000


# Every broker paces the same way (a prefetch, one more per ACK). RabbitMQ's depth is not polled: its
# management API samples it (see above); its own counts at the end are.
@pytest.mark.parametrize("broker", broker_params("activemq", "artemis", "rabbitmq"), indirect=True)
@pytest.mark.alone  # times and rates of a build and a drain
def test_a_paced_drain_takes_the_rate_asked_and_the_broker_empties_at_that_rate(
    broker: Broker, destination, tmp_path: Path
) -> None:
    """A 2,000-message backlog drained by 2 consumers at 500 msg/s in all: empty after ~4 s, never much
    above 500 in a second, every message once; the broker's own depth, polled apart, falls at 500/s and
    its dequeue (acknowledged) count is what mqusers received."""
    queue = destination("queue")
    with DepthPoll(broker, queue) as poll:
        running = start_locust(
            "backlog.py", broker.url, "--mq-destination", queue, "--mq-total-messages", str(BACKLOG),
            "--mq-backlog-messages", str(BACKLOG), "--mq-receipts", "true", "--mq-backlog-drain-rate", str(RATE),
            "--mq-consumers", "2", users=4, seconds=30, tmp_path=tmp_path,
        )  # fmt: skip
        run = running.finish(90)
    assert run.code == 0, run.output[-3000:]
    backlog, row = run.report["backlog"], run.row(queue)
    assert backlog["at_switch"] == backlog["drained"] == BACKLOG and backlog["new"] == 0, backlog
    # 2,000 / 500 = 4 s: the prefetch (5 each) at once, then one delivery per ACK released every 2 ms.
    assert 4.0 - 0.3 < backlog["time_to_empty_s"] < 4.0 + 0.5, backlog
    assert max(backlog["drain_per_second"]) <= RATE * 1.05, backlog["drain_per_second"]
    assert backlog["drain_rate_msgs"] == pytest.approx(RATE, rel=0.08), backlog
    assert f"emptied in {backlog['time_to_empty_s']:,.3f} s, paced at 500 msg/s" in " ".join(run.output.split())
    # Exactly once, and the broker dequeued (acknowledged) every message mqusers received.
    assert row["sent"] == row["received"] == BACKLOG, row
    assert all(row[key] == 0 for key in ("lost", "duplicated", "unreceived", "reordered", "redelivered")), row
    if broker.name == "activemq":
        stats = broker_stats.activemq_destination_stats(broker.port, queue)
        assert (stats["enqueueCount"], stats["dequeueCount"], stats["size"]) == (BACKLOG, BACKLOG, 0), stats
    else:
        assert broker.counters(queue) == {"accepted": BACKLOG, "delivered": BACKLOG, "held": 0}
    if broker.name == "rabbitmq":
        return
    # The broker's depth, read apart: 2,000 - 500/s since the drain began, within what a reading spans.
    switch = backlog["switch_ns"]
    began = next(asked for asked, _, held in poll.samples if asked > switch and held < BACKLOG)
    readings = [(asked, answered, held) for asked, answered, held in poll.samples if began + 1e9 < asked < began + 3e9]
    assert readings, poll.samples[-5:]
    for asked, answered, held in readings:
        low, high = (BACKLOG - RATE * (t - began) / 1e9 for t in (answered, asked))
        assert low - 40 < held < high + 40, (held, low, high)
