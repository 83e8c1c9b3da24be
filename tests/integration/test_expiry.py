"""Expiry on ActiveMQ 5.17.2, Artemis and RabbitMQ: the audit's expired against the broker's, and a planted violation.

locustfiles/expiry.py builds a backlog for 1.5 s of messages that live 500 ms, then drains it: what
waited longer the broker drops. The independent truth of how many: the broker's own expired count
(ActiveMQ's statistics plugin, Artemis's Jolokia), or RabbitMQ's, which has none, what it accepted less
what it delivered and still holds (its management API). An outside client (stomp.py) takes one of the
run's messages during the build and sends it back with the run's headers, its send time 10 s earlier and
no expiry header: the broker delivers it, and its time-to-live says it had expired.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import stomp

from tests.integration import artemis_jolokia, broker_stats
from tests.integration.brokers import Broker, broker_params
from tests.integration.locust_runs import ROOT, start_locust
from tests.integration.reference_client import Inbox

# alone: a 500 ms time to live with 50 ms of grace: a late delivery on a busy machine is expired
pytestmark = pytest.mark.alone

#: The run's headers the planted copy keeps (its expiry header, if any, it does not).
_AUDIT_HEADERS = ("mq-run", "mq-producer", "mq-seq", "mq-size", "mq-crc32")
#: How much older the planted copy says it is than the message it copies.
_OLDER_NS = 10_000_000_000


def expired_by_broker(broker: Broker, queue: str) -> int:
    """The broker's count of ``queue``'s expired messages; RabbitMQ's, which counts none, derived: accepted less
    acknowledged less held (its deliveries count one the outside client held unacknowledged and gave back)."""
    if broker.name == "activemq":
        return int(broker_stats.activemq_destination_stats(broker.port, queue)["expiredCount"])
    if broker.name == "artemis":
        return int(artemis_jolokia.figures(artemis_jolokia.address_of(queue))["expired"])
    stats = broker_stats.rabbitmq_queue_stats(broker.management_port, queue.removeprefix("/queue/"))
    return stats["publish"] - stats["ack"] - stats["deliver_no_ack"] - stats["messages"]


def plant_late_copy(broker: Broker, queue: str) -> dict[str, Any]:
    """Take one of the run's messages off ``queue`` (acknowledged) and send it back with its audit headers, sent
    ``_OLDER_NS`` earlier and without an expiry: the broker will deliver it. Returns the copy's headers."""
    rabbit = broker.name == "rabbitmq"
    connection = stomp.Connection12([("127.0.0.1", broker.port)], heartbeats=(0, 0), vhost="/", auto_decode=False)
    inbox = Inbox()
    connection.set_listener("inbox", inbox)
    connection.connect(*(("guest", "guest") if rabbit else ()), wait=True)
    window = {"activemq": {"activemq.prefetchSize": "1"}, "rabbitmq": {"prefetch-count": "1"}}.get(broker.name, {})
    connection.subscribe(queue, id="thief", ack="client-individual",
                         headers={**window, **broker.routing("SUBSCRIBE", queue)})  # fmt: skip
    try:
        assert broker_stats.wait_for(lambda: len(inbox) >= 1, 30), "no message of the run reached the outside client"
        frame = inbox.frames[0]
        connection.ack(frame.headers["ack"])
        connection.unsubscribe("thief")
        headers = {key: frame.headers[key] for key in _AUDIT_HEADERS}
        headers["mq-sent-ns"] = str(int(frame.headers["mq-sent-ns"]) - _OLDER_NS)
        connection.send(queue, frame.body, headers={**headers, **broker.routing("SEND", queue)}, receipt="planted")
        assert broker_stats.wait_for(lambda: inbox.receipts, 10), "the broker did not confirm the planted copy"
    finally:
        connection.disconnect()
    return headers


@pytest.mark.parametrize("broker", broker_params("activemq", "artemis", "rabbitmq"), indirect=True)
def test_the_audits_expired_is_the_brokers_and_a_late_delivery_fails_the_run(
    broker: Broker, destination: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue, jolokia = destination("queue"), []
    if broker.name == "artemis":  # the report's own broker figures too
        jolokia = ["--mq-broker-metrics-user", artemis_jolokia.USER]
        monkeypatch.setenv("LOCUST_MQ_BROKER_METRICS_PASSWORD", artemis_jolokia.PASSWORD)
    running = start_locust(
        str(ROOT / "locustfiles" / "expiry.py"), broker.url, "--mq-destination", queue, "--mq-ttl", "500ms",
        "--mq-backlog-seconds", "1.5", "--mq-rate", "200", "--mq-drain-idle", "2", *jolokia, users=2, seconds=4,
        tmp_path=tmp_path,
    )  # fmt: skip
    try:
        planted = plant_late_copy(broker, queue)
    except AssertionError as error:
        raise AssertionError(f"{error}\n{running.finish(60).output[-3000:]}") from None
    run = running.finish(60)
    row = run.row(queue)
    # The copy the broker delivered: its seq received (once: its original went to the outside client), late.
    assert row["delivered_expired"] == 1, run.output[-3000:]
    assert run.code == 3 and f"{queue}: 1 delivered after their expiry (--mq-ttl)" in run.output, run.output[-3000:]
    assert planted["mq-run"] == run.report["run_id"]
    # Every message sent arrived or expired: none lost, none still waited for.
    assert (row["lost"], row["unreceived"], row["in_flight"], row["unconfirmed"]) == (0, 0, 0, 0), row
    assert row["expired"] >= 50 and row["distinct"] + row["expired"] == row["sent"], row
    # The independent truth: the broker's count, once it has dropped them all (a wait for the event, bounded).
    broker_stats.wait_for(lambda: expired_by_broker(broker, queue) == row["expired"], 15)
    assert expired_by_broker(broker, queue) == row["expired"], run.output[-3000:]
    if broker.name == "rabbitmq":
        assert f"{queue}: the broker reports no expired count; the {row['expired']:,} expired" in run.output
    else:  # the report's own cross-check: the broker's figure it read, and no disagreement
        assert run.report["broker"]["destinations"][queue]["expired"] == row["expired"], run.output[-3000:]
        assert "mqusers counted" not in run.output, run.output[-3000:]
