"""STOMP over WebSocket: a locustfile over ws:// on each broker, audited exactly and counted by the broker
itself; wss:// verified against the broker's own certificate (Classic 6's wss connector)."""

from __future__ import annotations

from pathlib import Path

import pytest

import services
from services import artemis
from tests.integration.brokers import Broker, on_four, started
from tests.integration.locust_runs import run_locust

# alone: 200 ms heart-beats must cause no reconnection
pytestmark = pytest.mark.alone


def assert_audited_and_counted(broker: Broker, run, queue: str, sent: int) -> None:
    assert run.code == 0, run.output[-3000:]
    row = run.row(queue)
    assert (row["sent"], row["received"], row["errors"]) == (sent, sent, 0), run.output[-2000:]
    assert (row["lost"], row["duplicated"], row["in_flight"], row["negative_latencies"]) == (0, 0, 0, 0)
    assert 0 < row["latency_ms"]["p50"] <= row["latency_ms"]["max"] < 1000, row["latency_ms"]
    # The broker's own count, read over plain STOMP or its management API (not over the WebSocket).
    counters = broker.counters(queue)
    assert (counters["accepted"], counters["delivered"], counters["held"]) == (sent, sent, 0), counters


@pytest.mark.parametrize("broker", on_four("STOMP over WebSocket"), indirect=True)
def test_a_locustfile_over_websocket_is_audited_exactly_and_the_broker_counts_the_same(
    broker: Broker, destination, tmp_path: Path
) -> None:
    queue = destination("queue")
    extra, env = [], {}
    if broker.name == "artemis":  # its Jolokia wants the console's user, which the anonymous STOMP login is not
        extra, env = ["--mq-broker-metrics-user", artemis.USER], {"LOCUST_MQ_BROKER_METRICS_PASSWORD": artemis.PASSWORD}
    run = run_locust(
        "queue_balance.py", broker.ws_url, "--mq-destination", queue, "--mq-messages", "200", "--mq-rate", "200",
        "--mq-heartbeats", "500,500", *extra, users=5, env=env, tmp_path=tmp_path,
    )  # fmt: skip
    assert_audited_and_counted(broker, run, queue, 400)
    # Every User connected over the WebSocket (the connects' event is named by the broker address), and
    # mqusers found the broker's own figures from that address (RabbitMQ's management API beside web_stomp)
    # and they agree with its audit.
    assert run.operation(f"connect {broker.ws_url}")["count"] == 5
    assert "broker figures: the broker's counts agree with mqusers'" in run.output, run.output[-2000:]
    # Quiet for 3 s: only heart-beats cross, as WebSocket messages both ways (200 ms each); a side that
    # missed the other's would drop the connection and mqusers would reconnect.
    quiet = run_locust(
        "get_only.py", broker.ws_url, "--mq-destination", destination("queue"), "--mq-heartbeats", "200,200",
        users=2, seconds=3, tmp_path=tmp_path,
    )  # fmt: skip
    assert quiet.code == 3 and "gate failed: nothing was received" in quiet.output, quiet.output[-2000:]
    connects = quiet.operation(f"connect {broker.ws_url}")
    assert (connects["count"], connects["errors"]) == (2, 0), quiet.output[-2000:]


@pytest.mark.activemq6
def test_wss_is_verified_against_the_brokers_certificate(destination, tmp_path: Path) -> None:
    broker = started("activemq6")
    url = f"wss://127.0.0.1:{services.PORTS['activemq6']['wss']}/"
    queue = destination("queue")
    trusted = ("--mq-ca-file", str(services.certificate("activemq6")))
    run = run_locust(
        "put_get.py", url, *trusted, "--mq-destination", queue, "--mq-messages", "300", "--mq-rate", "300",
        users=2, tmp_path=tmp_path,
    )  # fmt: skip
    assert_audited_and_counted(broker, run, queue, 300)
    untrusted = run_locust("put_get.py", url, tmp_path=tmp_path)
    assert untrusted.code == 2
    assert untrusted.output.strip().splitlines()[-1] == (
        f"mqusers: cannot reach the broker at {url} (TLS: self-signed certificate; --mq-ca-file names the CA to trust)"
    )
