"""Artemis's own figures (``--mq-broker-metrics artemis``, Jolokia) against its attributes read here.

``artemis_jolokia`` (the tests' own HTTP code, exact MBean names) is the truth; the arithmetic of
what each test did is the other. Each test makes its queue ANYCAST through the management API
before any STOMP frame names it, so a SEND and a SUBSCRIBE without ``destination-type`` use it,
whatever the dialect sends.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import services
from mqusers.brokers.artemis import ArtemisJolokia, ArtemisJvm, console_urls
from mqusers.options.parsing import parse_broker_url
from services.artemis import PASSWORD, USER
from tests.integration import artemis_jolokia, broker_stats, reference_client
from tests.integration.locust_runs import run_locust

pytestmark = pytest.mark.artemis

FIRST_START_TIMEOUT = 240.0  # a first start downloads the distribution
N, SIZE, ACKED = 20, 2048, 3
#: Bytes beyond which the test's address pages: the first few of N messages of SIZE stay in memory.
PAGE_BEYOND = 8 * 1024
MESSAGES = 2000


@pytest.fixture
def artemis() -> int:
    services.start("artemis", timeout=FIRST_START_TIMEOUT)
    return services.PORTS["artemis"]["stomp"]


def source(stomp_port: int) -> ArtemisJolokia:
    """The source as mqusers makes it without --mq-broker-metrics-url: the console looked for beside STOMP."""
    first, *others = console_urls(parse_broker_url(f"stomp://127.0.0.1:{stomp_port}"))
    return ArtemisJolokia(first, USER, PASSWORD, timeout=5, stomp_port=stomp_port, alternatives=tuple(others))


def gc_counts(pid: int) -> int:
    """Young and full collections so far, read with ``jstat -gc`` here (the collectors JMX reports on JDK 17's G1)."""
    out = subprocess.run(["jstat", "-gc", str(pid)], capture_output=True, text=True, timeout=60, check=True).stdout
    header, values = (line.split() for line in out.strip().splitlines()[:2])
    row = dict(zip(header, values, strict=True))
    return int(float(row["YGC"])) + int(float(row["FGC"]))


def cpu_seconds(pid: int) -> float:
    """The process's user + system CPU so far, from /proc here."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Arrivals(reference_client.Inbox):
    """stomp.py's inbox that says when ``expect`` messages arrived."""

    def __init__(self, expect: int) -> None:
        super().__init__()
        self.expect, self.done = expect, threading.Event()

    def on_message(self, frame: Any) -> None:
        super().on_message(frame)
        if len(self) == self.expect:
            self.done.set()


@pytest.mark.alone  # the JVM's CPU and broker-wide connections and memory, moved by other tests
def test_the_sources_figures_equal_the_brokers_attributes(artemis: int, destination: Any) -> None:
    queue = destination("queue")
    address = artemis_jolokia.address_of(queue)
    artemis_jolokia.make_queue(address, page_beyond=PAGE_BEYOND)
    ours = source(artemis)
    producer = reference_client.connect(artemis)
    for seq in range(N):
        producer.send(queue, "x" * SIZE, headers={"seq": str(seq), "persistent": "true"})
    producer.disconnect()  # waits for the DISCONNECT's receipt: every SEND was read
    queued = artemis_jolokia.queue_mbean(address)
    assert broker_stats.wait_for(lambda: artemis_jolokia.read(queued)["MessageCount"] == N)  # routed, stored
    # The first messages are in memory: one expired (to the expiry address), one removed (killed).
    assert artemis_jolokia.on_queue(address, "expireMessages(java.lang.String)", "seq = '0'") == 1
    assert artemis_jolokia.on_queue(address, "removeMessages(java.lang.String)", "seq = '1'") == 1
    paged = {"enqueued": N, "dequeued": 0, "expired": 1, "killed": 1, "depth": N - 2, "consumers": 0, "paging": 1}
    agreed = broker_stats.readings_agree(
        lambda: dict(ours.destination(queue)), lambda: artemis_jolokia.figures(address), paged
    )
    print(f"artemis figures, mqusers' = the test's own read: {agreed}")
    assert ours.destination(queue)["pages"] >= 1

    acker = Arrivals(N - 2)
    consumer = reference_client.connect(artemis, acker)
    try:
        consumer.subscribe(queue, id="c", ack="client-individual", headers={"consumer-window-size": "-1"})
        assert acker.done.wait(15), f"{len(acker)} of {N - 2} messages arrived"
        for frame in acker.frames[:ACKED]:
            consumer.ack(frame.headers["ack"])
        held = N - 2 - ACKED
        consumed = {"enqueued": N, "dequeued": ACKED, "expired": 1, "killed": 1, "depth": held, "unacked": held,
                    "consumers": 1}  # fmt: skip
        agreed = broker_stats.readings_agree(
            lambda: dict(ours.destination(queue)), lambda: artemis_jolokia.figures(address), consumed
        )
        print(f"artemis figures, mqusers' = the test's own read: {agreed}")

        broker, truth = ours.broker(), artemis_jolokia.read(artemis_jolokia.broker_mbean())
        print(f"artemis broker figures: {broker}")
        assert broker["connections"] == truth["ConnectionCount"] >= 1
        assert broker["memory_bytes"] == truth["AddressMemoryUsage"] > 0
        assert broker["instance"].startswith(truth["NodeID"] + "/")
        assert abs(broker["disk_percent"] - 100 * truth["DiskStoreUsage"]) < 1.0  # the disk's use moves a little
        assert broker["store_percent"] == pytest.approx(broker["disk_percent"] * 100 / truth["MaxDiskUsage"])
        assert broker["alarms"] == []
    finally:
        consumer.disconnect()

    pid = services.pid("artemis")
    before, jvm = gc_counts(pid), ArtemisJvm(ours)
    first, cpu_first, at_first = jvm.sample(), cpu_seconds(pid), time.monotonic()
    time.sleep(1.0)  # a CPU rate needs a window: ours and /proc's over the same second
    cpu_second, at_second, second = cpu_seconds(pid), time.monotonic(), jvm.sample()
    after = gc_counts(pid)
    proc = 100 * (cpu_second - cpu_first) / (at_second - at_first)
    print(f"artemis JVM through Jolokia: {second}; jstat YGC+FGC {before}..{after}; /proc CPU {proc:.1f} %")
    assert "cpu_percent" not in first and abs(second["cpu_percent"] - proc) <= 15, (second["cpu_percent"], proc)
    assert before <= first["gc_count"] <= second["gc_count"] <= after
    assert 0 < second["heap_used_mb"] <= second["heap_committed_mb"]
    threads = int(next(line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                       if line.startswith("Threads:")))  # fmt: skip
    # JMX counts the Java threads; /proc the process's, the JVM's own (GC, compiler) too.
    assert 10 < second["threads"] <= threads, (second["threads"], threads)
    ours.close()


def test_a_queue_runs_figures_in_the_report_equal_the_brokers_counters(
    artemis: int, destination: Any, tmp_path: Path
) -> None:
    queue = destination("queue")
    address = artemis_jolokia.address_of(queue)
    artemis_jolokia.make_queue(address)
    pid = services.pid("artemis")
    gc_before = gc_counts(pid)
    run = run_locust(
        "queue_balance.py", f"stomp://127.0.0.1:{artemis}", "--mq-consumers", "1", "--mq-destination", queue,
        "--mq-ack", "client", "--mq-total-messages", str(MESSAGES), "--mq-total-rate", "1000",
        "--mq-broker-metrics-interval", "0.5", "--mq-broker-metrics-user", USER, users=2, seconds=30,
        env={"LOCUST_MQ_BROKER_METRICS_PASSWORD": PASSWORD}, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    document = run.report["broker"]
    assert document["source"] == "artemis" and document["failures"] == 0, document  # picked by CONNECTED's server
    figures = document["destinations"][queue]
    truth = artemis_jolokia.figures(address)
    print(f"report: {figures}\nread here after the run: {truth}")
    # Counters and depth, which the last reading waited to settle (consumers leaving is not waited for).
    keys = ("enqueued", "dequeued", "depth", "expired", "killed")
    assert {k: figures[k] for k in keys} == {k: truth[k] for k in keys}
    assert [figures[k] for k in keys] == [MESSAGES, MESSAGES, 0, 0, 0] and figures["unacked"] == 0
    assert figures["baseline"] and figures["comparable"]
    assert run.row(queue)["sent"] == MESSAGES == run.row(queue)["received"]
    assert not [n for n in run.report["notes"] if "unexplained" in n]
    assert any("the broker's counts agree with mqusers'" in n for n in run.report["notes"]), run.report["notes"]
    assert f"{queue}" in run.output and "broker " in run.output and PASSWORD not in run.output
    jvm, gc_after = document["jvm"], gc_counts(pid)
    print(f"report's JVM: {jvm}; jstat YGC+FGC {gc_before}..{gc_after}")
    assert 0 < jvm["heap_used_mb"] <= jvm["heap_committed_mb"] and 10 < jvm["threads"] < 1000
    assert gc_before <= jvm["gc_count"] - jvm["gc_count_run"] <= jvm["gc_count"] <= gc_after, jvm
    assert document["broker"]["connections"] >= 0 and document["broker"]["memory_bytes"] >= 0


def test_a_plain_run_on_the_local_artemis_has_the_brokers_figures(
    artemis: int, destination: Any, tmp_path: Path
) -> None:
    """No login given: the console's anonymous login, which the service (--allow-anonymous) takes as its guest. The
    console refused every request without a login (HTTP 403) and the summary read "broker figures: none"."""
    queue = destination("queue")
    artemis_jolokia.make_queue(artemis_jolokia.address_of(queue))
    run = run_locust(
        "put_get.py", f"stomp://127.0.0.1:{artemis}", "--mq-destination", queue, "--mq-messages", "200",
        "--mq-rate", "200", users=3, seconds=4, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    document = run.report["broker"]
    assert document["source"] == "artemis" and not document.get("note"), document
    assert document["destinations"][queue]["enqueued"] == 200 == run.row(queue)["received"]
    assert "broker figures: none" not in run.output
