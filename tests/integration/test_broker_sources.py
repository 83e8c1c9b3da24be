"""mqusers' broker-metrics sources against the real brokers: what they report equals the brokers' own
counters as ``broker_stats`` reads them independently (stomp.py, requests; no mqusers code).

Every destination gets N messages from plain stomp.py; one consumer with a prefetch of PREFETCH
acknowledges ACKED of them, so the broker has dispatched PREFETCH + ACKED, holds N - ACKED and
waits for PREFETCH acknowledgements: each counter differs from the others.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import stomp

import services
from mqusers.brokers.activemq import ActiveMQStatistics
from mqusers.brokers.jvm import JvmProbe
from mqusers.brokers.model import MetricsError
from mqusers.brokers.rabbitmq import RabbitManagement, management_url, management_urls
from mqusers.options.parsing import parse_broker_url
from mqusers.stomp.client import ClientConfig
from tests.integration import broker_stats
from tests.integration.locust_runs import ROOT

N, PREFETCH, ACKED = 10, 4, 2
#: A queue after N sends to one consumer that has PREFETCH messages pushed ahead and ACKED acknowledged.
QUEUE_FIGURES = {"enqueued": N, "dispatched": PREFETCH + ACKED, "dequeued": ACKED, "unacked": PREFETCH,
                 "depth": N - ACKED, "consumers": 1}  # fmt: skip
ACTIVEMQ = services.PORTS["activemq"]["stomp"]
RABBITMQ = services.PORTS["rabbitmq"]["stomp"]
MANAGEMENT = services.PORTS["rabbitmq"]["management"]
PREFETCH_HEADER = {ACTIVEMQ: "activemq.prefetchSize", RABBITMQ: "prefetch-count"}


def config(port: int, **kwargs: Any) -> ClientConfig:
    return ClientConfig(parse_broker_url(f"stomp://127.0.0.1:{port}"), **kwargs)


def connection(port: int) -> stomp.Connection12:
    conn = stomp.Connection12([("127.0.0.1", port)], heartbeats=(0, 0), vhost="/")
    if port == RABBITMQ:
        conn.connect("guest", "guest", wait=True)
    else:
        conn.connect(wait=True)
    return conn


def send(port: int, destination: str, count: int = N) -> None:
    conn = connection(port)
    for seq in range(count):
        conn.send(destination, f"message {seq}")
    conn.disconnect()  # waits for the DISCONNECT's receipt: every SEND was read


class Consumer(stomp.ConnectionListener):  # type: ignore[misc]
    """Client-individual acks; acknowledges the first ``acks`` deliveries once ``prefetch`` arrived.
    Made once the broker confirmed the subscription, so a topic's messages sent next reach it."""

    def __init__(self, port: int, destination: str, prefetch: int, acks: int, headers: dict[str, str] | None = None):
        self.acks: list[str] = []
        self.prefetch, self.to_ack = prefetch, acks
        self.subscribed = threading.Event()
        self.conn = connection(port)
        self.conn.set_listener("consumer", self)
        headers = {PREFETCH_HEADER[port]: str(prefetch), "receipt": "subscribed", **(headers or {})}
        self.conn.subscribe(destination, id="c", ack="client-individual", headers=headers)
        assert self.subscribed.wait(10), f"no RECEIPT for the SUBSCRIBE to {destination}"

    def on_receipt(self, frame: Any) -> None:
        if frame.headers.get("receipt-id") == "subscribed":
            self.subscribed.set()

    def on_message(self, frame: Any) -> None:
        self.acks.append(frame.headers["ack"])
        if len(self.acks) == self.prefetch:
            for ack in self.acks[: self.to_ack]:
                self.conn.ack(ack)

    def close(self) -> None:
        self.conn.disconnect()


@pytest.fixture
def consumers() -> Iterator[list[Consumer]]:
    made: list[Consumer] = []
    yield made
    for consumer in made:
        consumer.close()


# -------------------------------------------------------------------------- ActiveMQ


def activemq_counters(destination: str) -> dict[str, Any]:
    stats = broker_stats.activemq_destination_stats(ACTIVEMQ, destination)
    keys = {"enqueued": "enqueueCount", "dequeued": "dequeueCount", "dispatched": "dispatchCount",
            "expired": "expiredCount", "depth": "size", "unacked": "inflightCount", "consumers": "consumerCount",
            "producers": "producerCount"}  # fmt: skip
    return {**{ours: stats[key] for ours, key in keys.items()}, "memory_percent": float(stats["memoryPercentUsage"])}


@pytest.fixture
def activemq() -> Iterator[ActiveMQStatistics]:
    services.start("activemq")
    source = ActiveMQStatistics(config(ACTIVEMQ))
    yield source
    source.close()


@pytest.mark.activemq
def test_activemq_queue_figures_equal_the_brokers_counters(
    activemq: ActiveMQStatistics, destination: Callable[[str], str], consumers: list[Consumer]
) -> None:
    queue = destination("queue")
    consumers.append(Consumer(ACTIVEMQ, queue, PREFETCH, ACKED))
    send(ACTIVEMQ, queue)
    broker_stats.readings_agree(
        lambda: dict(activemq.destination(queue)), lambda: activemq_counters(queue), QUEUE_FIGURES
    )


@pytest.mark.activemq
def test_activemq_topic_figures_equal_the_brokers_counters(
    activemq: ActiveMQStatistics, destination: Callable[[str], str], consumers: list[Consumer]
) -> None:
    topic = destination("topic")
    consumers.extend(Consumer(ACTIVEMQ, topic, N, N) for _ in range(2))
    send(ACTIVEMQ, topic)
    # A topic counts a publish once and a delivery per subscriber.
    expected = {"enqueued": N, "dispatched": 2 * N, "dequeued": 2 * N, "consumers": 2}
    broker_stats.readings_agree(lambda: dict(activemq.destination(topic)), lambda: activemq_counters(topic), expected)
    assert activemq.destination(destination("topic")) == {}  # a topic nobody used


@pytest.mark.activemq
@pytest.mark.alone  # broker-wide memory between two reads, moved by other tests' traffic
def test_activemq_broker_figures_are_the_brokers_own(activemq: ActiveMQStatistics) -> None:
    def independent() -> dict[str, Any]:
        [stats] = broker_stats.activemq_statistics(ACTIVEMQ, "/queue/ActiveMQ.Statistics.Broker", replies=1)
        return stats

    before = independent()
    figures = activemq.broker()
    after = independent()
    assert set(figures) == {"memory_percent", "store_percent", "temp_percent", "memory_bytes", "store_bytes",
                            "instance"}  # fmt: skip
    assert 0 <= figures["memory_percent"] <= 100 and 0 <= figures["store_percent"] <= 100
    assert figures["store_bytes"] == 0  # the shared ActiveMQ keeps its messages in memory (persistent="false")
    assert figures["instance"].startswith("ID:") and activemq.broker()["instance"] == figures["instance"]
    # Message memory as stomp.py reads it just before and after (it moves only with messages held).
    low, high = sorted((before["memoryUsage"], after["memoryUsage"]))
    assert low <= figures["memory_bytes"] <= high
    # ... and its percent of services/activemq.py's <memoryUsage limit="2 gb"/>; nothing spooled to temp.
    assert figures["memory_percent"] == int(100 * figures["memory_bytes"] / 2**31) and figures["temp_percent"] == 0


@pytest.mark.activemq
def test_activemq_with_a_wrong_password_is_one_line_without_it() -> None:
    services.start("activemq")
    source = ActiveMQStatistics(config(ACTIVEMQ, user="mqusers", password="not-the-password"), timeout=5)
    with pytest.raises(MetricsError) as refused:
        source.broker()
    assert str(refused.value).startswith(f"ActiveMQ statistics: broker at stomp://127.0.0.1:{ACTIVEMQ} refused")
    assert "not-the-password" not in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.activemq
@pytest.mark.alone  # JVM threads against /proc, and a forced full GC of the shared broker
def test_the_activemq_jvm_figures_are_the_jvms_own() -> None:
    services.start("activemq")
    pid = services.pid("activemq")
    assert pid is not None
    probe = JvmProbe(pid)
    first = probe.sample()
    # The event the figures must show: a full GC, asked of the JVM itself (it also makes time pass for CPU).
    gc = subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, text=True, timeout=60, check=False)
    assert gc.returncode == 0, gc.stdout + gc.stderr
    second = probe.sample()
    tasks = len(os.listdir(f"/proc/{pid}/task"))  # the kernel's own count of the JVM's threads
    command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert b"-Xms512m" in command and b"-Xmx4g" in command  # services/activemq.py's heap bounds
    for figures in (first, second):
        assert 0 < figures["heap_used_mb"] <= figures["heap_committed_mb"]
        assert 512 <= figures["heap_committed_mb"] <= 4096
    assert abs(second["threads"] - tasks) <= 5 and second["threads"] > 10  # threads come and go in between
    assert second["gc_count"] >= first["gc_count"] + 1 and second["gc_seconds"] >= first["gc_seconds"]
    assert 0 <= second["cpu_percent"] <= 100 * (os.cpu_count() or 1)  # of one core, over the GC's time
    with pytest.raises(MetricsError, match=rf"^jstat -gc {os.getpid()} failed \(exit 1\): .*{os.getpid()} not found"):
        JvmProbe(os.getpid()).sample()  # a process, but no JVM


def services_cli(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "services", *argv], capture_output=True, text=True, timeout=180,
                          cwd=ROOT, env={**os.environ, **env})  # fmt: skip


@pytest.mark.activemq
def test_an_activemq_without_the_statistics_plugin_is_one_clear_line(tmp_path: Path) -> None:
    # A broker of its own (own folder, shifted ports, small heap), stopped at the end: the shared one keeps its plugin.
    own = {"MQUSERS_SERVICES_DIR": str(tmp_path / "services"), "MQUSERS_PORT_OFFSET": "1900",
           "MQUSERS_ACTIVEMQ_STATISTICS": "off", "MQUSERS_ACTIVEMQ_HEAP": "512m"}  # fmt: skip
    port = 61613 + 1900
    try:
        started = services_cli("start", "activemq", env=own)
        assert started.returncode == 0, started.stderr
        assert "<statisticsBrokerPlugin/>" not in (tmp_path / "services/activemq/conf/activemq.xml").read_text()
        source = ActiveMQStatistics(config(port), timeout=2)
        with pytest.raises(MetricsError) as missing:
            source.broker()
        assert str(missing.value) == (
            f"ActiveMQ at stomp://127.0.0.1:{port} does not answer ActiveMQ.Statistics.Broker within 2s: enable the "
            "statistics plugin (<statisticsBrokerPlugin/> in activemq.xml's <plugins>)"
        )
        with pytest.raises(MetricsError, match=r"does not answer ActiveMQ\.Statistics\.Destination\.x within 2s"):
            source.destination("/topic/x")
        source.close()
    finally:
        stopped = services_cli("stop", "activemq", env=own)
    assert stopped.stdout.startswith("activemq: stopped"), stopped


# -------------------------------------------------------------------------- RabbitMQ


def rabbitmq_counters(*queues: str) -> dict[str, Any]:
    """broker_stats' figures of ``queues`` (summed when several: a topic's subscriber queues)."""
    each = [broker_stats.rabbitmq_queue_stats(MANAGEMENT, queue) for queue in queues]
    total = {key: sum(stats[key] for stats in each) for key in each[0]}
    figures = {"depth": total["messages"], "unacked": total["messages_unacknowledged"], "consumers": total["consumers"]}
    if len(queues) == 1:
        figures.update(enqueued=total["publish"], dequeued=total["ack"] + total["deliver_no_ack"],
                       dispatched=total["deliver_get"])  # fmt: skip
    return figures


def rabbitmq_rates(*queues: str) -> dict[str, float]:
    """The API's msg/s read here: a topic publishes once to each subscriber's queue (the highest
    publish rate is the topic's), and delivers and acks on every one (their sum)."""
    each = [broker_stats.rabbitmq_queue_rates(MANAGEMENT, queue) for queue in queues]
    return {"publish_rate": max(rates["publish_rate"] for rates in each),
            "deliver_rate": sum(rates["deliver_rate"] for rates in each),
            "ack_rate": sum(rates["ack_rate"] for rates in each)}  # fmt: skip


@pytest.fixture
def rabbit() -> Iterator[RabbitManagement]:
    services.start("rabbitmq")
    source = RabbitManagement(f"http://127.0.0.1:{MANAGEMENT}", "guest", "guest")
    yield source
    source.close()


@pytest.mark.rabbitmq
def test_rabbitmq_queue_figures_equal_the_brokers_counters(
    rabbit: RabbitManagement, destination: Callable[[str], str], consumers: list[Consumer]
) -> None:
    queue = destination("queue")
    consumers.append(Consumer(RABBITMQ, queue, PREFETCH, ACKED))
    send(RABBITMQ, queue)
    name = queue.split("/")[-1]

    def theirs() -> dict[str, Any]:
        return {**rabbitmq_counters(name), **rabbitmq_rates(name)}

    broker_stats.readings_agree(lambda: dict(rabbit.destination(queue)), theirs, QUEUE_FIGURES)
    broker_stats.readings_agree(lambda: dict(rabbit.destination(f"/amq/queue/{name}")), theirs, QUEUE_FIGURES)


@pytest.mark.rabbitmq
def test_rabbitmq_topic_figures_sum_the_subscribers_queues(
    rabbit: RabbitManagement, destination: Callable[[str], str], consumers: list[Consumer]
) -> None:
    topic = destination("topic")
    key = topic.split("/")[-1]
    # Named subscriber queues (x-queue-name), so the independent reader knows which to add up.
    names = [f"{key}.sub{index}" for index in (1, 2)]
    consumers.extend(Consumer(RABBITMQ, topic, PREFETCH, 0, {"x-queue-name": name}) for name in names)
    send(RABBITMQ, topic)
    expected = {"depth": 2 * N, "unacked": 2 * PREFETCH, "consumers": 2}

    def theirs() -> dict[str, Any]:
        return {**rabbitmq_counters(*names), **rabbitmq_rates(*names)}

    broker_stats.readings_agree(lambda: dict(rabbit.destination(topic)), theirs, expected)
    assert rabbit.destination(destination("topic")) == {}  # nobody subscribed


@pytest.mark.rabbitmq
def test_rabbitmq_broker_figures_are_plausible(
    rabbit: RabbitManagement, destination: Callable[[str], str], consumers: list[Consumer]
) -> None:
    consumers.append(Consumer(RABBITMQ, destination("queue"), 1, 0))  # one connection at least
    # The API counts it at its next statistics emission.
    assert broker_stats.wait_for(lambda: rabbit.broker()["connections"] >= 1)
    figures = rabbit.broker()
    assert 0 < figures["memory_percent"] < 100 and figures["memory_bytes"] > 0
    assert 0 < figures["fd_used"] <= figures["fd_total"]
    assert figures["alarms"] == []
    pid = str(services.pid("rabbitmq"))  # the service script's own record of the node's process
    assert figures["instance"].startswith("rabbit") and figures["instance"].endswith(f"/{pid}")


@pytest.mark.rabbitmq
def test_a_guessed_management_api_is_kept_only_when_its_broker_listens_on_the_stomp_port() -> None:
    services.start("rabbitmq")
    first, *others = management_urls(parse_broker_url(f"stomp://127.0.0.1:{RABBITMQ}"))
    ours = RabbitManagement(first, "guest", "guest", stomp_port=RABBITMQ, alternatives=tuple(others))
    assert ours.broker()["instance"].endswith(f"/{services.pid('rabbitmq')}")
    assert ours.url == f"http://127.0.0.1:{MANAGEMENT}"
    ours.close()
    # ActiveMQ's STOMP port: the RabbitMQ answering on the management port is not that broker.
    first, *others = management_urls(parse_broker_url(f"stomp://127.0.0.1:{ACTIVEMQ}"))
    theirs = RabbitManagement(first, "guest", "guest", stomp_port=ACTIVEMQ, alternatives=tuple(others))
    with pytest.raises(MetricsError) as refused:
        theirs.broker()
    line = str(refused.value)
    assert line.startswith(f"no RabbitMQ management API of the broker on STOMP port {ACTIVEMQ}: ")
    web_stomp = services.PORTS["rabbitmq"]["web_stomp"]  # STOMP over WebSocket, a STOMP port of the broker too
    assert f"http://127.0.0.1:{MANAGEMENT} is another broker's (STOMP on {web_stomp}, {RABBITMQ})" in line
    assert line.endswith("give it with --mq-broker-metrics-url") and "\n" not in line
    theirs.close()


@pytest.mark.rabbitmq
def test_rabbitmq_management_refusing_the_password_is_one_line_without_it() -> None:
    services.start("rabbitmq")
    url = management_url(parse_broker_url(f"stomp://127.0.0.1:{RABBITMQ}"), MANAGEMENT)
    source = RabbitManagement(url, "guest", "not-the-password")
    with pytest.raises(MetricsError) as refused:
        source.broker()
    assert str(refused.value) == f"RabbitMQ management at {url} refused the credentials (user guest)"
    source.close()
