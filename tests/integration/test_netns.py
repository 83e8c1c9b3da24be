"""Real distributed runs across network namespaces: "hosts" on one machine.

    mqnTAG-b   198.18.N.1  ActiveMQ (services/ with MQUSERS_NETNS, MQUSERS_BIND_HOST)
    mqnTAG-m   198.18.N.2  locust --master --headless
    mqnTAG-w1  198.18.N.3  locust --worker, MQ_ROLE=producer (producers only)
    mqnTAG-w2  198.18.N.4  locust --worker, MQ_ROLE=consumer (consumers only)
    mqnTAG-w3..w5          locust -f - --worker --processes 2, each behind a 20 ms each-way relay to the master

In the first run every message crosses from one worker's namespace through the broker's to the
other's; the second is docs/distributed.md's "Workers on several hosts" with a long link to the
master (the kernel here has no netem: delayline.py delays in user space). The broker runs once
for the module from its own MQUSERS_SERVICES_DIR, so the default local brokers on 127.0.0.1 are
never touched (inside its namespace the default ports are free). See netns.py for the network and
locustfiles/split_roles.py for how producers and consumers land on one worker each.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import services
from tests.doccommands import shown
from tests.integration import broker_stats
from tests.integration.locust_runs import ROOT
from tests.integration.netns import Network, network_or_skip, unavailable_reason

_UNAVAILABLE = unavailable_reason()
pytestmark = [
    pytest.mark.netns,
    pytest.mark.activemq,
    pytest.mark.skipif(_UNAVAILABLE is not None, reason=f"netns: {_UNAVAILABLE}"),
]

LOCUSTFILE = Path(__file__).parent / "locustfiles" / "split_roles.py"
ROLES = {"w1": "producer", "w2": "consumer"}  # worker host -> MQ_ROLE
MASTER_PORT = 5557  # Locust's default; the master's namespace has nothing else
REMOTE = ["w3", "w4", "w5"]  # worker hosts each behind a long link to the master


@pytest.fixture(scope="module")
def network() -> Iterator[Network]:
    with network_or_skip(["b", "m", *ROLES, *REMOTE]) as net:
        yield net


@dataclass(frozen=True)
class NamespacedBroker:
    host: str
    port: int
    netns: str

    @property
    def url(self) -> str:
        return f"stomp://{self.host}:{self.port}"

    def counters(self, destination: str) -> dict[str, int]:
        """The broker's own statistics, asked from the root namespace (it reaches the bridge)."""
        return broker_stats.activemq_destination_stats(self.port, destination, host=self.host)


@pytest.fixture(scope="module")
def broker(network: Network, tmp_path_factory: pytest.TempPathFactory) -> Iterator[NamespacedBroker]:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MQUSERS_SERVICES_DIR", str(tmp_path_factory.mktemp("services")))
        env.setenv("MQUSERS_BIND_HOST", network.address("b"))
        env.setenv("MQUSERS_NETNS", network.name("b"))
        services.start("activemq")
        try:
            yield NamespacedBroker(network.address("b"), services.ports("activemq")["stomp"], network.name("b"))
        finally:
            services.stop("activemq")  # the network's teardown would kill it anyway


@dataclass
class DistributedRun:
    """What one run produced: the master's JSON report and the broker's counters, for assertions."""

    code: int
    output: str  # the master's
    workers: dict[str, str]  # worker host -> its output
    report: dict[str, Any]
    broker: dict[str, int]
    expected: int  # messages the producers were told to send
    seconds: float  # wall time of the Locust processes

    def row(self, destination: str) -> dict[str, Any]:
        rows: list[dict[str, Any]] = [r for r in self.report.get("destinations", []) if r["destination"] == destination]
        assert rows, f"no summary row for {destination}; master output:\n{self.output[-3000:]}"
        return rows[0]

    def operation(self, name: str) -> dict[str, Any]:
        rows: list[dict[str, Any]] = [r for r in self.report.get("operations", []) if r["name"] == name]
        assert rows, f"no operation {name!r}; master output:\n{self.output[-3000:]}"
        return rows[0]


def run_distributed(
    net: Network,
    broker: NamespacedBroker,
    destination: str,
    tmp_path: Path,
    *,
    per_worker: int = 2,
    messages: int = 250,
    rate: float = 125,
    seconds: float = 6,
    extra: Sequence[str] = (),
) -> DistributedRun:
    """Master in ``m``, one worker per ROLES entry; each producer sends ``messages`` at ``rate``/s."""
    locust = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE)]
    report, users = tmp_path / "master.json", str(per_worker * len(ROLES))
    env = {key: value for key, value in os.environ.items() if not key.startswith(("MQUSERS_", "LOCUST_"))}
    began = time.monotonic()
    logs = {role: open(tmp_path / f"{role}.log", "w+") for role in ["m", *ROLES]}  # noqa: SIM115
    try:
        master = net.popen(
            "m",
            [*locust, "--master", "--headless", "--master-bind-host", net.address("m"),
             "--master-bind-port", str(MASTER_PORT), "--expect-workers", str(len(ROLES)),
             "--expect-workers-max-wait", "30", "-u", users, "-r", users, "-t", f"{seconds}s",
             "--host", broker.url, "--only-summary", "--mq-destination", destination,
             "--mq-messages", str(messages), "--mq-rate", str(rate), "--mq-report-json", str(report), *extra],
            stdout=logs["m"], stderr=subprocess.STDOUT, cwd=ROOT, env=env,
        )  # fmt: skip
        worker = [*locust, "--worker", "--master-host", net.address("m"), "--master-port", str(MASTER_PORT)]
        workers = [
            net.popen(host, worker, stdout=logs[host], stderr=subprocess.STDOUT, cwd=ROOT, env={**env, "MQ_ROLE": role})
            for host, role in ROLES.items()
        ]
        code = master.wait(timeout=seconds + 60)
        for proc in workers:
            proc.wait(timeout=30)
        seconds_taken = time.monotonic() - began
        outputs = {}
        for role, log in logs.items():
            log.seek(0)
            outputs[role] = log.read()
    finally:
        for log in logs.values():
            log.close()
    expected = per_worker * messages
    counts: dict[str, int] = {}

    def settled() -> bool:
        # The broker's counters lag its clients (see broker_stats); wait until every ACK counted.
        counts.update(broker.counters(destination))
        return counts["enqueueCount"] >= expected and counts["dequeueCount"] >= expected

    broker_stats.wait_for(settled, timeout=10, interval=0.2)
    document = json.loads(report.read_text()) if report.exists() else {}
    workers_out = {host: outputs[host] for host in ROLES}
    return DistributedRun(code, outputs["m"], workers_out, document, dict(counts), expected, seconds_taken)


def test_producers_on_one_worker_consumers_on_another(
    network: Network, broker: NamespacedBroker, tmp_path: Path
) -> None:
    queue = f"/queue/mqusers.netns.{network.tag}"
    run = run_distributed(network, broker, queue, tmp_path)
    assert run.code == 0, run.output[-3000:]
    for host, role in ROLES.items():
        base = "StompProducerUser" if role == "producer" else "StompConsumerUser"
        assert f"split_roles: MQ_ROLE={role}: Peer is a {base}" in run.workers[host], run.workers[host][-3000:]
    # 2 producers on w1 x 250 messages, 2 competing consumers on w2: each message exactly once.
    row = run.row(queue)
    assert (row["sent"], row["received"], row["errors"]) == (run.expected, run.expected, 0), row
    assert row.get("negative_latencies", 0) == 0  # one machine, one clock
    latency = row["latency_ms"]
    assert 0 < latency["p50"] <= latency["p99"] <= latency["max"] < 1000, latency
    assert (run.operation(f"connect {broker.url}")["count"], run.operation(f"subscribe {queue}")["count"]) == (4, 2)
    # The broker's own truth: accepted, delivered and acknowledged each message once; nothing left.
    counts = run.broker
    assert (counts["enqueueCount"], counts["dispatchCount"], counts["dequeueCount"], counts["size"]) == (
        run.expected,
        run.expected,
        run.expected,
        0,
    ), counts


#: One way between each remote worker and the master (the broker link is direct): a 40 ms round trip.
DELAY_MS = 20
DELAYLINE = Path(__file__).parent / "delayline.py"
#: docs/distributed.md's "Workers on several hosts", run with these values in place of the page's.
SHORTER = {"--expect-workers": "6", "--expect-workers-max-wait": "40", "-u": "12", "-r": "12", "-t": "60s",
           "--mq-consumers": "6", "--mq-total-rate": "600"}  # fmt: skip


@pytest.mark.alone  # ten Locust processes; beside other tests' load, late sends read as the link's (CI: p99 115 ms)
def test_workers_on_three_hosts_behind_a_long_link_to_the_master(
    network: Network, broker: NamespacedBroker, tmp_path: Path
) -> None:
    """docs/distributed.md's several hosts: two worker processes per host take the locustfile from the master
    (``-f -``) over a 40 ms round trip; the barrier, the shared schedule's block draws and the final shipments
    cross it."""
    queue, total, report = f"/queue/mqusers.remote.{network.tag}", 3000, tmp_path / "run.json"
    master_values = {**SHORTER, "--host": broker.url, "--mq-report-json": str(report)}
    master_argv = [*shown("locust -f locustfiles/put_get.py --master", master_values), "--mq-destination", queue,
                   "--mq-total-messages", str(total), "--only-summary"]  # fmt: skip
    worker_argv = shown("locust -f - --worker", {"--master-host": "127.0.0.1"})  # each host's relay to the master
    env = {key: value for key, value in os.environ.items() if not key.startswith(("MQUSERS_", "LOCUST_"))}
    logs = {role: tmp_path / f"{role}.log" for role in ["m", *REMOTE]}
    handles = {role: open(path, "w") for role, path in logs.items()}  # noqa: SIM115
    try:
        master = network.popen("m", master_argv, stdout=handles["m"], stderr=subprocess.STDOUT, cwd=ROOT, env=env)
        workers = []
        for role in REMOTE:
            line = network.popen(
                role, [sys.executable, "-I", str(DELAYLINE), "127.0.0.1", str(MASTER_PORT), network.address("m"),
                       str(MASTER_PORT), str(DELAY_MS), "120"], stdout=subprocess.PIPE,
            )  # fmt: skip
            assert line.stdout is not None and line.stdout.readline().strip() == b"listening"
            home = tmp_path / role  # no locustfile here: it comes from the master
            home.mkdir()
            # Locust writes the master's locustfile to the temporary folder; real hosts each have their own, and
            # namespaces share this machine's, where one host's write would truncate the file another is importing.
            workers.append(network.popen(role, worker_argv, stdout=handles[role], stderr=subprocess.STDOUT, cwd=home,
                                         env={**env, "TMPDIR": str(home)}))  # fmt: skip
        code = master.wait(timeout=120)
        worker_codes = [proc.wait(timeout=30) for proc in workers]
    finally:
        for handle in handles.values():
            handle.close()
    output = logs["m"].read_text()
    # Every host's log, and the master's without its once-a-second "Waiting for workers" (it hid the rest).
    told = "\n".join(line for line in output.splitlines() if "Waiting for workers to be ready" not in line)
    tails = "".join(f"\n== {role}\n{logs[role].read_text()[-1500:]}" for role in REMOTE)
    assert (code, worker_codes) == (0, [0, 0, 0]), told[-4000:] + tails
    document = json.loads(report.read_text())
    [row] = [r for r in document["destinations"] if r["destination"] == queue]
    assert (row["sent"], row["received"], row["errors"]) == (total, total, 0), row
    assert (row["lost"], row["duplicated"], row["unreceived"]) == (0, 0, 0), row
    counts: dict[str, int] = {}

    def settled() -> bool:
        counts.update(broker.counters(queue))
        return counts["dequeueCount"] >= total

    broker_stats.wait_for(settled, timeout=10, interval=0.2)
    assert (counts["enqueueCount"], counts["dequeueCount"], counts["size"]) == (total, total, 0), counts
    # Each worker process's clock read across the long link: the round trip shows in the estimate's error bound,
    # and on one machine (one clock) the offset stays inside it, so nothing is corrected.
    clocks = document["clock_offsets"]
    assert len(clocks) == 6, clocks
    for clock in clocks.values():
        assert 2 * DELAY_MS <= clock["rtt_ms"] < 2 * DELAY_MS + 30, clocks
        assert clock["error_ms"] >= DELAY_MS and clock["applied_ms"] == 0, clocks
    # The shared schedule's blocks are drawn ahead of need: the link's round trip never makes a send late.
    operations = {op["name"]: op for op in document["operations"]}
    lag = operations[f"schedule-lag {queue}"]
    assert lag["count"] == total and lag["latency_ms"]["p99"] < 2 * DELAY_MS, lag
    # The master's own cost is the generator's: in the summary, the JSON's generator section.
    master_figures = document["generator"]["master"]
    assert master_figures["seconds"] >= 3 and 0 < master_figures["cpu_percent_mean"] < 100, master_figures
    assert "master: CPU " in output, output[-3000:]
