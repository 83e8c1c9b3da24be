"""Every scenario through Locust itself, on each broker, checked against the broker's own counters.

The broker-agnostic behaviours (``on_four``) run on the four brokers; the rest on ActiveMQ and RabbitMQ.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.broker_stats import wait_for
from tests.integration.brokers import Broker, broker_params, on_four, started
from tests.integration.locust_runs import LocustRun, free_port, run_locust
from tests.integration.reference_client import publish_outside


def assert_plausible_latency(run: LocustRun, destination: str) -> None:
    row = run.row(destination)
    latency = row["latency_ms"]
    assert row["negative_latencies"] == 0
    # Loopback, paced well below saturation: above zero, below a second.
    assert 0 < latency["p50"] <= latency["p99"] <= latency["max"] < 1000, latency
    assert 0 < latency["mean"] < 1000


def assert_broker_counted(broker: Broker, destination: str, before: dict[str, int], accepted: int, delivered: int):
    """The broker's counts of this test; ``delivered`` where it keeps one (not an Artemis topic's)."""
    keys = [key for key in ("accepted", "delivered") if key in broker.counters(destination)]
    assert "accepted" in keys, keys

    def counted() -> dict[str, int]:
        now = broker.counters(destination)
        return {key: now[key] - before.get(key, 0) for key in keys}

    expected = {key: value for key, value in {"accepted": accepted, "delivered": delivered}.items() if key in keys}
    assert wait_for(lambda: counted() == expected, timeout=10), (counted(), expected)


# RabbitMQ's topic counts are the amq.topic exchange's, which other tests' topics add to: that one runs alone.
@pytest.mark.parametrize("broker", on_four("pub/sub", alone={"rabbitmq": "amq.topic's counts"}), indirect=True)
def test_pubsub_fans_out_every_message_to_every_subscriber(broker: Broker, destination, tmp_path: Path) -> None:
    topic = destination("topic")
    before = broker.counters(topic)
    run = run_locust(
        "pubsub.py", broker.url, "--mq-destination", topic, "--mq-messages", "300", "--mq-rate", "300",
        "--mq-consumers", "2", users=3, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    row = run.row(topic)
    assert (row["sent"], row["received"], row["errors"]) == (300, 600, 0)
    assert (row["lost"], row["duplicated"], row["in_flight"]) == (0, 0, 0)
    assert_plausible_latency(run, topic)
    assert_broker_counted(broker, topic, before, accepted=300, delivered=600)


@pytest.mark.parametrize("broker", on_four("queue"), indirect=True)
def test_queue_consumers_compete(broker: Broker, destination, tmp_path: Path) -> None:
    queue = destination("queue")
    run = run_locust(
        "queue_balance.py", broker.url, "--mq-destination", queue, "--mq-messages", "200", "--mq-rate", "200",
        users=5, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    row = run.row(queue)
    assert (row["sent"], row["received"], row["errors"]) == (400, 400, 0)
    assert (row["lost"], row["duplicated"], row["in_flight"]) == (0, 0, 0)
    assert_plausible_latency(run, queue)
    assert_broker_counted(broker, queue, {}, accepted=400, delivered=400)
    assert broker.counters(queue)["held"] == 0


@pytest.mark.parametrize("broker", on_four("request/reply"), indirect=True)
@pytest.mark.parametrize("reply_to", ["temp", "queue"])
def test_request_reply_round_trips(broker: Broker, destination, tmp_path: Path, reply_to: str) -> None:
    queue = destination("queue")
    run = run_locust(
        "request_reply.py", broker.url, "--mq-destination", queue, "--mq-messages", "100", "--mq-rate", "100",
        "--mq-reply-to", reply_to, users=4, seconds=5, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    requests = run.operation(f"request {queue}")
    assert (requests["count"], requests["errors"]) == (200, 0)
    assert run.row(queue)["received"] == 200
    one_way, round_trip = run.row(queue)["latency_ms"], requests["latency_ms"]
    assert 0 < one_way["p50"] < round_trip["p50"] < 1000
    assert_broker_counted(broker, queue, {}, accepted=200, delivered=200)


@pytest.mark.parametrize("broker", on_four("receipts"), indirect=True)
@pytest.mark.parametrize("in_flight", ["1", "32"])
def test_sync_send_times_every_receipt(broker: Broker, in_flight: str, destination, tmp_path: Path) -> None:
    """Each send waits for its RECEIPT (a window of 1), or up to 32 await theirs at once: every one timed."""
    queue = destination("queue")
    run = run_locust(
        "put_only.py", broker.url, "--mq-destination", queue, "--mq-messages", "300", "--mq-receipts", "true",
        "--mq-in-flight", in_flight, users=1, seconds=5, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    receipts = run.operation(f"receipt {queue}")
    assert (receipts["count"], receipts["errors"]) == (300, 0)
    assert 0 < receipts["latency_ms"]["p50"] < 1000
    # A RECEIPT means the broker has the message: every one is already counted.
    assert broker.counters(queue)["accepted"] == 300


def test_put_only_then_get_only_drains_the_backlog(broker: Broker, destination, tmp_path: Path) -> None:
    queue = destination("queue")
    put = run_locust(
        "put_only.py", broker.url, "--mq-destination", queue, "--mq-messages", "1000", users=2, tmp_path=tmp_path
    )
    assert put.code == 0, put.output[-3000:]
    assert put.row(queue)["sent"] == 2000 and put.row(queue)["received"] == 0
    assert wait_for(lambda: broker.counters(queue)["held"] == 2000, timeout=10), broker.counters(queue)
    get = run_locust("get_only.py", broker.url, "--mq-destination", queue, users=2, tmp_path=tmp_path)
    assert get.code == 0, get.output[-3000:]
    row = get.row(queue)
    assert (row["received"], row["errors"]) == (2000, 0)
    assert wait_for(lambda: broker.counters(queue)["held"] == 0, timeout=10), broker.counters(queue)


@pytest.mark.alone  # 2,000 messages at 1,000 msg/s inside a 3 s run
# Pacing and counting are the generator's; a queue on each broker: test_queue_consumers_compete.
@pytest.mark.parametrize("broker", broker_params("activemq"), indirect=True)
def test_concurrent_put_get(broker: Broker, destination, tmp_path: Path) -> None:
    queue = destination("queue")
    run = run_locust(
        "put_get.py", broker.url, "--mq-destination", queue, "--mq-messages", "2000", "--mq-rate", "1000",
        users=4, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    row = run.row(queue)
    assert (row["sent"], row["received"], row["errors"]) == (4000, 4000, 0)
    assert_plausible_latency(run, queue)


@pytest.mark.alone  # the receive span within 0.4-1.5 s
def test_large_messages_arrive_intact(broker: Broker, destination, tmp_path: Path) -> None:
    queue = destination("queue")
    run = run_locust(
        "put_get.py", broker.url, "--mq-destination", queue, "--mq-messages", "100", "--mq-rate", "200",
        "--mq-size", "20KB", users=3, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    row = run.row(queue)
    assert (row["sent"], row["received"], row["errors"]) == (100, 100, 0)
    # 100 x 20 KB over the span from the first to the last receive (~0.5 s at 200 msg/s).
    assert 0.4 < row["receive_span_s"] <= row["span_s"] < 1.5
    assert abs(row["receive_rate_mbit"] - 100 * 20480 * 8 / 1e6 / row["receive_span_s"]) < 1e-6


@pytest.mark.parametrize("broker", on_four("client and client-individual acks"), indirect=True)
@pytest.mark.parametrize("ack", ["client", "client-individual"])
def test_acknowledged_deliveries_leave_nothing_on_the_queue(
    broker: Broker, destination, tmp_path: Path, ack: str
) -> None:
    queue = destination("queue")
    run = run_locust(
        "queue_balance.py", broker.url, "--mq-destination", queue, "--mq-ack", ack, "--mq-prefetch", "0",
        "--mq-consumers", "2", "--mq-total-messages", "300", "--mq-total-rate", "300", users=3, seconds=3,
        tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    row = run.row(queue)
    assert (row["sent"], row["received"], row["errors"]) == (300, 300, 0)
    assert (row["lost"], row["duplicated"], row["in_flight"]) == (0, 0, 0)
    # No wait for an ACK held back: Artemis's 10 KiB let ~8 out, and one ACK per 50 made p50 16 s.
    assert_plausible_latency(run, queue)
    # The broker's own window (no prefetch asked; Artemis: 10 KiB), every delivery acknowledged: the
    # broker counted each once, and holds none unacknowledged.
    assert_broker_counted(broker, queue, {}, accepted=300, delivered=300)
    assert wait_for(lambda: broker.counters(queue)["held"] == 0, timeout=10), broker.counters(queue)


@pytest.mark.parametrize("broker", on_four("durable subscriber", persistent=True), indirect=True)
def test_durable_subscriber_gets_what_was_published_while_offline(
    broker: Broker, destination: Callable[[str], str], tmp_path: Path
) -> None:
    topic = destination("topic")
    # What arrives was published by another run (the outside publisher): received on purpose. Naming the
    # class runs only the subscribers (Locust's positional user classes, last on the command line).
    options = ("--mq-destination", topic, "--mq-other-runs", "receive")
    subscribe_only = (*options, "DurableSubscriber")
    first = run_locust("durable_topic.py", broker.url, *subscribe_only, users=2, seconds=1, tmp_path=tmp_path)
    assert first.code == 0, first.output[-3000:]
    publish_outside(broker, topic, 150, stamped=True)
    # 4 s: beside the parallel phase's broker start-ups, Classic 6's KahaDB dispatched nothing of the 300 to the
    # returning subscribers within a 2 s run.
    second = run_locust("durable_topic.py", broker.url, *subscribe_only, users=2, seconds=4, tmp_path=tmp_path)
    assert second.code == 0, second.output[-3000:]
    row = second.row(topic)
    assert (row["received"], row["errors"]) == (300, 0)
    # The same topic without durable subscriptions keeps nothing for absent subscribers.
    publish_outside(broker, topic, 50, stamped=True)
    plain = run_locust(
        "durable_topic.py", broker.url, *options, "--mq-durable", "false", "DurableSubscriber", users=2,
        seconds=1, tmp_path=tmp_path,
    )  # fmt: skip
    assert plain.code == 0, plain.output[-3000:]
    subscribed = plain.operation(f"subscribe {topic}")
    assert (subscribed["count"], subscribed["errors"]) == (2, 0)
    # Both subscribers were there and nothing reached them: the topic's row says 0, as a subscribed one does.
    [row] = plain.report["destinations"]
    assert (row["destination"], row["received"], row["sent"]) == (topic, 0, 0), row


#: Absolute, so run_locust takes it as it is rather than under the shipped locustfiles/.
MIXED = Path(__file__).parent / "locustfiles" / "mixed.py"


def test_an_http_user_beside_stomp_users_keeps_its_host(destination, tmp_path: Path) -> None:
    started("activemq")
    (tmp_path / "mixed.txt").write_text("ok\n")
    port = free_port()
    log = tmp_path / "http.log"
    with log.open("w") as sink:
        server = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
            cwd=tmp_path, stdout=sink, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        assert wait_for(lambda: _listening(port), timeout=10), "the HTTP server did not start"
        topic = destination("topic")
        run = run_locust(
            str(MIXED), f"http://127.0.0.1:{port}", "--mq-host", "stomp://127.0.0.1:61613", "--mq-destination", topic,
            "--mq-messages", "200", "--mq-rate", "200", "--mq-consumers", "2", users=4, tmp_path=tmp_path,
        )  # fmt: skip
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert run.code == 0, run.output[-3000:]
    row = run.row(topic)
    assert (row["sent"], row["received"], row["errors"]) == (200, 400, 0)
    served = log.read_text().count('"GET /mixed.txt HTTP/1.1" 200')
    fetched = run.operation("GET /mixed.txt")
    # Every fetch Locust counted was served; the stop may cut the one request in flight of each HttpUser after
    # the server answered it (served, not counted: seen on a busy machine, 54 served and 53 counted).
    users = re.search(r"load: 4 users \((\d+) Api, ", " ".join(run.output.split()))
    assert users, run.output[-3000:]
    http_users = int(users.group(1))
    assert fetched["errors"] == 0 and 0 < fetched["count"] <= served <= fetched["count"] + http_users, (served, fetched)
    assert [r["destination"] for r in run.report["destinations"]] == [topic]
    assert run.report["options"]["broker"] == "stomp://127.0.0.1:61613"


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0
