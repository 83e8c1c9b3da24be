"""A destination pattern: each queue's figures against the broker's own (ActiveMQ, RabbitMQ, Artemis), a thief named
as the worst with its exact loss, workers sharing the queues."""

from __future__ import annotations

import csv
import threading
from pathlib import Path

import pytest
import requests
import stomp

from tests.integration import artemis_jolokia, broker_stats
from tests.integration.brokers import Broker, broker_params, started
from tests.integration.locust_runs import assert_refused_before_load, run_locust
from tests.integration.reference_client import Thief

QUEUES, MESSAGES, STOLEN, ROBBED = 1_000, 12_000, 3, 7


@pytest.mark.parametrize("broker", broker_params("activemq", "rabbitmq", "artemis"), indirect=True)
def test_each_of_a_thousand_queues_matches_the_brokers_counts_and_the_thief_is_the_worst(
    broker: Broker, destination, tmp_path: Path
) -> None:
    base = destination("queue")
    pattern, robbed = f"{base}.{{0..{QUEUES - 1}}}", f"{base}.{ROBBED}"
    connection = stomp.Connection12([("127.0.0.1", broker.port)], vhost="/")
    thief = Thief(connection, STOLEN)
    connection.set_listener("thief", thief)
    connection.connect("guest", "guest", wait=True) if broker.name == "rabbitmq" else connection.connect(wait=True)
    prefetch = {"activemq.prefetchSize": "1", "prefetch-count": "1"}
    headers = {**prefetch, **broker.routing("SUBSCRIBE", robbed)}
    connection.subscribe(robbed, id="thief", ack="client-individual", headers=headers)
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
    # A lost message fails the run by default, said in its last lines (no --mq-max-lost given).
    assert run.code == 3, run.output[-3000:]
    assert f"gate failed: {robbed}: {STOLEN:,} lost > --mq-max-lost 0" in run.output, run.output[-3000:]
    # Locust's tables: one row per operation, named after the pattern, none per queue.
    assert run.locust_count("send", pattern) == MESSAGES
    assert f"send {robbed} " not in run.output and f"receive {robbed} " not in run.output

    section = run.report["patterns"][0]
    assert (section["destinations"], section["sent_to"], section["subscribed"]) == (QUEUES, QUEUES, QUEUES)
    assert (section["worst"][0]["destination"], section["worst"][0]["lost"]) == (robbed, STOLEN)
    assert section["with_loss"] == 1 and section["worst"][1]["lost"] == 0

    lines = _lines_against_the_broker(broker, base, pattern, table, QUEUES, {robbed: STOLEN})
    assert sum(int(line["sent"]) for line in lines.values()) == MESSAGES


def _lines_against_the_broker(
    broker: Broker, base: str, pattern: str, table: Path, queues: int, stolen: dict[str, int]
) -> dict[str, dict[str, str]]:
    """The CSV's line per queue, each checked against the broker's own counters (one query for all)."""
    with table.open(encoding="utf-8") as handle:
        lines = {line["destination"]: line for line in csv.DictReader(handle)}
    lines.pop(pattern)
    assert len(lines) == queues
    sent = sum(int(line["sent"]) for line in lines.values())
    counters = _counters(broker, base.removeprefix("/queue/"), sent)
    assert len(counters) == queues
    for queue, line in lines.items():
        (accepted, delivered, held), taken = counters[queue.removeprefix("/queue/")], stolen.get(queue, 0)
        received, lost = int(line["received"]), int(line["lost"])
        assert (int(line["sent"]), held) == (accepted, 0), queue
        if taken and broker.name == "rabbitmq":
            # deliver_get also counts the delivery the thief held unacknowledged when it left, delivered again.
            assert received + taken <= delivered <= received + taken + 1, queue
        else:
            assert received + taken == delivered, queue
        assert lost == taken and int(line["duplicated"]) == 0, queue
    return lines


def _counters(broker: Broker, prefix: str, sent: int) -> dict[str, tuple[int, int, int]]:
    """Per queue named ``prefix.N``: (accepted, delivered or acknowledged, held), as the broker counts them.

    ActiveMQ: enqueueCount, dequeueCount (acknowledged) and size from one wildcard statistics query;
    RabbitMQ: publish, deliver_get and messages from one management listing, once its statistics (a
    few seconds behind) have every message published; Artemis: each queue's MessagesAdded,
    MessagesAcknowledged and MessageCount from one Jolokia read of them all.
    """
    if broker.name == "activemq":
        replies = broker_stats.activemq_statistics(broker.port, f"/queue/ActiveMQ.Statistics.Destination.{prefix}.>")
        return {r["destinationName"].removeprefix("queue://"): (r["enqueueCount"], r["dequeueCount"], r["size"])
                for r in replies if "destinationName" in r}  # fmt: skip
    found: dict[str, tuple[int, int, int]] = {}
    if broker.name == "artemis":
        queues = "component=addresses,address=*,subcomponent=queues,routing-type=*,queue=*"
        attributes = ["Address", "MessagesAdded", "MessagesAcknowledged", "MessageCount"]
        read = {"type": "read", "mbean": f"{artemis_jolokia.DOMAIN}:broker=*,{queues}", "attribute": attributes}
        # The address is the destination's name, or without the STOMP acceptor's /queue/ prefix if it has one.
        address = artemis_jolokia.address_of(f"/queue/{prefix}")
        cut = len(address) - len(prefix)
        mine = [v for v in artemis_jolokia.call(read).values() if str(v["Address"]).startswith(address + ".")]
        return {str(v["Address"])[cut:]: (v["MessagesAdded"], v["MessagesAcknowledged"], v["MessageCount"])
                for v in mine}  # fmt: skip

    def settled() -> bool:
        listing = requests.get(f"http://127.0.0.1:{broker.management_port}/api/queues/%2F", auth=("guest", "guest"),
                               params={"columns": "name,messages,message_stats"}, timeout=10).json()  # fmt: skip
        found.clear()
        for queue in listing:
            if queue["name"].startswith(prefix + "."):
                stats = queue.get("message_stats") or {}
                found[queue["name"]] = (stats.get("publish", 0), stats.get("deliver_get", 0), queue["messages"])
        return sum(accepted for accepted, _, _ in found.values()) == sent and not any(h for *_, h in found.values())

    assert broker_stats.wait_for(settled, timeout=30, interval=1.0), f"RabbitMQ's statistics never settled: {found}"
    return found


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
    lines = _lines_against_the_broker(broker, base, pattern, table, 200, {})
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
