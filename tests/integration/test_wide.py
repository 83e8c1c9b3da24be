"""One master, 32 and 64 worker processes on this machine's two cores: the barrier, the shared schedule and the
audit hold across every worker, none is lost, and the summary states the master's own cost.

64 workers once all went missing at the spawn: each spent 0.35 CPU-s parsing Locust's option defaults again for
every option of the spawn message (mqusers.wiring.spawncost), 64 at once on two cores, and sent no heartbeat.

The rate is light on purpose (the question is the master's fan-in, not the broker's speed); the broker's
own counters are the truth the merged audit is held against.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.broker_stats import activemq_destination_stats, wait_for
from tests.integration.brokers import started
from tests.integration.locust_runs import run_locust


@pytest.mark.activemq
@pytest.mark.alone  # up to 65 processes on two cores: a neighbouring test would starve the heartbeats
@pytest.mark.parametrize("workers", [32, 64])
def test_a_wide_run_is_exact_with_the_masters_cost_stated(workers: int, destination, tmp_path: Path) -> None:
    broker = started("activemq")
    queue, total = destination("queue"), 6000
    run = run_locust(
        "put_get.py", broker.url, "--processes", str(workers), "--mq-destination", queue, "--mq-consumers",
        str(workers), "--mq-total-rate", "1500", "--mq-total-messages", str(total), users=2 * workers, seconds=40,
        tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-4000:]
    row = run.row(queue)
    assert (row["sent"], row["received"], row["errors"]) == (total, total, 0), row
    for key in ("lost", "unreceived", "unconfirmed", "duplicated", "foreign", "worker_lost"):
        assert row.get(key, 0) == 0, (key, row)
    # Every worker ran and reported: its health, its clock, none lost or marked missing.
    generator = run.report["generator"]
    assert len(generator["processes"]) == workers, sorted(generator["processes"])
    assert len(run.report["clock_offsets"]) == workers
    assert run.report.get("lost_workers", []) == [], run.report["lost_workers"]
    assert "failed to send heartbeat" not in run.output, run.output[-4000:]
    # Each producer sent its share of the one schedule: all 32 producers drew blocks, the sum is exact.
    assert run.operation(f"schedule-lag {queue}")["count"] == total
    # The broker's truth: each message accepted and acknowledged once, nothing left.
    counts: dict[str, int] = {}

    def settled() -> bool:
        counts.update(activemq_destination_stats(broker.port, queue))
        return counts["dequeueCount"] >= total

    wait_for(settled, timeout=10, interval=0.2)
    assert (counts["enqueueCount"], counts["dequeueCount"], counts["size"]) == (total, total, 0), counts
    # The master is part of the generator: its cost over the run in the JSON and the summary's last lines.
    master = generator["master"]
    assert master["seconds"] >= 3 and 0 < master["cpu_percent_mean"] <= master["cpu_percent_max"], master
    assert master["rss_mb_max"] is not None and master["rss_mb_max"] < 1024, master
    assert "master: CPU " in run.output and "% of a core over the run" in run.output, run.output[-3000:]
