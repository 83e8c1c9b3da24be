"""Real brokers from services/ agree with their own counters (broker_stats).

Each fixture starts its service through the Python API and stops it again
only if this module started it. Honour MQUSERS_SERVICES_DIR / MQUSERS_PORT_OFFSET.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import requests

import services
from tests.integration import broker_stats as bs
from tests.integration.reference_client import Inbox, connect

N = 50


def _service(name: str) -> Iterator[dict[str, int]]:
    started = services.start(name)
    yield services.ports(name)
    if started:
        services.stop(name)


@pytest.fixture(scope="module")
def activemq() -> Iterator[dict[str, int]]:
    yield from _service("activemq")


@pytest.fixture(scope="module")
def rabbitmq() -> Iterator[dict[str, int]]:
    yield from _service("rabbitmq")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# -------------------------------------------------------------------- ActiveMQ


@pytest.mark.activemq
def test_activemq_start_is_idempotent(activemq: dict[str, int]) -> None:
    assert services.is_running("activemq")
    assert services.start("activemq") is False


@pytest.mark.activemq
def test_activemq_queue_counts(activemq: dict[str, int]) -> None:
    port, queue = activemq["stomp"], f"/queue/{unique('q')}"

    def stats() -> dict[str, int]:
        return bs.activemq_destination_stats(port, queue)

    producer = connect(port)
    for i in range(N):
        producer.send(queue, f"m{i}")
    assert bs.wait_for(lambda: stats()["enqueueCount"] == N), stats()
    assert stats()["size"] == N and stats()["dequeueCount"] == 0

    inbox = Inbox()
    consumer = connect(port, inbox)
    consumer.subscribe(queue, id="1", ack="client-individual")
    assert bs.wait_for(lambda: len(inbox) == N)
    for frame in inbox.frames:
        consumer.ack(frame.headers["ack"])
    assert bs.wait_for(lambda: stats()["dequeueCount"] == N), stats()
    final = stats()
    assert (final["dispatchCount"], final["size"], final["consumerCount"]) == (N, 0, 1)
    consumer.disconnect()
    producer.disconnect()


@pytest.mark.activemq
def test_activemq_topic_counts_are_separate_from_queue(activemq: dict[str, int]) -> None:
    port, name = activemq["stomp"], unique("t")
    inboxes = [Inbox(), Inbox()]
    subscribers = [connect(port, inbox) for inbox in inboxes]
    for n, conn in enumerate(subscribers):
        conn.subscribe(f"/topic/{name}", id=str(n))

    def stats() -> dict[str, int]:
        return bs.activemq_destination_stats(port, f"/topic/{name}")

    assert bs.wait_for(lambda: stats()["consumerCount"] == 2)
    producer = connect(port)
    for i in range(N):
        producer.send(f"/topic/{name}", f"m{i}")
    assert bs.wait_for(lambda: all(len(inbox) == N for inbox in inboxes))
    assert bs.wait_for(lambda: stats()["dispatchCount"] == 2 * N), stats()
    assert stats()["enqueueCount"] == N  # one per publish, not per subscriber
    assert bs.activemq_destination_stats(port, f"/queue/{name}")["exists"] == 0
    for conn in [producer, *subscribers]:
        conn.disconnect()


@pytest.mark.activemq
@pytest.mark.alone  # it restarts the shared activemq-persistent
def test_activemq_persistent_survives_restart() -> None:
    name, queue = "activemq-persistent", f"/queue/{unique('p')}"
    started = services.start(name)
    port = services.ports(name)["stomp"]
    try:
        producer = connect(port)
        for i in range(N):
            producer.send(queue, f"m{i}", headers={"persistent": "true"})
        assert bs.wait_for(lambda: bs.activemq_destination_stats(port, queue)["enqueueCount"] == N)
        producer.disconnect()
        assert services.stop(name) is True
        assert not services.is_running(name)
        assert services.start(name) is True
        assert bs.activemq_destination_stats(port, queue)["size"] == N
    finally:
        if started:
            services.stop(name)


# -------------------------------------------------------------------- RabbitMQ


@pytest.mark.rabbitmq
def test_rabbitmq_queue_counts(rabbitmq: dict[str, int]) -> None:
    port, mgmt, queue = rabbitmq["stomp"], rabbitmq["management"], unique("q")

    def stats() -> dict[str, int]:
        return bs.rabbitmq_queue_stats(mgmt, queue)

    producer = connect(port, rabbit=True)
    for i in range(N):
        producer.send(f"/queue/{queue}", f"m{i}")
    assert bs.wait_for(lambda: stats()["publish"] == N and stats()["messages"] == N), stats()

    inbox = Inbox()
    consumer = connect(port, inbox, rabbit=True)
    consumer.subscribe(f"/queue/{queue}", id="1", ack="client-individual")
    assert bs.wait_for(lambda: len(inbox) == N)
    for frame in inbox.frames:
        consumer.ack(frame.headers["ack"])
    # The management API samples each figure on its own: wait for all of them together.
    assert bs.wait_for(
        lambda: (s := stats())["ack"] == N and s["messages"] == 0 and s["deliver_get"] == N and s["consumers"] == 1
    ), stats()
    consumer.disconnect()
    producer.disconnect()
    requests.delete(f"http://127.0.0.1:{mgmt}/api/queues/%2F/{queue}", auth=bs.GUEST, timeout=10)


@pytest.mark.rabbitmq
@pytest.mark.alone  # amq.topic's counts, which other tests' topics add to
def test_rabbitmq_topic_counts(rabbitmq: dict[str, int]) -> None:
    port, mgmt, key = rabbitmq["stomp"], rabbitmq["management"], unique("k")
    before = bs.rabbitmq_exchange_stats(mgmt, "amq.topic")
    inboxes = [Inbox(), Inbox()]
    subscribers = [connect(port, inbox, rabbit=True) for inbox in inboxes]
    for n, conn in enumerate(subscribers):
        conn.subscribe(f"/topic/{key}", id=str(n), receipt=f"sub-{n}")
    # The receipt comes once the subscription queue is bound; publishing
    # earlier would route nowhere.
    assert bs.wait_for(lambda: all(f"sub-{n}" in inbox.receipts for n, inbox in enumerate(inboxes)))
    producer = connect(port, rabbit=True)
    for i in range(N):
        producer.send(f"/topic/{key}", f"m{i}")
    assert bs.wait_for(lambda: all(len(inbox) == N for inbox in inboxes))

    def delta() -> tuple[int, int]:
        now = bs.rabbitmq_exchange_stats(mgmt, "amq.topic")
        return now["publish_in"] - before["publish_in"], now["publish_out"] - before["publish_out"]

    assert bs.wait_for(lambda: delta() == (N, 2 * N)), delta()
    for conn in [producer, *subscribers]:
        conn.disconnect()


# --------------------------------------------------------------- metrics stores


@pytest.mark.parametrize(
    ("name", "path", "status"),
    [
        pytest.param("victoria-metrics", "/health", 200, marks=pytest.mark.victoria),
        pytest.param("influxdb", "/ping", 204, marks=pytest.mark.influxdb),
    ],
)
@pytest.mark.alone  # it may stop the stores other tests stream to
def test_metrics_store_answers(name: str, path: str, status: int) -> None:
    started = services.start(name)
    try:
        url = f"http://127.0.0.1:{services.ports(name)['http']}{path}"
        assert requests.get(url, timeout=5).status_code == status
    finally:
        if started:
            assert services.stop(name) is True
            assert not services.is_running(name)
