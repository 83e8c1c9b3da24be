"""A network of three ActiveMQ Classic brokers (services/network.py): producers on one, consumers elsewhere.

Judged by the brokers' own counters (the statistics plugin, read over a STOMP connection of this
test's): every message sent to A is enqueued on A, forwarded (dequeued there) to where its consumers
are, enqueued there and acknowledged there, once; mqusers' audit and its per-broker figures say the same
from their side.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import services
from tests.doccommands import shown, shown_words
from tests.integration import broker_stats as bs
from tests.integration.brokers import started
from tests.integration.locust_runs import ROOT, assert_refused_before_load, run_locust, run_skewed
from tests.integration.networks import running, start_joined, stop_all, url
from tests.integration.reference_client import Inbox, connect

# alone: it starts three brokers of its own and loads them; beside the parallel phase's tests their JVMs and
# bursts pushed another test's latencies past its bound (test_scenarios' pub/sub, max over 1 s)
pytestmark = pytest.mark.alone

A, B, C = "activemq-net-a", "activemq-net-b", "activemq-net-c"
MESSAGES = 3_000  # docs/topologies.md's --mq-total-messages
FAN_OUT = 1_500  # its pub/sub command's


@pytest.fixture(scope="module")
def network() -> Iterator[None]:
    with running((A, B, C), 60):
        yield


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


def test_a_subscriber_on_a_broker_outside_the_network_fails_the_run_and_nothing_is_sent_past_it(
    network: None, tmp_path: Path
) -> None:
    """The publisher on A, the subscriber on the suite's own ActiveMQ, which no connector joins to A: the network's
    demand never arrives, so the producers wait at the start barrier (as long as a demand may take) and the run's
    end cuts the wait: the demand row's failure says so, nothing was published to be dropped, the run fails."""
    topic, outside = f"/topic/net.outside.{uuid.uuid4().hex[:6]}", started("activemq").url
    run = run_locust(
        "pubsub.py", url(A), "--mq-consumer-host", outside, "--mq-destination", topic, "--mq-consumers", "1",
        "--mq-total-messages", "100", users=2, seconds=4, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code != 0, run.output[-3000:]
    demand = run.operation(f"demand {topic}")
    assert (demand["count"], demand["errors"]) == (1, 1), demand
    said = " ".join(run.output.split())
    assert "into the wait for the network's demand, which had not arrived" in said, said[-3000:]
    assert run.row(topic)["sent"] == 0 and stats(A, topic)["enqueueCount"] <= demand["count"] * 40  # probes only


@pytest.mark.skipif(shutil.which("faketime") is None, reason="needs Debian's faketime (make test installs it)")
def test_latency_across_the_network_between_workers_with_skewed_clocks_is_corrected(
    network: None, tmp_path: Path
) -> None:
    """A master and two workers, one clock 250 ms ahead (libfaketime); the publishers on A, two subscribers on B.
    Every message crosses the network and, for those between the workers, their clocks: the master estimates the
    skewed worker's offset and corrects the latencies by it, so the hop reads as milliseconds, not 250 ms late
    or negative."""
    topic = f"/topic/net.skew.{uuid.uuid4().hex[:6]}"
    args = ("--mq-destination", topic, "--mq-consumer-host", url(B), "--mq-total-messages", "400",
            "--mq-total-rate", "200")  # fmt: skip
    document = run_skewed("pubsub.py", url(A), tmp_path, *args, users=5, skews=("", "+0.25s"))
    skewed = max(document["clock_offsets"].values(), key=lambda c: c["offset_ms"])
    assert abs(skewed["offset_ms"] - 250) <= skewed["error_ms"] + 1 and skewed["applied_ms"] == skewed["offset_ms"]
    [row] = [r for r in document["destinations"] if r["destination"] == topic]
    assert (row["sent"], row["received"], row["lost"], row["duplicated"]) == (400, 800, 0, 0), row
    assert [(b["broker"], b["received"]) for b in row["by_broker"]] == [(url(B), 800)]
    assert row["negative_latencies"] <= row["received"] // 50, row["negative_latencies"]
    assert row["latency_ms"]["max"] < 100, row["latency_ms"]


def restart_network(monkeypatch: pytest.MonkeyPatch, **settings: str) -> None:
    """A, B and C stopped and started again with ``settings`` (MQUSERS_NETWORK_*), joined before it returns."""
    stop_all((A, B, C))
    for variable, value in settings.items():
        monkeypatch.setenv(variable, value)
    start_joined((A, B, C), 60)


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

    It starts the network again without conduit subscriptions: only the test after it, which starts it again as
    it needs it, follows."""
    passed = {}
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
    assert passed == {"true": 2, "false": 4}, passed  # copies of each message: one per broker, one per subscriber


def test_cluster_compare_takes_networks_as_rows_says_what_each_hop_adds_and_what_a_kill_costs(
    network: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/matrix.md's network grid, shortened, on the network in a line (A-B-C): a single broker (A alone), a
    network of two (subscriber on B, one hop) and of three (subscriber on C: B stores and forwards every message),
    B killed and restarted in net2's failover run. Every run of a network's row had its subscriber where
    the row says; each row's paced p50 and p99 are its latency run's own, the hop their difference from the
    single broker's; B's own counts say every message of net3's runs crossed it; the kill is net2's failover
    figures (the subscriber's window), every message sent in that run received, lost or unreceived.

    Last in the module: it starts the network again in a line, which no test after it would expect."""
    restart_network(monkeypatch, MQUSERS_NETWORK_SHAPE="line")
    # As docs/matrix.md's commands: the line set for the start only; B killed and restarted joins it as it is.
    monkeypatch.delenv("MQUSERS_NETWORK_SHAPE")
    words = shown_words("mqusers cluster-compare --latency-rate 1000 --config single=",
                        {"stomp://127.0.0.1:61640": url(A), "stomp://127.0.0.1:61642": url(B),
                         "stomp://127.0.0.1:61644": url(C),
                         "=python -m services": f"={sys.executable} -m services"})  # fmt: skip
    assert words[:2] == ["mqusers", "cluster-compare"]
    # B killed in net2's failover only: killed again after net3's runs, it would forget what they passed through.
    kill = words.index(next(word for word in words if word.startswith("net3=") and "fail-over" in word))
    assert words[kill - 1] == "--failover"
    del words[kill - 1 : kill + 1]
    command = [sys.executable, "-m", "mqusers.commands.cli", *words[1:], "--schemes", "nonpersistent",
               "--repeats", "1", "--warmup-seconds", "1", "--seconds", "1", "--steady-after", "0",
               "--messages", "100", "--failover-seconds", "7", "--fault-at", "2", "--failover-rate", "200",
               "--out", str(tmp_path), "--json", str(tmp_path / "cc.json"), "--mq-drain-idle", "2"]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    single, net2, net3 = rows = json.loads((tmp_path / "cc.json").read_text())["rows"]
    assert [row["consumers"] for row in rows] == ["", url(B), url(C)]
    for row, at in zip(rows, (None, B, C), strict=True):
        [run] = row["latency"]["runs"]
        report = json.loads(Path(run["report"]).read_text())
        [figures] = report["destinations"]
        assert (figures["lost"], figures["unreceived"]) == (0, 0) and figures["sent"] >= 500
        assert (row["latency"]["p50_ms"], row["latency"]["p99_ms"]) == (
            figures["latency_ms"]["p50"], figures["latency_ms"]["p99"])  # fmt: skip
        received = {b["broker"]: b["received"] for b in figures["by_broker"]}
        assert received == ({} if at is None else {url(at): figures["distinct"]}), received  # the warm-up's too
        if at == C:  # two hops: B took every message (and probe) from A and passed every one on to C
            middle = stats(B, figures["destination"])
            assert middle["enqueueCount"] == middle["dequeueCount"] >= figures["distinct"], middle
    for row in (net2, net3):
        assert row["latency"]["hop_p50_ms"] == pytest.approx(row["latency"]["p50_ms"] - single["latency"]["p50_ms"])
    failover = json.loads((tmp_path / "net2-failover.json").read_text())
    [fault] = failover["faults"]
    assert fault["exit_code"] == 0 and "activemq-net-b: killed" in fault["output"], fault
    [figures] = failover["destinations"]
    assert figures["distinct"] + figures["lost"] + figures["unreceived"] == figures["sent"] > 0, figures
    assert net2["failover"]["lost"] == figures["lost"] and net2["failover"]["window_ms"] > 0, net2["failover"]
    assert net3["failover"] is None
    assert "p50 ms at 1,000 msg/s" in done.stdout and "| net3 |" in done.stdout
