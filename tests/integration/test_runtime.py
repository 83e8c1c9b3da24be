"""Heart-beats and distributed runs (master + workers), on real brokers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import services
from tests.integration.broker_stats import wait_for
from tests.integration.brokers import Broker, broker_params, on_four, started
from tests.integration.locust_runs import run_locust, run_skewed


@pytest.mark.parametrize("broker", on_four("heart-beats"), indirect=True)
@pytest.mark.alone  # 200 ms heart-beats must cause no reconnection
def test_heartbeats_keep_quiet_connections_alive(broker: Broker, destination, tmp_path: Path) -> None:
    queue = destination("queue")
    # Nothing to receive for 3 s: only heart-beats cross the wire. 200 ms each way.
    run = run_locust(
        "get_only.py", broker.url, "--mq-destination", queue, "--mq-heartbeats", "200,200", users=2, seconds=3,
        tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 3 and "gate failed: nothing was received" in run.output, run.output[-2000:]  # a drain of nothing
    connects = run.operation(f"connect {broker.url}")
    assert (connects["count"], connects["errors"]) == (2, 0)  # no reconnects
    busy = run_locust(
        "put_get.py", broker.url, "--mq-destination", queue, "--mq-heartbeats", "200,200", "--mq-messages", "500",
        "--mq-rate", "250", users=3, seconds=3, tmp_path=tmp_path,
    )  # fmt: skip
    assert busy.code == 0, busy.output[-2000:]
    assert (busy.row(queue)["received"], busy.operation(f"connect {broker.url}")["count"]) == (500, 3)
    # The broker's own count: what it accepted, it delivered once; nothing left (no connection lost mid-way).
    assert wait_for(lambda: broker.counters(queue)["accepted"] == 500, timeout=10), broker.counters(queue)
    assert broker.counters(queue)["held"] == 0


#: The master's merging, the shared schedule and the clock offsets are the generator's work, not the broker's: on
#: ActiveMQ only (what a broker can break runs on the four: tests/integration/brokers.py's BEHAVIOURS).
GENERATOR_ONLY = broker_params("activemq")


@pytest.mark.parametrize("broker", GENERATOR_ONLY, indirect=True)
def test_master_merges_every_workers_tallies(broker: Broker, destination, tmp_path: Path) -> None:
    queue = destination("queue")
    args = ("--mq-destination", queue, "--mq-messages", "150", "--mq-rate", "150")
    document = run_skewed("queue_balance.py", broker.url, tmp_path, *args, users=5)
    [row] = [r for r in document["destinations"] if r["destination"] == queue]
    # 3 fixed consumers + 2 producers spread over two workers; every count reaches the master.
    assert (row["sent"], row["received"], row["errors"]) == (300, 300, 0)
    assert 0 < row["latency_ms"]["p50"] <= row["latency_ms"]["max"] < 1000


@pytest.mark.parametrize("broker", GENERATOR_ONLY, indirect=True)
@pytest.mark.parametrize("pacing", ["--mq-total-rate=200", "--mq-profile=ramp:100,300,2s"])
def test_shared_schedule_and_start_barrier_across_workers(
    broker: Broker, pacing: str, destination, tmp_path: Path
) -> None:
    """A constant run-wide rate, or a rate profile, shared by the producers of two workers."""
    topic = destination("topic")
    args = ("--mq-destination", topic, "--mq-total-messages", "333", pacing)
    document = run_skewed("pubsub.py", broker.url, tmp_path, *args, users=5)
    [row] = [r for r in document["destinations"] if r["destination"] == topic]
    # Exactly N in total from 3 producers on 2 workers, and no subscriber missed the start.
    assert (row["sent"], row["received"], row["errors"]) == (333, 666, 0)
    assert (row["lost"], row["duplicated"], row["in_flight"]) == (0, 0, 0)
    operations = {op["name"]: op for op in document["operations"]}
    assert operations[f"schedule-lag {topic}"]["count"] == 333
    assert operations[f"receive-due {topic}"]["count"] == 666
    # Both workers share this host's clock: their offsets are noise, not corrected with, so no
    # delivery can read negative (CI once saw 1 when the noise was applied).
    assert [clock["applied_ms"] for clock in document["clock_offsets"].values()] == [0, 0]
    assert row["negative_latencies"] == 0


@pytest.mark.activemq
def test_tls_connection_verified_against_the_brokers_certificate(destination, tmp_path: Path) -> None:
    broker = started("activemq")
    url = f"stomp+ssl://127.0.0.1:{services.PORTS['activemq']['stomp_ssl']}"
    queue = destination("queue")
    trusted = ("--mq-ca-file", str(services.certificate("activemq")))
    run = run_locust(
        "put_get.py", url, *trusted, "--mq-destination", queue, "--mq-messages", "300", "--mq-rate", "300",
        users=3, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-2000:]
    assert (run.row(queue)["sent"], run.row(queue)["received"]) == (300, 300)
    assert broker.counters(queue)["accepted"] == 300
    untrusted = run_locust("put_get.py", url, tmp_path=tmp_path)
    assert untrusted.code == 2
    assert untrusted.output.strip().splitlines()[-1] == (
        f"mqusers: cannot reach the broker at {url} (TLS: self-signed certificate; --mq-ca-file names the CA to trust)"
    )


@pytest.mark.skipif(shutil.which("faketime") is None, reason="needs Debian's faketime (make test installs it)")
@pytest.mark.alone  # latency max < 100 ms once corrected
@pytest.mark.parametrize("broker", GENERATOR_ONLY, indirect=True)
def test_a_skewed_workers_clock_is_estimated_and_corrected(broker: Broker, destination, tmp_path: Path) -> None:
    topic = destination("topic")
    args = ("--mq-destination", topic, "--mq-total-messages", "400", "--mq-total-rate", "200")
    document = run_skewed("pubsub.py", broker.url, tmp_path, *args, users=5, skews=("", "+0.25s"))
    offsets = sorted(document["clock_offsets"].values(), key=lambda c: c["offset_ms"])
    assert len(offsets) == 2
    # The skewed worker is estimated within its error bound (plus faketime's own granularity).
    assert abs(offsets[0]["offset_ms"]) <= offsets[0]["error_ms"] + 1
    assert abs(offsets[1]["offset_ms"] - 250) <= offsets[1]["error_ms"] + 1
    # The unskewed worker's estimate is ping noise: not corrected with; the skewed one is.
    assert (offsets[0]["applied_ms"], offsets[1]["applied_ms"]) == (0, offsets[1]["offset_ms"])
    [row] = [r for r in document["destinations"] if r["destination"] == topic]
    assert (row["sent"], row["received"]) == (400, 800)
    # Uncorrected, every message between the workers would read 250 ms late or 250 ms negative.
    # Corrected, only a delivery faster than the estimate's own error (up to ~1 ms with faketime,
    # above) can still read negative: a few, never many.
    assert row["negative_latencies"] <= row["received"] // 50, (row["negative_latencies"], offsets)
    assert row["latency_ms"]["max"] < 100
