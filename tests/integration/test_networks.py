"""A network of two ActiveMQ Classic brokers (services/network.py): producers on one, consumers on the other.

Judged by both brokers' own counters (the statistics plugin, read over a STOMP connection of this
test's): every message sent to A is enqueued on A, forwarded (dequeued there) to B, enqueued on B and
acknowledged there, once; mqusers' audit says the same from its side.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import services
from tests.doccommands import shown
from tests.integration import broker_stats as bs
from tests.integration.locust_runs import ROOT, assert_refused_before_load, run_locust
from tests.integration.reference_client import Inbox, connect

A, B = "activemq-net-a", "activemq-net-b"
MESSAGES = 3_000  # docs/topologies.md's --mq-total-messages


def url(name: str) -> str:
    return f"stomp://127.0.0.1:{services.ports(name)['stomp']}"


def bridged(queue: str, timeout: float) -> bool:
    """Probes sent to A, one each half second, until one reaches a consumer on B: the network connector is up
    and forwards on demand."""
    inbox = Inbox()
    consumer = connect(services.ports(B)["stomp"], inbox)
    producer = connect(services.ports(A)["stomp"], Inbox())
    consumer.subscribe(queue, id="1", ack="auto")

    def arrived() -> bool:
        producer.send(queue, "probe")
        return len(inbox) > 0

    try:
        return bs.wait_for(arrived, timeout, interval=0.5)
    finally:
        producer.disconnect()
        consumer.disconnect()


@pytest.fixture(scope="module")
def network() -> Iterator[None]:
    started: list[str] = []
    try:
        for name in (A, B):
            if services.start(name):
                started.append(name)
        assert bridged(f"/queue/net.probe.{uuid.uuid4().hex[:6]}", 60), "no bridge from A to B within 60 s"
        yield
    finally:
        for name in reversed(started):
            with contextlib.suppress(services.ServiceError):
                services.stop(name)


def test_forward_produce_on_one_broker_consume_on_the_other_every_message_once(network: None, tmp_path: Path) -> None:
    """docs/topologies.md's command, on a fresh queue, its report here."""
    queue, report = f"/queue/net.forward.{uuid.uuid4().hex[:6]}", tmp_path / "forward.json"
    argv = [*shown("locust -f locustfiles/put_get.py --mq-consumer-host",
                   {"--host": url(A), "--mq-consumer-host": url(B), "--mq-destination": queue,
                    "--mq-report-json": str(report)}), "--only-summary"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=90, cwd=ROOT)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    [row] = [r for r in json.loads(report.read_text())["destinations"] if r["destination"] == queue]
    assert (row["sent"], row["received"], row["distinct"]) == (MESSAGES, MESSAGES, MESSAGES), output[-3000:]
    assert (row["lost"], row["duplicated"], row["unreceived"], row["foreign"]) == (0, 0, 0, 0)
    assert f"(consumers at {url(B)})" in output
    # The brokers' own counts: A took every message and forwarded every one (its dequeues: the bridge's
    # acknowledgements), B took every one from the bridge and delivered every one to mqusers' consumers.
    on_a = lambda: bs.activemq_destination_stats(services.ports(A)["stomp"], queue)  # noqa: E731
    on_b = lambda: bs.activemq_destination_stats(services.ports(B)["stomp"], queue)  # noqa: E731
    assert bs.wait_for(lambda: on_a()["dequeueCount"] == MESSAGES, 20), on_a()
    assert bs.wait_for(lambda: on_b()["dequeueCount"] == MESSAGES, 20), on_b()
    assert (on_a()["enqueueCount"], on_a()["size"]) == (MESSAGES, 0)
    assert (on_b()["enqueueCount"], on_b()["size"]) == (MESSAGES, 0)


def test_a_consumer_host_that_does_not_answer_stops_the_run_before_any_load(network: None, tmp_path: Path) -> None:
    queue = f"/queue/net.refused.{uuid.uuid4().hex[:6]}"
    run = run_locust(
        "put_get.py", url(A), "--mq-consumer-host", "stomp://127.0.0.1:1", "--mq-destination", queue,
        "--mq-total-messages", "10", users=2, seconds=5, tmp_path=tmp_path,
    )  # fmt: skip
    assert_refused_before_load(run, "cannot reach the broker at stomp://127.0.0.1:1")
    assert bs.activemq_destination_stats(services.ports(A)["stomp"], queue)["enqueueCount"] == 0
