"""NACK: what a consumer refuses is dead-lettered (ActiveMQ) or redelivered (RabbitMQ), never lost nor a duplicate.

Independent truths: plain stomp.py reads the broker's dead-letter queue back (exactly the NACKed seqs,
each once, and the audit's ``dead_lettered`` to the message); RabbitMQ's management API counts the
redeliveries the NACKs caused. Artemis's STOMP NACK acknowledges, so a NACKing run is refused there.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.broker_stats import rabbitmq_queue_stats, wait_for
from tests.integration.brokers import Broker, on_four, started
from tests.integration.locust_runs import LocustRun, assert_refused_before_load, run_locust
from tests.integration.reference_client import read_dead_letters

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
