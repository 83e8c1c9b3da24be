"""Truth under stress: runs end on time with a report, count only their own messages, judge the generator.

Each test checks a figure against an independent truth: the broker's own counters, messages put on
the destination outside mqusers, a broker frozen with SIGSTOP or killed, a saturated process.
The destructive tests use their own broker (``activemq-stress``), or restart the persistent one.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

import services
from services.base import port_open
from tests.integration.broker_stats import activemq_destination_stats, rabbitmq_queue_names, wait_for
from tests.integration.brokers import Broker, on_four, started
from tests.integration.locust_runs import run_locust, start_locust
from tests.integration.reference_client import publish_outside

HERE = Path(__file__).parent / "locustfiles"


def assert_exact(row: dict, sent: int, received: int) -> None:  # type: ignore[type-arg]
    assert (row["sent"], row["received"], row["errors"]) == (sent, received, 0), row
    for key in ("lost", "unreceived", "unconfirmed", "duplicated", "foreign", "other_run"):
        assert row[key] == 0, (key, row)


@pytest.mark.parametrize("broker", on_four("fixed count"), indirect=True)
@pytest.mark.alone  # unpaced: on a busy machine the broker's flow control blocks them past 1 s, a failure
def test_seed_method_counts_every_message_on_a_queue_and_ends_when_they_are_in(
    broker: Broker, destination, tmp_path: Path
) -> None:
    seed_method(broker, destination("queue"), tmp_path, "queue_balance.py", users=2, consumers=1, fan_out=1)


@pytest.mark.alone  # unpaced: on a busy machine the broker's flow control blocks them past 1 s, a failure
def test_seed_method_counts_every_message_to_3_subscribers_and_ends_when_they_are_in(
    broker: Broker, destination, tmp_path: Path
) -> None:
    seed_method(broker, destination("topic"), tmp_path, "pubsub.py", users=4, consumers=3, fan_out=3)


def seed_method(
    broker: Broker, target: str, tmp_path: Path, locustfile: str, *, users: int, consumers: int, fan_out: int
) -> None:
    """N messages at once, unpaced, default drain: every one arrives, the run ends by itself."""
    total = 20_000
    began = time.monotonic()
    run = run_locust(
        locustfile, broker.url, "--mq-destination", target, "--mq-consumers", str(consumers), "--mq-rate", "0",
        "--mq-total-messages", str(total), users=users, seconds=120, tmp_path=tmp_path,
    )  # fmt: skip
    wall = time.monotonic() - began
    assert run.code == 0, run.output[-3000:]
    row = run.row(target)
    assert_exact(row, total, total * fan_out)
    assert run.report["ended_by"] == "count" and run.report["drain"]["settled"], run.report["drain"]
    assert wall < 90, wall  # not the 120 s of -t: the run ended once everything had arrived
    # The rate is over the first to the last receive, not over start-up and the drain's wait.
    assert 0 < row["receive_span_s"] <= row["span_s"] <= run.report["stopped"] - run.report["started"]
    assert abs(row["receive_rate_msgs"] - row["received"] / row["receive_span_s"]) < 1e-6
    # Per subscription: every topic subscriber got all of them; the queue's share adds up.
    subscriptions = row["by_subscription"]
    assert len(subscriptions) == consumers
    if target.startswith("/topic/"):
        assert all((s["received"], s["lost"], s["unreceived"]) == (total, 0, 0) for s in subscriptions), subscriptions
    assert sum(s["received"] for s in subscriptions) == total * fan_out


def test_a_target_rate_the_run_cannot_reach_is_said(destination, tmp_path: Path) -> None:
    broker = started("activemq")
    queue = destination("queue")
    run = run_locust(
        "put_get.py", broker.url, "--mq-destination", queue, "--mq-consumers", "1", "--mq-total-rate", "5000000",
        "--mq-total-messages", "3000", users=2, seconds=60, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    [line] = [n for n in run.report["notes"] if n.startswith("target rate not reached")]
    assert "--mq-total-rate 5e+06 msg/s asked" in line and "schedule lag p99" in line


@pytest.mark.alone  # unpaced: on a busy machine the broker's flow control blocks them past 1 s, a failure
def test_seed_method_on_a_durable_topic_and_request_reply(destination, tmp_path: Path) -> None:
    broker = started("activemq-persistent")
    topic = destination("topic")
    run = run_locust(
        "durable_topic.py", broker.url, "--mq-destination", topic, "--mq-rate", "0", "--mq-total-messages", "5000",
        users=3, seconds=120, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    assert_exact(run.row(topic), 5000, 10_000)
    queue = destination("queue")
    run = run_locust(
        "request_reply.py", broker.url, "--mq-destination", queue, "--mq-rate", "0", "--mq-total-messages", "2000",
        "--mq-consumers", "1", users=3, seconds=120, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    assert_exact(run.row(queue), 2000, 2000)
    assert run.operation(f"request {queue}")["count"] == 2000
    assert run.report["ended_by"] == "count"


@pytest.mark.parametrize("broker", on_four("leftovers"), indirect=True)
def test_leftovers_of_an_earlier_run_and_foreign_messages_are_counted_apart(
    broker: Broker, destination, tmp_path: Path
) -> None:
    queue = destination("queue")
    earlier = run_locust("put_only.py", broker.url, "--mq-destination", queue, "--mq-messages", "100", users=1,
                         tmp_path=tmp_path)  # fmt: skip
    assert earlier.row(queue)["sent"] == 100, earlier.output[-2000:]
    publish_outside(broker, queue, 200, stamped=False)
    assert wait_for(lambda: broker.counters(queue)["held"] == 300)
    run = run_locust(
        "queue_balance.py", broker.url, "--mq-destination", queue, "--mq-consumers", "1", "--mq-rate", "0",
        "--mq-total-messages", "500", users=2, seconds=60, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]  # neither kind is a Locust failure by default
    row = run.row(queue)
    assert (row["sent"], row["received"], row["foreign"], row["other_run"]) == (500, 500, 200, 100), row
    assert (row["lost"], row["duplicated"], row["reordered"], row["errors"]) == (0, 0, 0, 0), row
    # Only this run's deliveries are latency samples: a leftover or a foreign message would make it 600 or 800.
    assert run.locust_count("receive", queue) == 500
    assert "counted apart" in run.output
    assert wait_for(lambda: broker.counters(queue)["held"] == 0, timeout=15)  # strays were acknowledged too


@pytest.mark.alone  # it freezes the shared broker and times the run's end
def test_a_frozen_broker_cannot_hold_the_run_past_its_bound(destination, tmp_path: Path) -> None:
    broker = started("activemq-stress")
    pid = services.pid("activemq-stress")
    queue = destination("queue")
    running = start_locust(
        "put_get.py", broker.url, "--mq-destination", queue, "--mq-rate", "300", "--mq-timeout", "2",
        "--mq-drain-idle", "1", users=3, seconds=5, tmp_path=tmp_path,
    )  # fmt: skip
    try:
        assert wait_for(lambda: activemq_destination_stats(broker.port, queue)["dequeueCount"] > 100, timeout=15)
        os.kill(pid, signal.SIGSTOP)
        frozen = time.monotonic()
        # -t 5 s, then a drain with nothing arriving (1 s), then DISCONNECTs that time out (2 s): well under 20 s.
        run = running.finish(timeout=20)
        ended = time.monotonic() - frozen
    finally:
        os.kill(pid, signal.SIGCONT)
    assert ended < 15, ended
    row = run.row(queue)
    assert run.report["ended_by"] == "time"
    assert row["received"] > 100 and row["lost"] == 0
    # What the frozen broker holds, or never read, is not "lost": unreceived, or unconfirmed where the
    # connection closed without the broker's DISCONNECT receipt.
    assert row["received"] + row["unreceived"] + row["unconfirmed"] == row["sent"], row
    assert row["unconfirmed"] > 0, row
    assert "Traceback" not in run.output


@pytest.mark.alone  # the blocked producer's run must end within 20 s
def test_producer_flow_control_is_reported_as_blocked_and_the_run_ends(destination, tmp_path: Path) -> None:
    broker = started("activemq-stress")
    queue = f"/queue/mqusers.flow.{os.getpid()}.{time.monotonic_ns()}"  # the broker's flow-controlled names
    began = time.monotonic()
    run = run_locust(
        "put_only.py", broker.url, "--mq-destination", queue, "--mq-messages", "0", "--mq-timeout", "2",
        users=2, seconds=4, tmp_path=tmp_path,
    )  # fmt: skip
    assert time.monotonic() - began < 20
    blocked = run.operation(f"blocked {queue}")
    assert blocked["errors"] == blocked["count"] >= 1
    [process] = run.report["generator"]["processes"].values()
    assert process["blocked"][queue]["episodes"] >= 1 and process["blocked"][queue]["longest_s"] >= 1
    assert any("were blocked by the broker" in note for note in run.report["notes"])
    assert "blocked by the broker (flow control" in run.output  # the live warning
    # Written into socket buffers the broker never read: no DISCONNECT receipt confirmed them, so
    # their outcome is unknown (unconfirmed), and the cross-check against the broker finds no gap.
    enqueued = activemq_destination_stats(broker.port, queue)["enqueueCount"]
    row = run.row(queue)
    assert row["sent"] > enqueued and row["unconfirmed"] >= row["sent"] - enqueued, (row, enqueued)
    assert "unexplained" not in run.output
    # Blocked all along (seen once a second): not a burst rate over the milliseconds the buffers took.
    assert row["span_s"] >= 2, row


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_run_drains_and_writes_its_report(destination, tmp_path: Path, signum: int) -> None:
    broker = started("activemq")
    topic = destination("topic")
    running = start_locust(
        "pubsub.py", broker.url, "--mq-destination", topic, "--mq-consumers", "2", "--mq-rate", "200",
        users=3, seconds=120, tmp_path=tmp_path,
    )  # fmt: skip
    assert wait_for(lambda: activemq_destination_stats(broker.port, topic)["enqueueCount"] > 200, timeout=15)
    running.signal(signum)
    run = running.finish(timeout=30)
    assert run.code == 1, run.output[-3000:]
    assert run.report["ended_by"] == "interrupt"
    row = run.row(topic)
    assert row["sent"] > 200 and row["received"] == 2 * row["sent"], row  # producers stopped first, then drained
    assert "Traceback" not in run.output and "mqusers summary" in run.output


def test_ctrl_c_in_the_terminal_of_a_multi_process_run_still_writes_the_report(destination, tmp_path: Path) -> None:
    """Ctrl-C reaches the master and its --processes workers at once: the run must still end and report."""
    broker = started("activemq")
    topic = destination("topic")
    running = start_locust(
        "pubsub.py", broker.url, "--processes", "2", "--mq-destination", topic, "--mq-consumers", "2",
        "--mq-rate", "200", users=4, seconds=120, tmp_path=tmp_path, group=True,
    )  # fmt: skip
    assert wait_for(lambda: activemq_destination_stats(broker.port, topic)["enqueueCount"] > 200, timeout=20)
    running.signal(signal.SIGINT)  # what the terminal does: the whole process group
    run = running.finish(timeout=30)
    assert run.code == 1, run.output[-3000:]
    assert run.report["ended_by"] == "interrupt" and len(run.report["generator"]["processes"]) == 2
    row = run.row(topic)
    assert row["sent"] > 200 and row["lost"] == 0
    # Every message each of the 2 subscribers expected is accounted for: received, unreceived, in flight (sent
    # as the Ctrl-C reached the subscribers: 2 of 488 on a busy machine) or unconfirmed; none lost. A message
    # sent within a checkpoint (100 ms) of a subscriber's leave is not expected of it, and counts as
    # "unexpected" when it arrives all the same: at 200 msg/s, at most 20 a producer.
    expected = sum(sub["expected"] for sub in row["by_subscription"])
    unexpected = sum(sub["unexpected"] for sub in row["by_subscription"])
    accounted = row["received"] - unexpected + row["unreceived"] + row["in_flight"] + row["unconfirmed"]
    assert accounted == expected, row
    assert unexpected <= 20 * 2 * len(row["by_subscription"]), row
    # A subscriber expects what was sent before it left: the other process's producer may send on for a moment
    # after this process's subscriber left (2 of 438 on a busy machine), never for long.
    assert 2 * row["sent"] - expected <= row["sent"] // 10, row
    assert "Traceback" not in run.output


def test_request_reply_without_a_responder_fails_each_request_and_goes_on(destination, tmp_path: Path) -> None:
    broker = started("activemq")
    queue = destination("queue")
    run = run_locust(
        str(HERE / "lonely_requester.py"), broker.url, "--mq-destination", queue, "--mq-timeout", "0.5",
        users=2, seconds=4, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 1, run.output[-3000:]
    requests = run.operation(f"request {queue}")
    # Each User waits 0.5 s per request and carries on: about 8 each in 4 s, none crashed.
    assert requests["errors"] == requests["count"] >= 2 * 5, requests
    assert "no reply within 0.5s" in run.output and "Traceback" not in run.output


@pytest.mark.alone  # the generator's own verdict (ok, saturated) is about the machine's load
def test_the_generator_judges_itself(destination, tmp_path: Path) -> None:
    broker = started("activemq")
    light = run_locust(
        "pubsub.py", broker.url, "--mq-destination", destination("topic"), "--mq-consumers", "1", "--mq-rate", "100",
        users=2, seconds=5, tmp_path=tmp_path,
    )  # fmt: skip
    assert light.code == 0, light.output[-3000:]
    assert light.report["generator"]["verdict"] == "ok", light.report["generator"]
    busy = run_locust(
        str(HERE / "busy.py"), broker.url, "--mq-destination", destination("topic"), "--mq-fail-on-saturation",
        "true", users=3, seconds=5, tmp_path=tmp_path,
    )  # fmt: skip
    generator = busy.report["generator"]
    assert generator["verdict"] == "saturated", generator
    [process] = generator["processes"].values()
    assert process["loop_lag_ms_max"] >= 40 and process["saturated_s"] >= 3, process
    assert "latency figures of this period are the generator's" in busy.output
    assert busy.code == 3  # the gate


@pytest.mark.parametrize("ack", ["client", "client-individual"])
@pytest.mark.alone  # it kills and restarts the shared activemq-persistent
def test_a_broker_killed_mid_run_loses_no_acknowledged_message(destination, tmp_path: Path, ack: str) -> None:
    broker = started("activemq-persistent")
    queue = destination("queue")
    running = start_locust(
        "queue_balance.py", broker.url, "--mq-destination", queue, "--mq-consumers", "1", "--mq-rate", "200",
        "--mq-persistent", "true", "--mq-receipts", "true", "--mq-ack", ack, "--mq-timeout", "2",
        "--mq-drain-idle", "3", users=3, seconds=9, tmp_path=tmp_path,
    )  # fmt: skip
    try:
        assert wait_for(lambda: activemq_destination_stats(broker.port, queue)["dequeueCount"] > 200, timeout=15)
        killed = services.pid("activemq-persistent")
        os.kill(killed, signal.SIGKILL)
        # Gone, and its ports free (the kernel closes them a moment after the process dies).
        assert wait_for(lambda: not os.path.exists(f"/proc/{killed}") and not port_open(broker.port), timeout=15)
        services.start("activemq-persistent")
        run = running.finish(timeout=60)
    finally:
        services.start("activemq-persistent")
    row = run.row(queue)
    assert row["lost"] == 0, row  # every message whose RECEIPT came arrived
    # Every message is accounted for exactly: arrived once, or unconfirmed / unreceived (none lost).
    distinct = row["received"] - row["duplicated"] - row["after_reconnect"]
    assert distinct + row["unconfirmed"] + row["unreceived"] == row["sent"], row
    assert run.operation(f"connect {broker.url}")["count"] > 3  # everyone reconnected
    assert "Unexpected ACK" not in run.output, run.output[-3000:]
    assert row["duplicated"] == 0, row  # redeliveries after the reconnect are classified as such


@pytest.mark.alone  # it lists every reply queue of the RabbitMQ node
def test_rabbitmq_reply_queues_go_with_their_requesters(destination, tmp_path: Path) -> None:
    broker = started("rabbitmq")
    queue = destination("queue")
    before = set(rabbitmq_queue_names(broker.management_port))
    run = run_locust(
        "request_reply.py", broker.url, "--mq-destination", queue, "--mq-reply-to", "queue", "--mq-messages", "20",
        users=3, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.operation(f"request {queue}")["count"] == 20, run.output[-3000:]
    left = [q for q in set(rabbitmq_queue_names(broker.management_port)) - before if q.startswith("mqusers.reply.")]
    assert left == [], left
