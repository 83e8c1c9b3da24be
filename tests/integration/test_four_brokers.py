"""Where the four brokers' STOMP differs most: temporary destinations (against a stomp.py peer), redelivery.

The peer is the independent truth: it answers mqusers' requests and sees each ``reply-to`` as the
broker rewrote it. What a consumer left unacknowledged is held to the broker's own count of deliveries.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.brokers import Broker, on_four
from tests.integration.locust_runs import run_locust
from tests.integration.reference_client import Inbox, connect

HERE = Path(__file__).parent / "locustfiles"
#: How each broker shows a temporary queue to the one who answers (measured with stomp.py): Classic
#: rewrites it to the connection's own, RabbitMQ to a generated reply queue, Artemis keeps the name.
TEMPORARY_REPLY_TO = {
    "activemq": "/remote-temp-queue/ID:",
    "activemq6": "/remote-temp-queue/ID:",
    "artemis": "/temp-queue/mqusers-",
    "rabbitmq": "/reply-queue/amq.gen-",
}


class Answerer(Inbox):
    """A responder outside mqusers: sends each request's body back to its ``reply-to``."""

    def __init__(self) -> None:
        super().__init__()
        self.connection: Any = None

    def on_message(self, frame: Any) -> None:
        super().on_message(frame)
        headers = {"correlation-id": frame.headers["correlation-id"]}
        self.connection.send(frame.headers["reply-to"], frame.body, headers=headers)


@pytest.mark.parametrize("broker", on_four("temporary destinations"), indirect=True)
def test_replies_come_back_over_temporary_queues(broker: Broker, destination, tmp_path: Path) -> None:
    queue = destination("queue")
    answerer = Answerer()
    answerer.connection = connect(broker.port, answerer, rabbit=broker.name == "rabbitmq")
    answerer.connection.subscribe(queue, id="answerer", ack="auto", headers=broker.routing("SUBSCRIBE", queue))
    try:
        run = run_locust(
            str(HERE / "lonely_requester.py"), broker.url, "--mq-destination", queue, "--mq-reply-to", "temp",
            "--mq-messages", "50", "--mq-rate", "100", users=2, tmp_path=tmp_path,
        )  # fmt: skip
    finally:
        answerer.connection.disconnect()
    assert run.code == 0, run.output[-3000:]
    requests = run.operation(f"request {queue}")
    assert (requests["count"], requests["errors"]) == (100, 0), run.output[-3000:]
    # The peer answered each request once, each requester on a temporary queue of its own, in the broker's form.
    reply_tos = [frame.headers["reply-to"] for frame in answerer.frames]
    assert len(reply_tos) == 100
    assert len(set(reply_tos)) == 2, set(reply_tos)
    assert all(r.startswith(TEMPORARY_REPLY_TO[broker.name]) for r in reply_tos), set(reply_tos)


@pytest.mark.parametrize("broker", on_four("redelivery"), indirect=True)
def test_what_a_consumer_left_unacknowledged_comes_back_as_redelivered(broker: Broker, destination, tmp_path) -> None:
    queue, held = destination("queue"), 20
    before = broker.counters(queue)
    run = run_locust(
        str(HERE / "leaver.py"), broker.url, "--mq-destination", queue, "--mq-total-messages", "600",
        "--mq-total-rate", "300", users=3, seconds=6, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    row = run.row(queue)
    assert (row["sent"], row["distinct"], row["lost"], row["in_flight"]) == (600, 600, 0, 0), run.output[-2000:]
    # What the leaver took came back flagged: delivered twice, redelivered, neither duplicated nor after a drop.
    assert (row["received"], row["redelivered"], row["duplicated"], row["after_reconnect"]) == (620, held, 0, 0), row
    assert "unexplained" not in run.output  # the broker's dequeued agrees with the messages received
    # The broker's own count: it gave out ``held`` more than it accepted.
    counted = {key: broker.counters(queue)[key] - before.get(key, 0) for key in ("accepted", "delivered")}
    assert counted == {"accepted": 600, "delivered": 600 + held}
