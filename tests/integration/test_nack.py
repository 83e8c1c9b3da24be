"""NACK: what a consumer refuses is dead-lettered (ActiveMQ) or redelivered (RabbitMQ), never lost nor a duplicate.

Independent truths: plain stomp.py reads the broker's dead-letter queue back (exactly the NACKed seqs,
each once, and the audit's ``dead_lettered`` to the message); RabbitMQ's management API counts the
redeliveries the NACKs caused. Planted: a dead letter an outside client also puts back on the queue is
caught by the dead-letter queue's count and the broker's enqueued count. Artemis's STOMP NACK
acknowledges, so a NACKing run is refused there.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.broker_stats import rabbitmq_queue_stats, wait_for
from tests.integration.brokers import Broker, on_four, started
from tests.integration.locust_runs import LocustRun, assert_refused_before_load, run_locust
from tests.integration.reference_client import Inbox, connect, read_dead_letters

LOCUSTFILE = "nack.py"
#: One producer sends this many; the consumer NACKs seqs 10, 20, ... (--mq-nack-ratio 0.1).
SENT = 200
CHOSEN = list(range(10, SENT + 1, 10))


def nacking_run(broker: Broker, queue: str, tmp_path: Path, times: int) -> LocustRun:
    return run_locust(LOCUSTFILE, broker.url, "--mq-destination", queue, "--mq-messages", str(SENT),
                      "--mq-nack-times", str(times), users=2, seconds=3, tmp_path=tmp_path)  # fmt: skip


def rabbitmq_counts(broker: Broker, queue: str) -> dict[str, int]:
    stats = rabbitmq_queue_stats(broker.management_port, queue.split("/")[2])
    return {key: stats[key] for key in ("publish", "deliver_get", "redeliver", "ack", "messages")}


@pytest.mark.parametrize("broker", on_four("NACK to dead letters"), indirect=True)
def test_nacked_messages_are_dead_lettered_and_the_dead_letter_queue_holds_each_once(
    broker: Broker, destination: Callable[[str], str], tmp_path: Path
) -> None:
    queue = destination("queue")
    run = nacking_run(broker, queue, tmp_path, times=1)
    assert run.code == 0, run.output[-3000:]
    row = run.row(queue)
    assert (row["sent"], row["received"], row["distinct"], row["nacks"]) == (SENT, SENT, SENT - 20, 20), row
    assert (row["dead_lettered"], row["lost"], row["unreceived"], row["duplicated"], row["redelivered"]) == (
        20, 0, 0, 0, 0), row  # fmt: skip
    # The broker's dead-letter queue, read by plain stomp.py: the NACKed seqs, each once, from this queue.
    dead = read_dead_letters(broker, "/queue/ActiveMQ.DLQ", run.report["run_id"])
    assert sorted(int(frame.headers["mq-seq"]) for frame in dead) == CHOSEN
    assert {frame.headers["original-destination"] for frame in dead} == {queue}
    assert len(dead) == row["dead_lettered"]
    # Nothing left on the queue: what was not dead-lettered was received.
    assert broker.counters(queue)["held"] == 0


@pytest.mark.parametrize("broker", on_four("NACK redelivered"), indirect=True)
def test_nacked_messages_come_back_as_redeliveries_never_duplicates(
    broker: Broker, destination: Callable[[str], str], tmp_path: Path
) -> None:
    queue = destination("queue")
    run = nacking_run(broker, queue, tmp_path, times=2)
    assert run.code == 0, run.output[-3000:]
    row = run.row(queue)
    # Each chosen message: NACKed twice, then accepted on its second redelivery.
    assert (row["sent"], row["received"], row["distinct"], row["nacks"]) == (SENT, SENT + 40, SENT, 40), row
    assert (row["redelivered"], row["duplicated"], row["dead_lettered"], row["lost"]) == (20, 0, 0, 0), row
    # The broker's own count: every NACK put a message back and it went out again.
    expected = {"publish": SENT, "deliver_get": SENT + 40, "redeliver": 40, "ack": SENT, "messages": 0}
    wait_for(lambda: rabbitmq_counts(broker, queue) == expected, 15)  # the management API lags by up to 5 s
    assert rabbitmq_counts(broker, queue) == expected


@pytest.mark.artemis
def test_artemis_acknowledges_a_nack_and_a_nacking_run_is_refused_before_load(tmp_path: Path) -> None:
    broker = started("artemis")
    run = run_locust(LOCUSTFILE, broker.url, users=2, seconds=2, tmp_path=tmp_path)
    assert_refused_before_load(run, "--mq-nack-ratio: artemis's STOMP NACK acknowledges the message")


@pytest.mark.activemq
def test_a_nacking_consumer_that_does_not_ack_client_individual_is_refused_before_load(tmp_path: Path) -> None:
    run = run_locust(LOCUSTFILE, started("activemq").url, "--mq-ack", "client", users=2, seconds=2, tmp_path=tmp_path)
    assert_refused_before_load(run, "--mq-nack-ratio: Refuser NACKs but acks client; NACK needs client-individual")


class Replanter(Inbox):
    """Reads the first dead letter of the run (client ack, never acknowledged: it stays dead-lettered) and
    sends a copy, headers and all, back to the queue: a broker that dead-letters a message and delivers it too."""

    def __init__(self, queue: str) -> None:
        super().__init__()
        self.queue, self.connection = queue, None

    def on_message(self, frame: Any) -> None:
        if frame.headers.get("original-destination") != self.queue:
            return  # another test's dead letter (left unacknowledged, it stays)
        super().on_message(frame)
        if len(self.frames) == 1:
            headers = {k: v for k, v in frame.headers.items() if k.startswith("mq-")}
            self.connection.send(self.queue, frame.body, headers={**headers, "persistent": "true"}, receipt="planted")


@pytest.mark.activemq
def test_a_dead_letter_delivered_as_well_is_caught_by_the_dead_letter_queues_count(
    destination: Callable[[str], str], tmp_path: Path
) -> None:
    broker, queue = started("activemq"), destination("queue")
    replanter = Replanter(queue)
    replanter.connection = connect(broker.port, replanter)
    replanter.connection.subscribe("/queue/ActiveMQ.DLQ", id="replant", ack="client")
    runs: list[LocustRun] = []
    thread = threading.Thread(target=lambda: runs.append(nacking_run(broker, queue, tmp_path, times=1)))
    thread.start()
    try:
        assert wait_for(lambda: replanter.receipts, 30), "no dead letter came to replant"
    finally:
        replanter.connection.disconnect()  # unacknowledged: the dead letter stays on ActiveMQ.DLQ
        thread.join(70)
    row = runs[0].row(queue)
    # The consumer took the copy as the redelivery of what it NACKed: the audit counts one dead letter fewer...
    assert (row["nacks"], row["redelivered"], row["dead_lettered"], row["lost"]) == (20, 1, 19, 0), row
    # ...while the dead-letter queue still holds all 20: the comparison the dead-letter test makes fails.
    dead = read_dead_letters(broker, "/queue/ActiveMQ.DLQ", runs[0].report["run_id"])
    assert len(dead) == 20 != row["dead_lettered"]
    # The broker's own count names it too: it enqueued one more than mqusers sent.
    assert f"{queue}: the broker enqueued 201, mqusers sent 200" in " ".join(runs[0].output.split())
