"""Transactions on the four brokers: what an ABORT discarded never arrives, every committed message does, and
a message of an aborted transaction planted by a client outside mqusers is caught.

The independent truths: the broker's own count of the messages it accepted (committed ones, and the
planted one) and of what it still holds; the planted message is published by plain stomp.py.
"""

from __future__ import annotations

import time
import uuid
import zlib
from pathlib import Path

import pytest

from tests.integration.broker_stats import wait_for
from tests.integration.brokers import Broker, on_four
from tests.integration.locust_runs import run_locust, start_locust
from tests.integration.reference_client import connect

HERE = Path(__file__).parent / "locustfiles"

#: How long the broker's own counters may take to show a run's last messages: RabbitMQ's management API
#: aggregates its queues' statistics behind the broker (a full CI run read 290 of 300 acks after 10 s, the
#: queue already empty); the counts asserted stay exact.
COUNTED_S = 30


def plant(broker: Broker, queue: str, run_id: str, producer: str, seq: int) -> None:
    """Publish message ``seq`` of ``producer`` with the run's own headers, as if the broker had let it through."""
    body = b"p" * 100
    headers = {"mq-run": run_id, "mq-producer": producer, "mq-seq": str(seq), "mq-sent-ns": str(time.time_ns()),
               "mq-size": "100", "mq-crc32": str(zlib.crc32(body)), **broker.routing("SEND", queue)}  # fmt: skip
    connection = connect(broker.port, rabbit=broker.name == "rabbitmq")
    connection.send(queue, body, headers=headers)
    connection.disconnect(receipt="planted")  # its RECEIPT: the broker has the message


@pytest.mark.parametrize("broker", on_four("transactions"), indirect=True)
def test_aborted_transactions_never_arrive_committed_ones_do_and_a_planted_one_fails_the_run(
    broker: Broker, destination, tmp_path: Path
) -> None:
    queue, run_id, witness = destination("queue"), f"tx-{uuid.uuid4().hex[:8]}", tmp_path / "aborted"
    before = broker.counters(queue)
    running = start_locust(
        str(HERE / "tx_witness.py"), broker.url, "--mq-destination", queue, "--mq-run-id", run_id, users=2,
        seconds=3, tmp_path=tmp_path, env={"MQUSERS_TEST_ABORTED": str(witness)},
    )  # fmt: skip
    try:
        assert wait_for(witness.exists, timeout=30), "no transaction was aborted"
        producer, seq = witness.read_text().split()
        plant(broker, queue, run_id, producer, int(seq))
    finally:
        run = running.finish(60)
    # 300 messages in 30 transactions, every 4th aborted: 23 committed (230 messages), 7 aborted (70).
    assert run.code == 3, run.output[-3000:]
    assert f"{queue}: 1 messages of aborted transactions delivered (of 70 aborted)" in run.output
    row = run.row(queue)
    assert (row["sent"], row["aborted"], row["aborted_delivered"], row["distinct"]) == (300, 70, 1, 231), row
    assert (row["lost"], row["unreceived"], row["unconfirmed"], row["in_flight"], row["duplicated"]) == (0, 0, 0, 0, 0)
    transactions = run.report["transactions"]
    assert transactions == {"committed": 23, "commit_failed": 0, "aborted": 7, "abort_failed": 0,
                            "per_s": transactions["per_s"], "messages_aborted": 70, "aborted_delivered": 1}  # fmt: skip
    assert (run.operation(f"commit {queue}")["count"], run.operation(f"abort {queue}")["count"]) == (23, 7)
    # The broker's own count: it accepted the 230 committed messages and the planted one, and holds none.
    accepted = lambda: broker.counters(queue)["accepted"] - before.get("accepted", 0)  # noqa: E731
    assert wait_for(lambda: accepted() == 231, timeout=COUNTED_S), broker.counters(queue)
    assert broker.counters(queue)["held"] == 0


@pytest.mark.parametrize("broker", on_four("transactions"), indirect=True)
def test_acks_sent_in_transactions_count_once_committed(broker: Broker, destination, tmp_path: Path) -> None:
    queue = destination("queue")
    before = broker.counters(queue)
    run = run_locust(
        "put_get.py", broker.url, "--mq-destination", queue, "--mq-total-messages", "300", "--mq-total-rate", "300",
        "--mq-tx-ack", "10", users=3, seconds=3, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    row = run.row(queue)
    assert (row["sent"], row["distinct"], row["lost"], row["duplicated"], row["redelivered"]) == (300, 300, 0, 0, 0)
    # Two consumers commit every 10 ACKs and what is left at each flush (every second, and at the end).
    commits = run.operation(f"commit-acks {queue}")
    assert commits["errors"] == 0 and 30 <= commits["count"] <= 30 + 2 * 6, commits
    # The broker's own count: every ACK counted (the transactions committed), nothing held back.
    counted = lambda: {k: broker.counters(queue)[k] - before.get(k, 0) for k in ("accepted", "delivered")}  # noqa: E731
    assert wait_for(lambda: counted() == {"accepted": 300, "delivered": 300}, timeout=COUNTED_S), broker.counters(queue)
    assert broker.counters(queue)["held"] == 0
