"""An Artemis cluster of three (services/artemis_cluster.py): producers on one node, consumers on others.

Judged by each node's own counters over its Jolokia (tests/integration/artemis_jolokia.py, the tests'
own HTTP code): the nodes the consumers are on acknowledged what mqusers says their consumers received,
nothing is left on any node, and mqusers' audit and its per-broker figures (its own reading of each
node too) say the same.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.artemis_cluster import NAMES
from tests.doccommands import shown_words
from tests.integration import artemis_jolokia as jolokia
from tests.integration import broker_stats as bs
from tests.integration.locust_runs import ROOT, LocustRun, run_locust
from tests.integration.networks import running, url

# alone: it starts three brokers of its own and loads them; beside the parallel phase's tests their JVMs and
# bursts pushed another test's latencies past its bound (test_scenarios' pub/sub, max over 1 s)
pytestmark = pytest.mark.alone

A, B, C = NAMES
MESSAGES, FAN_OUT = 3_000, 1_500
#: The nodes' console (Jolokia) login, for mqusers' own reading of each node.
METRICS = ["--mq-broker-metrics-user", jolokia.USER]


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    with running(NAMES, 90):
        yield


def run(locustfile: str, destination: str, consumers_at: list[str], *args: str, tmp_path: Path) -> LocustRun:
    done = run_locust(
        locustfile, url(A), "--mq-consumer-host", " ".join(map(url, consumers_at)), "--mq-destination", destination,
        *METRICS, *args, users=6, seconds=30, env={"LOCUST_MQ_BROKER_METRICS_PASSWORD": jolokia.PASSWORD},
        tmp_path=tmp_path,
    )  # fmt: skip
    assert done.code == 0, done.output[-3000:]
    return done


def acknowledged(name: str, destination: str) -> int:
    address = jolokia.address_of(destination, name)
    return int(jolokia.read(jolokia.queue_mbean(address, name), name)["MessagesAcknowledged"])


def held(name: str, destination: str) -> int:
    """Messages still on ``name``'s queue of ``destination`` (0 when the node has no such queue)."""
    address = jolokia.address_of(destination, name)
    try:
        return int(jolokia.read(jolokia.queue_mbean(address, name), name)["MessageCount"])
    except AssertionError:  # Jolokia: no such MBean
        return 0


def test_forward_produce_on_one_node_consume_on_another_every_message_once(cluster: None, tmp_path: Path) -> None:
    queue = f"/queue/cluster.forward.{uuid.uuid4().hex[:6]}"
    done = run("put_get.py", queue, [B], "--mq-consumers", "2", "--mq-total-messages", str(MESSAGES),
               "--mq-total-rate", "1000", tmp_path=tmp_path)  # fmt: skip
    row = done.row(queue)
    assert (row["sent"], row["received"], row["distinct"], row["lost"], row["duplicated"]) == (
        MESSAGES, MESSAGES, MESSAGES, 0, 0), done.output[-3000:]  # fmt: skip
    assert bs.wait_for(lambda: acknowledged(B, queue) == MESSAGES, 20), acknowledged(B, queue)
    assert held(A, queue) == held(B, queue) == 0
    [b_doc] = done.report["broker"]["network"]
    assert (b_doc["address"], b_doc["source"]) == (url(B), "artemis"), b_doc
    assert f"broker figures at {url(B)}: its counts agree with mqusers' ({queue}" in " ".join(done.output.split())


def test_spread_competing_consumers_on_two_nodes_each_nodes_share_as_it_counts_it(
    cluster: None, tmp_path: Path
) -> None:
    queue = f"/queue/cluster.spread.{uuid.uuid4().hex[:6]}"
    done = run("queue_balance.py", queue, [A, B], "--mq-consumers", "4", "--mq-total-messages", str(MESSAGES),
               tmp_path=tmp_path)  # fmt: skip
    row = done.row(queue)
    assert (row["sent"], row["received"], row["distinct"], row["lost"], row["duplicated"]) == (
        MESSAGES, MESSAGES, MESSAGES, 0, 0), done.output[-3000:]  # fmt: skip
    at = {b["broker"]: b["received"] for b in row["by_broker"]}
    assert bs.wait_for(lambda: acknowledged(A, queue) + acknowledged(B, queue) == MESSAGES, 20)
    assert (at[url(A)], at[url(B)]) == (acknowledged(A, queue), acknowledged(B, queue))
    assert 0 < at[url(B)] < MESSAGES  # the cluster balanced: some went on to B, some stayed on A


def test_fan_out_a_topics_subscribers_on_three_nodes_each_get_every_message_once(cluster: None, tmp_path: Path) -> None:
    topic = f"/topic/cluster.fanout.{uuid.uuid4().hex[:6]}"
    done = run("pubsub.py", topic, [A, B, C], "--mq-consumers", "3", "--mq-total-messages", str(FAN_OUT),
               tmp_path=tmp_path)  # fmt: skip
    row = done.row(topic)
    assert (row["sent"], row["received"], row["distinct"], row["lost"], row["duplicated"]) == (
        FAN_OUT, 3 * FAN_OUT, 3 * FAN_OUT, 0, 0), done.output[-3000:]  # fmt: skip
    assert [(b["broker"], b["subscriptions"], b["received"]) for b in row["by_broker"]] == [
        (url(name), 1, FAN_OUT) for name in (A, B, C)]  # fmt: skip
    demand = done.operation(f"demand {topic}")
    assert (demand["count"], demand["errors"]) == (2, 0), demand  # B's and C's subscribers waited; A's did not


def test_cluster_compare_takes_a_cluster_as_a_row_and_says_what_its_hop_adds(cluster: None, tmp_path: Path) -> None:
    """docs/matrix.md's Artemis grid, shortened: node a alone, then the cluster of three with the subscriber on c."""
    words = shown_words("mqusers cluster-compare --latency-rate 1000 --config artemis=",
                        {"stomp://127.0.0.1:61763": url(A), "stomp://127.0.0.1:61783": url(C),
                         "=python -m services": f"={sys.executable} -m services"})  # fmt: skip
    # Without its failover run: a kill's figures are test_networks.py's (the same --failover, the same services
    # fail-over --kill); here they would double the test's time.
    kill = words.index(next(word for word in words if word.startswith("artemis3=") and "fail-over" in word))
    del words[kill - 1 : kill + 1]
    command = [sys.executable, "-m", "mqusers.commands.cli", *words[1:], "--schemes", "nonpersistent",
               "--repeats", "1", "--warmup-seconds", "1", "--seconds", "1", "--steady-after", "0",
               "--messages", "100", "--out", str(tmp_path), "--json", str(tmp_path / "cc.json"),
               "--mq-drain-idle", "2"]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    alone, three = json.loads((tmp_path / "cc.json").read_text())["rows"]
    for row in (alone, three):
        [run] = row["latency"]["runs"]
        [figures] = json.loads(Path(run["report"]).read_text())["destinations"]
        assert (figures["lost"], figures["unreceived"]) == (0, 0) and figures["sent"] >= 500
        at = {b["broker"]: b["received"] for b in figures["by_broker"]}
        assert at == ({} if row is alone else {url(C): figures["distinct"]}), at  # the warm-up's too
    assert three["latency"]["hop_p50_ms"] == pytest.approx(three["latency"]["p50_ms"] - alone["latency"]["p50_ms"])
    assert three["failover"] is None
    assert "| artemis3 |" in done.stdout
