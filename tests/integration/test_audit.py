"""The message audit against independent truths: injected gaps, and a thief outside mqusers."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import stomp

from tests.integration.broker_stats import wait_for
from tests.integration.brokers import Broker, on_four
from tests.integration.locust_runs import run_locust
from tests.integration.reference_client import Thief

HERE = Path(__file__).parent / "locustfiles"


@pytest.mark.parametrize("broker", on_four("injected gap"), indirect=True)
def test_injected_gap_is_reported_exactly(broker: Broker, destination, tmp_path: Path) -> None:
    queue = destination("queue")
    run = run_locust(str(HERE / "gappy.py"), broker.url, "--mq-destination", queue, users=2, tmp_path=tmp_path)
    row = run.row(queue)
    # 100 seqs: 10 lost on the way; 5 sent twice, so delivered twice, which is a resend, not a duplicate.
    assert (row["sent"], row["received"]) == (95, 95), run.output[-2000:]
    assert (row["lost"], row["resent"], row["duplicated"], row["in_flight"]) == (10, 5, 0, 0)
    # The broker's own count: 95 SENDs reached it (90 seqs, 5 of them twice), each delivered once.
    assert wait_for(lambda: broker.counters(queue)["accepted"] == 95, timeout=10), broker.counters(queue)
    assert broker.counters(queue)["held"] == 0


@pytest.mark.parametrize("broker", on_four("outside consumer"), indirect=True)
def test_messages_stolen_by_an_outside_consumer_are_lost_exactly(broker: Broker, destination, tmp_path: Path) -> None:
    queue, stolen = destination("queue"), 25
    connection = stomp.Connection12([("127.0.0.1", broker.port)], vhost="/")
    thief = Thief(connection, stolen)
    connection.set_listener("thief", thief)
    connection.connect("guest", "guest", wait=True) if broker.name == "rabbitmq" else connection.connect(wait=True)
    prefetch = {"activemq.prefetchSize": "1", "prefetch-count": "1", **broker.routing("SUBSCRIBE", queue)}
    connection.subscribe(queue, id="thief", ack="client-individual", headers=prefetch)
    # Leave once K are taken: what was pushed to the thief but not ACKed goes back to the queue.
    leaving = threading.Thread(target=lambda: (thief.done.wait(60), connection.disconnect()))
    leaving.start()
    try:
        run = run_locust(
            "put_get.py", broker.url, "--mq-destination", queue, "--mq-total-messages", "600",
            "--mq-total-rate", "300", users=3, seconds=10, tmp_path=tmp_path,
        )  # fmt: skip
    finally:
        thief.done.set()
        leaving.join()
    assert thief.stolen == stolen
    row = run.row(queue)
    assert row["sent"] == 600, run.output[-2000:]
    # Whatever the thief took but did not ACK went back to the queue, so exactly K are missing.
    assert (row["lost"], row["in_flight"], row["duplicated"]) == (stolen, 0, 0)
    assert row["distinct"] == 600 - stolen
    # The broker's own count: it accepted every one, and holds none (the thief's ACKs took K).
    assert wait_for(lambda: broker.counters(queue)["accepted"] == 600, timeout=10), broker.counters(queue)
    assert broker.counters(queue)["held"] == 0
