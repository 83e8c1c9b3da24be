"""Selectors: what a consumer's selector leaves is "not selected" and stays on the queue, never lost.

Independent truths: plain stomp.py reads back what the run left on the queue (every message of the
label no selector takes, and nothing else), and a message an outside client re-labels so that the
broker hands it through the selector is caught as a selector violation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.broker_stats import wait_for
from tests.integration.brokers import Broker, on_four, started
from tests.integration.locust_runs import LocustRun, assert_refused_before_load, run_locust
from tests.integration.reference_client import Inbox, connect, read_left

LOCUSTFILE = "selectors.py"
#: Each of the two producers (one per label) sends this many; both consumers select L0. Within
#: ActiveMQ's page of 200: beyond it, what no selector takes stalls a selecting consumer there
#: (docs/semantics.md).
EACH = 100


def selecting_run(broker: Broker, queue: str, tmp_path: Path, seconds: float = 3) -> LocustRun:
    return run_locust(LOCUSTFILE, broker.url, "--mq-destination", queue, "--mq-messages", str(EACH),
                      "--mq-select", "L0", users=4, seconds=seconds, tmp_path=tmp_path)  # fmt: skip


@pytest.mark.parametrize("broker", on_four("selectors"), indirect=True)
def test_a_selector_takes_its_label_and_leaves_the_other_on_the_queue(
    broker: Broker, destination: Callable[[str], str], tmp_path: Path
) -> None:
    queue = destination("queue")
    run = selecting_run(broker, queue, tmp_path)
    assert run.code == 0, run.output[-3000:]
    row = run.row(queue)
    assert (row["sent"], row["received"], row["lost"], row["unreceived"]) == (2 * EACH, EACH, 0, 0), row
    assert (row["not_selected"], row["selector_violations"]) == (EACH, 0), row
    # What the selector left is on the queue: the other label's messages, all of them, from one producer.
    left = read_left(broker, queue, EACH)
    assert {frame.headers["mqlabel"] for frame in left} == {"L1"}
    assert len({frame.headers["mq-producer"] for frame in left}) == 1
    assert sorted(int(frame.headers["mq-seq"]) for frame in left) == list(range(1, EACH + 1))


class Relabeller(Inbox):
    """Takes one message of label L1 (client ack, never acknowledged) and sends it again labelled L0."""

    def __init__(self) -> None:
        super().__init__()
        self.connection: Any = None

    def on_message(self, frame: Any) -> None:
        super().on_message(frame)
        if len(self.frames) == 1:
            headers = {k: v for k, v in frame.headers.items() if k.startswith("mq-")}
            self.connection.send(frame.headers["destination"], frame.body, headers={**headers, "mqlabel": "L0"},
                                 receipt="relabelled")  # fmt: skip


@pytest.mark.activemq
def test_a_delivery_the_selector_does_not_take_is_a_violation_and_fails_the_run(
    destination: Callable[[str], str], tmp_path: Path
) -> None:
    broker, queue = started("activemq"), destination("queue")
    relabeller = Relabeller()
    relabeller.connection = connect(broker.port, relabeller)
    relabeller.connection.subscribe(queue, id="relabel", ack="client", headers={"selector": "mqlabel = 'L1'"})
    runs: list[LocustRun] = []
    thread = threading.Thread(target=lambda: runs.append(selecting_run(broker, queue, tmp_path, seconds=5)))
    thread.start()
    try:
        assert wait_for(lambda: relabeller.receipts, 20), "no L1 message came to relabel"
    finally:
        relabeller.connection.disconnect()  # unacknowledged: the L1 message goes back to the queue
        thread.join(70)
    run = runs[0]
    assert run.code == 3, run.output[-3000:]
    row = run.row(queue)
    # Received counts every delivery, the relabelled one too; the audit counts it apart as well.
    assert (row["received"], row["not_selected"], row["selector_violations"], row["lost"]) == (EACH + 1, EACH, 1, 0)
    assert f"{queue}: 1 deliveries a selector does not take" in run.output
    assert len(read_left(broker, queue, EACH)) == EACH


@pytest.mark.rabbitmq
def test_rabbitmq_has_no_selectors_and_is_refused_before_load(tmp_path: Path) -> None:
    broker = started("rabbitmq")
    run = run_locust(LOCUSTFILE, broker.url, users=4, seconds=2, tmp_path=tmp_path)
    assert_refused_before_load(run, "--mq-select: rabbitmq's STOMP has no selectors")
