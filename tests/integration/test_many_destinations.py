"""A destination pattern: each queue's figures against the broker's own, a thief named, workers sharing it."""

from __future__ import annotations

import csv
import threading
from pathlib import Path

import pytest
import stomp

from tests.integration import broker_stats
from tests.integration.brokers import started
from tests.integration.locust_runs import assert_refused_before_load, run_locust
from tests.integration.reference_client import Thief

QUEUES, MESSAGES, STOLEN, ROBBED = 1_000, 12_000, 3, 7


@pytest.mark.activemq
def test_each_of_a_thousand_queues_matches_the_brokers_counts_and_the_thief_is_the_worst(
    destination, tmp_path: Path
) -> None:
    broker = started("activemq")
    base = destination("queue")
    pattern, robbed = f"{base}.{{0..{QUEUES - 1}}}", f"{base}.{ROBBED}"
    connection = stomp.Connection12([("127.0.0.1", broker.port)])
    thief = Thief(connection, STOLEN)
    connection.set_listener("thief", thief)
    connection.connect(wait=True)
    connection.subscribe(robbed, id="thief", ack="client-individual", headers={"activemq.prefetchSize": "1"})
    # Leave once K are taken: what was pushed to the thief but not ACKed goes back to the queue.
    leaving = threading.Thread(target=lambda: (thief.done.wait(60), connection.disconnect()))
    leaving.start()
    table = tmp_path / "destinations.csv"
    try:
        run = run_locust(
            "put_get.py", broker.url, "--mq-destination", pattern, "--mq-total-messages", str(MESSAGES),
            "--mq-total-rate", "1500", "--mq-report-csv", str(table), users=4, seconds=40, tmp_path=tmp_path,
        )  # fmt: skip
    finally:
        thief.done.set()
        leaving.join()
    assert thief.stolen == STOLEN, run.output[-3000:]
    row = run.row(pattern)
    assert (row["sent"], row["lost"], row["duplicated"], row["in_flight"]) == (MESSAGES, STOLEN, 0, 0)
    # Locust's tables: one row per operation, named after the pattern, none per queue.
    assert run.locust_count("send", pattern) == MESSAGES
    assert f"send {robbed} " not in run.output and f"receive {robbed} " not in run.output

    section = run.report["patterns"][0]
    assert (section["destinations"], section["sent_to"], section["subscribed"]) == (QUEUES, QUEUES, QUEUES)
    assert (section["worst"][0]["destination"], section["worst"][0]["lost"]) == (robbed, STOLEN)
    assert section["with_loss"] == 1 and section["worst"][1]["lost"] == 0

    lines = _lines_against_the_broker(broker.port, base, pattern, table, QUEUES, {robbed: STOLEN})
    assert sum(int(line["sent"]) for line in lines.values()) == MESSAGES


def _lines_against_the_broker(
    port: int, base: str, pattern: str, table: Path, queues: int, stolen: dict[str, int]
) -> dict[str, dict[str, str]]:
    """The CSV's line per queue, each checked against ActiveMQ's own counters (one wildcard query)."""
    with table.open(encoding="utf-8") as handle:
        lines = {line["destination"]: line for line in csv.DictReader(handle)}
    lines.pop(pattern)
    assert len(lines) == queues
    name = base.removeprefix("/queue/")
    replies = broker_stats.activemq_statistics(port, f"/queue/ActiveMQ.Statistics.Destination.{name}.>")
    counters = {r["destinationName"].removeprefix("queue://"): r for r in replies if "destinationName" in r}
    assert len(counters) == queues
    for queue, line in lines.items():
        stats, taken = counters[queue.removeprefix("/queue/")], stolen.get(queue, 0)
        sent, received, lost = int(line["sent"]), int(line["received"]), int(line["lost"])
        assert (sent, received + taken, stats["size"]) == (stats["enqueueCount"], stats["dequeueCount"], 0), queue
        assert lost == taken and int(line["duplicated"]) == 0, queue
    return lines


@pytest.mark.activemq
def test_two_workers_split_the_queues_and_every_one_is_read(destination, tmp_path: Path) -> None:
    broker = started("activemq")
    base = destination("queue")
    pattern, table = f"{base}.{{0..199}}", tmp_path / "destinations.csv"
    run = run_locust(
        "put_get.py", broker.url, "--processes", "2", "--mq-consumers", "2", "--mq-destination", pattern,
        "--mq-total-messages", "4000", "--mq-total-rate", "1000", "--mq-report-csv", str(table),
        users=4, seconds=30, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    section = run.report["patterns"][0]
    assert (section["sent_to"], section["subscribed"], section["with_loss"]) == (200, 200, 0)
    lines = _lines_against_the_broker(broker.port, base, pattern, table, 200, {})
    assert all(int(line["sent"]) == 20 for line in lines.values())  # the shared schedule: 4,000 over 200
    assert all(line["latency_p99_ms"] for line in lines.values())  # each worker shipped its queues' figures


@pytest.mark.activemq
def test_a_pattern_over_more_workers_than_consumers_is_refused_before_load(destination, tmp_path: Path) -> None:
    broker = started("activemq")
    pattern = f"{destination('queue')}.{{0..9}}"
    # A master expecting two workers refuses at start-up (forked --processes workers would outlive it).
    run = run_locust("put_get.py", broker.url, "--master", "--expect-workers", "2", "--mq-consumers", "1",
                     "--mq-destination", pattern, users=4, tmp_path=tmp_path)  # fmt: skip
    assert_refused_before_load(run, "a destination pattern over 2 workers needs a consumer on each")
