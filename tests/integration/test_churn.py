"""Connection churn on real brokers: connections counted by the broker's own figures, the audit exact
across them, and nothing left open by the generator (its file descriptors) or at the broker."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from services import artemis
from tests.integration import artemis_jolokia, broker_stats
from tests.integration.broker_stats import wait_for
from tests.integration.brokers import Broker, on_four
from tests.integration.locust_runs import LocustRun, run_locust

# alone: its checks count the broker's connections, which any other test's clients would add to
pytestmark = pytest.mark.alone

CHURN_PRODUCERS = Path(__file__).parent / "locustfiles" / "churn_producers.py"
#: Scripts and the messages each sends.
SCRIPTS, MESSAGES = 4, 30


def assert_nothing_left_open(run: LocustRun, broker: Broker) -> None:
    """The generator's open files back to their start; the broker holds no connection (kernel's view),
    and RabbitMQ's or Artemis's own count and the one the report read at the end are 0."""
    connections = run.report["connections"]
    assert connections["open_files_start"] == connections["open_files_end"], connections
    assert connections["open_files_start"] > 0
    assert wait_for(lambda: broker_stats.broker_side_connections(broker.port) == 0, timeout=10)
    if broker.name == "rabbitmq":
        assert connections["broker_connections_end"] == 0, connections
        assert wait_for(lambda: broker_stats.rabbitmq_connections(broker.management_port)["open"] == 0)
    elif broker.name == "artemis":
        assert connections["broker_connections_end"] == 0, connections
        count = lambda: artemis_jolokia.read(artemis_jolokia.broker_mbean())["ConnectionCount"]  # noqa: E731
        assert wait_for(lambda: count() == 0), count()
    else:  # ActiveMQ's statistics plugin counts no connections: the report says so rather than guess
        assert connections["broker_connections_end"] is None
        assert "the broker reports no connection count" in " ".join(run.output.split())


def settled_connections(broker: Broker) -> dict[str, int]:
    """RabbitMQ's connection counts once they stopped moving: its statistics lag (by its 500 ms
    interval and more: a handshake just before was seen 1-2 s later), so two readings 2 s apart must agree."""
    readings = [broker_stats.rabbitmq_connections(broker.management_port)]

    def agreed() -> bool:
        readings.append(broker_stats.rabbitmq_connections(broker.management_port))
        return readings[-1] == readings[-2]

    assert wait_for(agreed, timeout=20, interval=2.0), readings
    return readings[-1]


def figures_of(broker: Broker) -> tuple[list[str], dict[str, str]]:
    """What a run needs to read the broker's own figures: Artemis's console user (the local broker's)."""
    if broker.name != "artemis":
        return [], {}
    return ["--mq-broker-metrics-user", artemis.USER], {"LOCUST_MQ_BROKER_METRICS_PASSWORD": artemis.PASSWORD}


def churn_producers(broker: Broker, queue: str, per_connection: int, tmp_path: Path) -> LocustRun:
    args, env = figures_of(broker)
    run = run_locust(
        str(CHURN_PRODUCERS), broker.url, "--mq-destination", queue, "--mq-per-connection", str(per_connection),
        "--mq-messages", str(MESSAGES), "--mq-churn-pause", "0.02", *args, users=SCRIPTS + 1, seconds=5,
        tmp_path=tmp_path, env=env,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    return run


@pytest.mark.parametrize("broker", on_four("connection churn"), indirect=True)
def test_churning_producers_open_and_close_the_connections_the_broker_counts(
    broker: Broker, destination: Callable[[str], str], tmp_path: Path
) -> None:
    queue, per_connection = destination("queue"), 3
    before: dict[str, int] = {}
    if broker.name == "rabbitmq":
        # A run that does not churn first: its connections are the Users' and mqusers' own (the start's
        # check of the broker, the metrics source asking which broker it is); it also lets a connection
        # made before it (the services' readiness handshake, counted late by RabbitMQ) settle.
        steady = churn_producers(broker, destination("queue"), MESSAGES, tmp_path)
        assert steady.report["connections"]["opened"] == SCRIPTS + 1
        before = settled_connections(broker)
    run = churn_producers(broker, queue, per_connection, tmp_path)
    row = run.row(queue)
    assert (row["sent"], row["received"], row["errors"]) == (SCRIPTS * MESSAGES, SCRIPTS * MESSAGES, 0)
    assert (row["lost"], row["duplicated"], row["unconfirmed"], row["in_flight"]) == (0, 0, 0, 0)
    # Each script: MESSAGES / per_connection connections, each closed with the broker's receipt; the reader one.
    churned = SCRIPTS * MESSAGES // per_connection
    connections = run.report["connections"]
    assert (connections["opened"], connections["failed"]) == (churned + 1, 0), connections
    assert (connections["closed"], connections["close_failed"]) == (churned, 0), connections
    assert connections["per_s"] > 0
    disconnect = run.operation(f"disconnect {broker.url}")
    assert disconnect["count"] == churned and 0 < disconnect["latency_ms"]["p50"] < 1000
    assert run.locust_count("connect", broker.url) == churned + 1  # Locust's own table: one row per operation
    assert_nothing_left_open(run, broker)
    if broker.name == "rabbitmq":
        # The broker's own count of connections created: the run's and mqusers' 2 own, no more.
        # (Its connection_closed is no count to hold: it grew by 2 for a handshake that created 1.)
        assert settled_connections(broker)["created"] - before["created"] == churned + 1 + 2


@pytest.mark.parametrize("broker", on_four("connection churn"), indirect=True)
def test_the_churn_scenario_keeps_the_audit_exact_on_both_sides(
    broker: Broker, destination: Callable[[str], str], tmp_path: Path
) -> None:
    queue = destination("queue")
    args, env = figures_of(broker)
    run = run_locust(
        "churn.py", broker.url, "--mq-destination", queue, "--mq-churn-pause", "0.05", *args, users=8, seconds=5,
        tmp_path=tmp_path, env=env,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    row = run.row(queue)
    # The drain waits for a DISCONNECT's RECEIPT, and no producer sends once the run has stopped producing (not even
    # one whose connect was under way): every message arrived, none in doubt.
    assert row["sent"] > 100 and row["received"] == row["sent"], row
    assert (row["unconfirmed"], row["lost"], row["duplicated"], row["unreceived"]) == (0, 0, 0, 0), row
    connections = run.report["connections"]
    # Producers close after every message and consumers after every 10: far more connections than Users.
    assert connections["opened"] > row["sent"] and connections["failed"] == 0, connections
    assert connections["closed"] >= connections["opened"] - 8 and connections["close_failed"] == 0, connections
    assert_nothing_left_open(run, broker)
