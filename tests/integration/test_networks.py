"""A network of three ActiveMQ Classic brokers (services/network.py): producers on one, consumers elsewhere.

Judged by the brokers' own counters (the statistics plugin, read over a STOMP connection of this
test's): every message sent to A is enqueued on A, forwarded (dequeued there) to where its consumers
are, enqueued there and acknowledged there, once; mqusers' audit and its per-broker figures say the same
from their side.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import services
from tests.doccommands import shown, shown_words
from tests.integration import broker_stats as bs
from tests.integration.locust_runs import ROOT, assert_refused_before_load, run_locust
from tests.integration.reference_client import Inbox, connect

# alone: it starts three brokers of its own and loads them; beside the parallel phase's tests their JVMs and
# bursts pushed another test's latencies past its bound (test_scenarios' pub/sub, max over 1 s)
pytestmark = pytest.mark.alone

A, B, C = "activemq-net-a", "activemq-net-b", "activemq-net-c"
MESSAGES = 3_000  # docs/topologies.md's --mq-total-messages
FAN_OUT = 1_500  # its pub/sub command's


def url(name: str) -> str:
    return f"stomp://127.0.0.1:{services.ports(name)['stomp']}"


def bridged(queue: str, timeout: float, to: str = B) -> bool:
    """Probes sent to A, one each half second, until one reaches a consumer on ``to``: the network connector is
    up and forwards on demand."""
    inbox = Inbox()
    consumer = connect(services.ports(to)["stomp"], inbox)
    producer = connect(services.ports(A)["stomp"], Inbox())
    consumer.subscribe(queue, id="1", ack="auto")

    def arrived() -> bool:
        producer.send(queue, "probe")
        return len(inbox) > 0

    try:
        return bs.wait_for(arrived, timeout, interval=0.5)
    finally:
        producer.disconnect()
        consumer.disconnect()


@pytest.fixture(scope="module")
def network() -> Iterator[None]:
    started: list[str] = []
    try:
        # Side by side: their JVMs start in parallel (each start waits for its own readiness).
        with ThreadPoolExecutor(3) as pool:
            starts = {name: pool.submit(services.start, name) for name in (A, B, C)}
        started += [name for name, start in starts.items() if start.exception() is None and start.result()]
        for start in starts.values():
            start.result()  # a start that failed fails the module, once every started one is known
        for to in (B, C):
            assert bridged(f"/queue/net.probe.{uuid.uuid4().hex[:6]}", 60, to), f"no bridge from A to {to} in 60 s"
        yield
    finally:
        for name in reversed(started):
            with contextlib.suppress(services.ServiceError):
                services.stop(name)


def test_forward_produce_on_one_broker_consume_on_the_other_every_message_once(network: None, tmp_path: Path) -> None:
    """docs/topologies.md's command, on a fresh queue, its report here."""
    queue, report = f"/queue/net.forward.{uuid.uuid4().hex[:6]}", tmp_path / "forward.json"
    argv = [*shown("locust -f locustfiles/put_get.py --mq-consumer-host",
                   {"--host": url(A), "--mq-consumer-host": url(B), "--mq-destination": queue,
                    "--mq-report-json": str(report)}), "--only-summary"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=90, cwd=ROOT)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    [row] = [r for r in json.loads(report.read_text())["destinations"] if r["destination"] == queue]
    assert (row["sent"], row["received"], row["distinct"]) == (MESSAGES, MESSAGES, MESSAGES), output[-3000:]
    assert (row["lost"], row["duplicated"], row["unreceived"], row["foreign"]) == (0, 0, 0, 0)
    assert f"(consumers at {url(B)})" in output
    # The brokers' own counts: A took every message and forwarded every one (its dequeues: the bridge's
    # acknowledgements), B took every one from the bridge and delivered every one to mqusers' consumers.
    on_a = lambda: bs.activemq_destination_stats(services.ports(A)["stomp"], queue)  # noqa: E731
    on_b = lambda: bs.activemq_destination_stats(services.ports(B)["stomp"], queue)  # noqa: E731
    assert bs.wait_for(lambda: on_a()["dequeueCount"] == MESSAGES, 20), on_a()
    assert bs.wait_for(lambda: on_b()["dequeueCount"] == MESSAGES, 20), on_b()
    assert (on_a()["enqueueCount"], on_a()["size"]) == (MESSAGES, 0)
    assert (on_b()["enqueueCount"], on_b()["size"]) == (MESSAGES, 0)


def test_a_topic_across_the_network_waits_for_its_demand_and_loses_nothing(network: None, tmp_path: Path) -> None:
    """docs/topologies.md's pub/sub command: two subscribers on B, the publisher on A. Without the wait for the
    network's demand A dropped what was published before its bridge subscribed (976 of 6,000 deliveries).

    Outside truths: a stomp.py subscriber on A counts what was published (it makes no demand across the
    network); B's statistics say both subscribers were delivered everything B was passed (the probes as well)."""
    topic, report = f"/topic/net.fanout.{uuid.uuid4().hex[:6]}", tmp_path / "fanout.json"
    published = Inbox()
    witness = connect(services.ports(A)["stomp"], published)
    witness.subscribe(topic, id="1", ack="auto")
    try:
        argv = [*shown("locust -f locustfiles/pubsub.py --mq-consumer-host",
                       {"--host": url(A), "--mq-consumer-host": url(B), "--mq-destination": topic,
                        "--mq-report-json": str(report)}), "--only-summary"]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, timeout=90, cwd=ROOT)
        output = done.stdout + done.stderr
        assert done.returncode == 0, output[-3000:]
        stamped = lambda: sorted((f.headers["mq-producer"], int(f.headers["mq-seq"]))  # noqa: E731
                                 for f in list(published.frames) if "mq-run" in f.headers)  # fmt: skip
        assert bs.wait_for(lambda: len(stamped()) >= FAN_OUT, 10), len(stamped())
    finally:
        witness.disconnect()
    assert len(set(stamped())) == len(stamped()) == FAN_OUT
    document = json.loads(report.read_text())
    [row] = [r for r in document["destinations"] if r["destination"] == topic]
    assert (row["sent"], row["received"], row["distinct"]) == (FAN_OUT, 2 * FAN_OUT, 2 * FAN_OUT), output[-3000:]
    assert (row["lost"], row["duplicated"], row["unreceived"], row["foreign"]) == (0, 0, 0, 0)
    # Each subscriber timed its wait for the network's demand: the `demand` row, two waits, none failed.
    [demand] = [r for r in document["operations"] if r["name"] == f"demand {topic}"]
    assert (demand["count"], demand["errors"]) == (2, 0), demand
    on_b = lambda: bs.activemq_destination_stats(services.ports(B)["stomp"], topic)  # noqa: E731
    assert bs.wait_for(lambda: on_b()["dequeueCount"] == 2 * on_b()["enqueueCount"], 20), on_b()
    assert on_b()["enqueueCount"] >= FAN_OUT + 2, on_b()  # every message, and each subscriber's own probe
    # mqusers' own reading of B agrees with its audit, the probes counted as the brokers' messages; on A it finds
    # the witness: A dequeued what it passed on to B (B's own count) and, beyond it, exactly what the witness took.
    said = " ".join(output.split())  # the summary's lines wrap
    assert f"broker figures at {url(B)}: its counts agree with mqusers' ({topic}" in said, output[-3000:]
    taken = len(published.frames)  # the probes too: they were sent to A
    assert f"{taken:,} unexplained (another consumer on this destination?)" in said, output[-3000:]


def stats(name: str, destination: str) -> dict[str, int]:
    return bs.activemq_destination_stats(services.ports(name)["stomp"], destination)


def test_spread_competing_consumers_on_two_brokers_each_brokers_share_as_the_brokers_count_it(
    network: None, tmp_path: Path
) -> None:
    """docs/topologies.md's spread: producers on A; two consumers on A, two on B. Each broker's share in mqusers'
    figures is what the brokers counted: B's consumers took what A passed on to B, A's the rest."""
    queue, report = f"/queue/net.spread.{uuid.uuid4().hex[:6]}", tmp_path / "spread.json"
    argv = [*shown("locust -f locustfiles/queue_balance.py --mq-consumer-host",
                   {"--host": url(A), "--mq-consumer-host": f"{url(A)} {url(B)}", "--mq-destination": queue,
                    "--mq-report-json": str(report)}), "--only-summary"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=90, cwd=ROOT)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    document = json.loads(report.read_text())
    [row] = [r for r in document["destinations"] if r["destination"] == queue]
    assert (row["sent"], row["received"], row["distinct"], row["lost"], row["duplicated"]) == (
        MESSAGES, MESSAGES, MESSAGES, 0, 0), output[-3000:]  # fmt: skip
    at = {b["broker"]: b for b in row["by_broker"]}
    assert set(at) == {url(A), url(B)} and at[url(A)]["subscriptions"] == at[url(B)]["subscriptions"] == 2
    assert at[url(A)]["received"] + at[url(B)]["received"] == MESSAGES
    assert bs.wait_for(lambda: stats(A, queue)["dequeueCount"] == MESSAGES, 20), stats(A, queue)
    assert bs.wait_for(lambda: stats(B, queue)["dequeueCount"] == stats(B, queue)["enqueueCount"], 20)
    passed_on = stats(B, queue)["enqueueCount"]
    assert 0 < passed_on < MESSAGES, passed_on  # the network balanced: some went on to B, some stayed on A
    assert (at[url(B)]["received"], at[url(A)]["received"]) == (passed_on, MESSAGES - passed_on)
    assert f"{queue} {url(B)}" in output  # the summary's per-broker table
    # mqusers read B's own figures too, and they say the same as the test's reading of B.
    [b_doc] = document["broker"]["network"]
    assert b_doc["address"] == url(B) and b_doc["source"] == "activemq", b_doc
    assert (b_doc["destinations"][queue]["enqueued"], b_doc["destinations"][queue]["dequeued"]) == (
        passed_on, passed_on), b_doc["destinations"][queue]  # fmt: skip
    assert f"broker figures at {url(B)}: its counts agree with mqusers' ({queue}" in " ".join(output.split())


def test_fan_out_a_topics_subscribers_on_three_brokers_each_get_every_message_once(
    network: None, tmp_path: Path
) -> None:
    """docs/topologies.md's fan-out: the publisher on A, a subscriber on each of A, B and C. Each gets all 1,500
    once; B and C each delivered to their subscriber every message the network passed them."""
    topic, report = f"/topic/net.fanout3.{uuid.uuid4().hex[:6]}", tmp_path / "fanout3.json"
    every = f"{url(A)} {url(B)} {url(C)}"
    argv = [*shown("locust -f locustfiles/pubsub.py --mq-consumers 3",
                   {"--host": url(A), "--mq-consumer-host": every, "--mq-destination": topic,
                    "--mq-report-json": str(report)}), "--only-summary"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=90, cwd=ROOT)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    [row] = [r for r in json.loads(report.read_text())["destinations"] if r["destination"] == topic]
    assert (row["sent"], row["received"], row["distinct"], row["lost"], row["duplicated"]) == (
        FAN_OUT, 3 * FAN_OUT, 3 * FAN_OUT, 0, 0), output[-3000:]  # fmt: skip
    assert [(b["broker"], b["subscriptions"], b["received"], b["duplicated"]) for b in row["by_broker"]] == [
        (url(name), 1, FAN_OUT, 0) for name in (A, B, C)]  # fmt: skip
    for name in (B, C):  # the probes as well, which the subscriber takes and sets apart
        assert bs.wait_for(lambda n=name: stats(n, topic)["dequeueCount"] == stats(n, topic)["enqueueCount"], 20)
        assert stats(name, topic)["enqueueCount"] > FAN_OUT, (name, stats(name, topic))


def test_a_consumer_host_that_does_not_answer_stops_the_run_before_any_load(network: None, tmp_path: Path) -> None:
    queue = f"/queue/net.refused.{uuid.uuid4().hex[:6]}"
    run = run_locust(
        "put_get.py", url(A), "--mq-consumer-host", "stomp://127.0.0.1:1", "--mq-destination", queue,
        "--mq-total-messages", "10", users=2, seconds=5, tmp_path=tmp_path,
    )  # fmt: skip
    assert_refused_before_load(run, "cannot reach the broker at stomp://127.0.0.1:1")
    assert bs.activemq_destination_stats(services.ports(A)["stomp"], queue)["enqueueCount"] == 0


def test_cluster_compare_takes_a_network_as_a_row_and_says_what_its_hop_adds(network: None, tmp_path: Path) -> None:
    """docs/matrix.md's network grid, shortened: a single broker (A alone) and a network of two (subscribers on B).
    Every run of the network's row had its subscriber on B; each row's paced p50 and p99 are its latency run's
    own, read from that run's report, and the hop their difference."""
    words = shown_words("mqusers cluster-compare --latency-rate 1000 --config single=",
                        {"stomp://127.0.0.1:61640": url(A), "stomp://127.0.0.1:61642": url(B)})  # fmt: skip
    assert words[:2] == ["mqusers", "cluster-compare"]
    command = [sys.executable, "-m", "mqusers.commands.cli", *words[1:], "--latency-rate", "500", "--schemes",
               "nonpersistent", "--repeats", "1", "--warmup-seconds", "1", "--seconds", "2", "--steady-after", "0.5",
               "--messages", "100", "--out", str(tmp_path), "--json", str(tmp_path / "cc.json"),
               "--mq-drain-idle", "1"]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    single, net2 = json.loads((tmp_path / "cc.json").read_text())["rows"]
    assert (single["consumers"], net2["consumers"]) == ("", url(B))
    for row in (single, net2):
        [run] = row["latency"]["runs"]
        report = json.loads(Path(run["report"]).read_text())
        [figures] = report["destinations"]
        assert (figures["lost"], figures["unreceived"]) == (0, 0) and figures["sent"] >= 500
        assert (row["latency"]["p50_ms"], row["latency"]["p99_ms"]) == (
            figures["latency_ms"]["p50"], figures["latency_ms"]["p99"])  # fmt: skip
        at = {b["broker"]: b["received"] for b in figures["by_broker"]}
        assert at == ({} if row is single else {url(B): figures["distinct"]}), at  # the warm-up's too
    assert net2["latency"]["hop_p50_ms"] == pytest.approx(net2["latency"]["p50_ms"] - single["latency"]["p50_ms"])
    assert "p50 ms at 500 msg/s" in done.stdout and "| net2 |" in done.stdout


def test_a_consumers_broker_killed_mid_run_costs_exactly_what_it_held_and_the_rest_arrives_after(
    network: None, tmp_path: Path
) -> None:
    """Producers on A, consumers on B; B is killed (SIGKILL) 2 s in and started again 2 s later (``--mq-fault``).

    What A passed on and B had not delivered when it died is gone (these brokers keep no store); what A held
    meanwhile is passed on once its bridge is back. The brokers' truth: A enqueued every message, kept none,
    and dequeued (passed on) exactly what mqusers' consumers received plus what mqusers counts as lost or
    unreceived. Runs last: B comes back, but with counters started again."""
    queue = f"/queue/net.kill.{uuid.uuid4().hex[:6]}"
    restart = f"{sys.executable} -c \"import services; services.start('{B}')\""
    run = run_locust(
        "put_get.py", url(A), "--mq-consumer-host", url(B), "--mq-destination", queue, "--mq-consumers", "2",
        "--mq-total-messages", str(MESSAGES), "--mq-total-rate", "500", "--mq-drain-idle", "15",
        "--mq-fault", f"2s:kill -KILL {services.pid(B)}", "--mq-fault", f"4s:{restart}",
        users=4, seconds=40, tmp_path=tmp_path,
    )  # fmt: skip
    row = run.row(queue)
    gone = row["lost"] + row["unreceived"]
    # Lost messages fail the run (3); else B's refused connects while it was down are the run's failures (1).
    assert run.code == (3 if row["lost"] else 1), run.output[-3000:]
    assert row["sent"] == MESSAGES and row["duplicated"] == 0, run.output[-3000:]
    assert bs.wait_for(lambda: stats(A, queue)["size"] == 0, 20), stats(A, queue)
    on_a = stats(A, queue)
    assert on_a["enqueueCount"] == MESSAGES
    assert on_a["dequeueCount"] == row["distinct"] + gone, (on_a, row)
    assert row["distinct"] + gone == MESSAGES
    outages = (run.report.get("failover") or {}).get("destinations") or []
    assert any(o["outages"] >= 1 for o in outages), run.report.get("failover")  # the consumers' window, said
    print(f"B killed: {gone:,} of {MESSAGES:,} gone with it, {row['distinct']:,} received")


def test_a_locustfile_whose_classes_name_their_own_brokers_runs_across_the_network(
    network: None, tmp_path: Path
) -> None:
    """Each side names its own ``host``: producers A, consumers B (no --mq-consumer-host); B delivered them all."""
    queue = f"/queue/net.hosts.{uuid.uuid4().hex[:6]}"
    locustfile = tmp_path / "own_hosts.py"
    locustfile.write_text(
        "from mqusers import StompConsumerUser, StompProducerUser\n\n\n"
        f"class Getter(StompConsumerUser):\n    host = {url(B)!r}\n    destination = {queue!r}\n"
        "    fixed_count = 1\n\n\n"
        f"class Putter(StompProducerUser):\n    host = {url(A)!r}\n    destination = {queue!r}\n"
    )  # fmt: skip
    run = run_locust(str(locustfile), "stomp://127.0.0.1:1", "--mq-total-messages", "500", users=2, seconds=30,
                     tmp_path=tmp_path)  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    row = run.row(queue)
    assert (row["sent"], row["distinct"], row["lost"]) == (500, 500, 0)
    assert [(b["broker"], b["received"]) for b in row["by_broker"]] == [(url(B), 500)]
    assert bs.wait_for(lambda: stats(B, queue)["dequeueCount"] == 500, 20), stats(B, queue)


def restart_network(monkeypatch: pytest.MonkeyPatch, **settings: str) -> None:
    """A, B and C stopped and started again with ``settings`` (MQUSERS_NETWORK_*), bridged before it returns."""
    for name in (A, B, C):
        services.stop(name)
    for variable, value in settings.items():
        monkeypatch.setenv(variable, value)
    with ThreadPoolExecutor(3) as pool:
        for start in [pool.submit(services.start, name) for name in (A, B, C)]:
            start.result()
    for to in (B, C):
        assert bridged(f"/queue/net.probe.{uuid.uuid4().hex[:6]}", 60, to), f"no bridge from A to {to} in 60 s"


def two_on_each(topic: str, tmp_path: Path) -> tuple[dict[str, Any], str]:
    """The publisher on A, two subscribers on each of B and C: the run's row and its console."""
    tmp_path.mkdir()
    run = run_locust(
        "pubsub.py", url(A), "--mq-consumer-host", f"{url(B)} {url(C)}", "--mq-consumers", "4",
        "--mq-destination", topic, "--mq-total-messages", str(FAN_OUT), users=5, seconds=30, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    return run.row(topic), " ".join(run.output.split())


def test_conduit_subscriptions_pass_a_topic_on_once_per_broker_and_without_them_once_per_subscriber(
    network: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two subscribers on each of B and C. With conduit subscriptions (the default) A passes each message on once
    to each broker; without, once per remote subscriber. Either way each subscriber gets every message once (5.17's
    subscriptions drop the extra copies the brokers document as duplicates), and mqusers' cross-check holds A's
    dequeued count against what B and C enqueued: its line agrees in both, where received alone would not.

    Last in the module: it restarts the network without conduit subscriptions, then as the fixture had it."""
    passed = {}
    try:
        for conduit in ("true", "false"):
            if conduit == "false":
                restart_network(monkeypatch, MQUSERS_NETWORK_CONDUIT="false")
            topic = f"/topic/net.conduit.{conduit}.{uuid.uuid4().hex[:6]}"
            row, said = two_on_each(topic, tmp_path / conduit)
            assert (row["received"], row["distinct"], row["lost"], row["duplicated"]) == (
                4 * FAN_OUT, 4 * FAN_OUT, 0, 0), said[-3000:]  # fmt: skip
            assert [(b["broker"], b["received"]) for b in row["by_broker"]] == [(url(B), 2 * FAN_OUT),
                                                                                (url(C), 2 * FAN_OUT)]  # fmt: skip
            assert bs.wait_for(lambda t=topic: stats(A, t)["dequeueCount"] == sum(
                stats(n, t)["enqueueCount"] for n in (B, C)), 20), [stats(n, topic) for n in (A, B, C)]  # fmt: skip
            # What A passed on, less the probes (each counted at most once per remote subscription).
            copies = stats(A, topic)["dequeueCount"]
            passed[conduit] = next(k for k in (2, 4) if k * FAN_OUT <= copies <= k * FAN_OUT + 4 * row["probes_sent"])
            assert ("broker figures: the producers' broker's counts agree with mqusers' "
                    f"({topic}: enqueued against sent, dequeued against what was received there and what the other "
                    "brokers enqueued)") in said, said[-3000:]  # fmt: skip
    finally:
        monkeypatch.delenv("MQUSERS_NETWORK_CONDUIT", raising=False)
        restart_network(monkeypatch)
    assert passed == {"true": 2, "false": 4}, passed  # copies of each message: one per broker, one per subscriber
