"""The broker's own figures in the report (``--mq-broker-metrics``), against its counters read here.

After a fixed-count run on a fresh queue, the broker's enqueued / dequeued mqusers reports equal
what ``broker_stats`` (the tests' own reader, outside mqusers) reads from the broker; a source
that refuses gives one line and the run goes on.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import services
from services.rabbitmq import rabbitmqctl
from tests.integration import broker_stats
from tests.integration.brokers import Broker, broker_params, started
from tests.integration.locust_runs import run_locust

MESSAGES = 2000


def independent(broker: Broker, destination: str) -> dict[str, int]:
    """(enqueued, dequeued, depth) as the broker counts them, read without mqusers."""
    name = destination.split("/")[2]
    if broker.name == "activemq":
        stats = broker_stats.activemq_destination_stats(broker.port, destination)
        return {"enqueued": stats["enqueueCount"], "dequeued": stats["dequeueCount"], "depth": stats["size"]}
    stats = broker_stats.rabbitmq_queue_stats(broker.management_port, name)
    return {
        "enqueued": stats["publish"],
        "dequeued": stats["ack"] + stats["deliver_no_ack"],
        "depth": stats["messages"],
    }


def jstat_gc(pid: int) -> tuple[int, float]:
    """The JVM's collections so far and their seconds, read with ``jstat -gc`` here, not by mqusers."""
    out = subprocess.run(["jstat", "-gc", str(pid)], capture_output=True, text=True, timeout=60, check=True).stdout
    header, values = (line.split() for line in out.strip().splitlines()[:2])
    row = dict(zip(header, values, strict=True))
    return sum(int(float(row[key])) for key in ("YGC", "FGC", "CGC") if key in row), float(row["GCT"])


@pytest.mark.parametrize("name", broker_params("activemq", "rabbitmq"))
def test_the_brokers_figures_equal_its_counters_read_independently(name: str, destination: Any, tmp_path: Path) -> None:
    broker = started(name)
    queue = destination("queue")
    pid = services.pid("activemq") if name == "activemq" else None
    extra = ["--mq-broker-pid", str(pid)] if pid is not None else []
    gc_before = jstat_gc(pid) if pid is not None else (0, 0.0)
    run = run_locust(
        "queue_balance.py", broker.url, "--mq-consumers", "1", "--mq-destination", queue, "--mq-ack", "client",
        "--mq-total-messages", str(MESSAGES), "--mq-total-rate", "1000", "--mq-broker-metrics-interval", "0.5",
        *extra, users=2, seconds=30, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    document = run.report["broker"]
    assert document["source"] == name and document["failures"] == 0, document
    figures = document["destinations"][queue]
    truth: dict[str, int] = {}
    assert broker_stats.wait_for(lambda: truth.update(independent(broker, queue)) or truth["dequeued"] == MESSAGES)
    assert (figures["enqueued"], figures["dequeued"], figures["depth"]) == (
        truth["enqueued"], truth["dequeued"], truth["depth"]) == (MESSAGES, MESSAGES, 0)  # fmt: skip
    assert figures["baseline"] and figures["comparable"]
    assert run.row(queue)["sent"] == MESSAGES and not [n for n in run.report["notes"] if "unexplained" in n]
    assert f"{queue}" in run.output and "broker " in run.output  # the summary's broker table
    if pid is not None:
        (count_before, seconds_before), (count_after, seconds_after) = gc_before, jstat_gc(pid)
        jvm = document["jvm"]
        assert 0 < jvm["heap_used_mb"] <= jvm["heap_committed_mb"] and 512 <= jvm["heap_committed_mb"] <= 4096  # -Xmx4g
        assert 10 < jvm["threads"] < 1000 and 0 <= jvm["cpu_percent"] <= 100 * (os.cpu_count() or 1)
        # The run's collections lie between this test's own readings of the JVM's counters, before and after.
        assert count_before <= jvm["gc_count"] - jvm["gc_count_run"] <= jvm["gc_count"] <= count_after, jvm
        assert seconds_before - 0.001 <= jvm["gc_seconds"] - jvm["gc_seconds_run"] <= jvm["gc_seconds"]
        assert jvm["gc_seconds"] <= seconds_after + 0.001 and jvm["gc_count_run"] >= 0, jvm  # jstat prints ms
    else:
        assert document["broker"]["fd_total"] > 0 and document["broker"]["alarms"] == []


@pytest.mark.rabbitmq
@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--mq-broker-metrics-password", "not-the-password"], "refused the credentials (user guest)"),
        (["--mq-broker-metrics", "activemq"], "not ActiveMQ Classic"),
    ],
)
def test_a_source_that_refuses_is_one_line_and_the_run_goes_on(
    args: list[str], says: str, destination: Any, tmp_path: Path
) -> None:
    broker = started("rabbitmq")
    queue = destination("queue")
    run = run_locust("queue_balance.py", broker.url, "--mq-consumers", "1", "--mq-destination", queue,
                     "--mq-total-messages", "200", "--mq-total-rate", "200", *args, users=2, seconds=20,
                     tmp_path=tmp_path)  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    assert run.row(queue)["received"] == 200
    document = run.report["broker"]
    assert document["source"] is None and says in document["note"]
    [line] = [n for n in run.report["notes"] if n.startswith("broker figures: none")]
    assert says in line and "not-the-password" not in run.output


@pytest.mark.rabbitmq
@pytest.mark.parametrize("processes", [[], ["--processes", "2"]], ids=["local", "master and workers"])
@pytest.mark.alone  # the run must end within 4 s of its last send
def test_time_running_out_while_the_last_broker_reading_settles_still_writes_the_report(
    processes: list[str], destination: Any, tmp_path: Path
) -> None:
    # 300 messages at 150/s end the run after ~2.5 s; its end then waits ~2.5 s for RabbitMQ's
    # counters to settle, and -t 4 s lands in that wait, when Locust quits from another greenlet.
    queue = destination("queue")
    run = run_locust(
        "queue_balance.py", started("rabbitmq").url, "--mq-consumers", "1", "--mq-destination", queue,
        "--mq-total-messages", "300", "--mq-total-rate", "150", *processes, users=2, seconds=4, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0 and run.report, run.output[-3000:]
    assert run.report["ended_by"] == "count" and "--run-time limit reached" in run.output
    assert (run.row(queue)["sent"], run.row(queue)["received"]) == (300, 300)
    assert run.report["stopped"] - run.report["started"] < 4.0  # the broker's settling is not the test's time


def connections(node: Any) -> set[str]:
    """The node's open connections, from the node itself."""
    code, output = rabbitmqctl(node, "list_connections", "-q", "name")
    assert code == 0, output
    return set(output.split("\n")) - {""}


def queue_depth(node: Any, name: str) -> int:
    """The queue's message count from the node itself (the management API's figures lag by seconds)."""
    code, output = rabbitmqctl(node, "list_queues", "-q", "name", "messages")
    assert code == 0, output
    return next(int(n) for q, n in (line.split("\t") for line in output.splitlines() if "\t" in line) if q == name)


@pytest.mark.rabbitmq
@pytest.mark.alone  # it sets the shared RabbitMQ's memory alarm, blocking every publisher
def test_a_memory_alarm_is_reported_and_its_blocked_publishers_still_end_the_run(
    destination: Any, tmp_path: Path
) -> None:
    broker = started("rabbitmq")
    queue = destination("queue")
    node = services.SERVICES["rabbitmq"].ctx()
    limit = broker_stats.rabbitmq_node(broker.management_port)["mem_limit"]
    # A watermark far below what the node uses: RabbitMQ raises its memory alarm and blocks publishers.
    assert rabbitmqctl(node, "set_vm_memory_high_watermark", "absolute", "10MB")[0] == 0
    try:
        assert broker_stats.wait_for(lambda: broker_stats.rabbitmq_node(broker.management_port)["mem_alarm"])
        before = connections(node)
        # Heart-beats off: with them (the default) RabbitMQ held 106 of 6,485 sent once the alarm cleared, the
        # connection it had blocked closed with what it had not read; without them it reads it all.
        run = run_locust(
            "put_only.py", broker.url, "--mq-destination", queue, "--mq-timeout", "2",
            "--mq-broker-metrics-interval", "0.5", "--mq-heartbeats", "0,0", users=2, seconds=4, tmp_path=tmp_path,
        )  # fmt: skip
    finally:
        rabbitmqctl(node, "set_vm_memory_high_watermark", "absolute", str(limit))
        assert broker_stats.wait_for(lambda: not broker_stats.rabbitmq_node(broker.management_port)["mem_alarm"])
    assert run.report, run.output[-3000:]
    assert run.report["broker"]["alarms_seen"] == ["memory"], run.report["broker"]
    assert "the broker raised resource alarms during the run: memory" in run.output
    # Blocked sends are failures, never a hang: the run ends within -t plus the DISCONNECT bound.
    assert run.code == 1 and run.operation(f"blocked {queue}")["errors"] >= 1
    assert run.report["stopped"] - run.report["started"] < 4 + 2 + 5, run.report["notes"]
    row = run.row(queue)
    # Nothing confirmed, nothing read: every send's outcome is unknown, none called lost.
    assert row["sent"] > 0 and (row["unconfirmed"], row["lost"]) == (row["sent"], 0), row
    # Once the alarm clears the broker reads what its blocked connections had written before they
    # closed: exactly the messages mqusers counted as sent. (A burst cut by the run's end once went
    # uncounted: the broker held 32 more than "sent".)
    assert broker_stats.wait_for(lambda: connections(node) <= before, 30, 0.5)
    assert queue_depth(node, queue.split("/")[2]) == row["sent"], row
    assert not [n for n in run.report["notes"] if "unexplained" in n], run.report["notes"]
