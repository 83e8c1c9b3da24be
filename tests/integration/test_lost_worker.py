"""A worker SIGKILLed mid-run (master + 2 workers, real ActiveMQ): named, its messages worker-lost, never lost.

What the dead worker did after its last report is unknown to mqusers; the broker's own counters,
read here without mqusers, bound it: more enqueued than mqusers counted sent (its unreported sends),
and the messages the audit calls worker-lost are within what the broker dequeued beyond mqusers'
receipts, plus what is still queued.
"""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mqusers.wiring.lostworkers import MASTER_TIMEOUT_S
from tests.integration import broker_stats
from tests.integration.brokers import started
from tests.integration.locust_runs import LOCUSTFILES, ROOT, free_port

# alone: it times how long the master takes to name a killed worker
pytestmark = [pytest.mark.activemq, pytest.mark.alone]


def test_a_killed_worker_is_named_and_its_messages_are_worker_lost_not_lost(destination: Any, tmp_path: Path) -> None:
    broker = started("activemq")
    queue = destination("queue")
    port, report = free_port(), tmp_path / "master.json"
    locust = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILES / "queue_balance.py")]
    master = subprocess.Popen(
        [*locust, "--master", "--headless", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port),
         "--expect-workers", "2", "-u", "5", "-r", "5", "-t", "8s", "--host", broker.url, "--only-summary",
         "--mq-destination", queue, "--mq-rate", "200", "--mq-max-lost", "0", "--mq-report-json", str(report)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
    )  # fmt: skip
    worker = [*locust, "--worker", "--master-host", "127.0.0.1", "--master-port", str(port)]
    # 3 consumers and 2 producers dealt round-robin: each worker runs both kinds.
    survivor, victim = (subprocess.Popen(worker, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
                        for _ in range(2))  # fmt: skip
    try:
        # The broker's own counters say ~3 s of messages flowed both ways (400 msg/s): each worker has sent
        # the master a report (Locust's every 3 s, from its connect, before the spawn).
        assert broker_stats.wait_for(
            lambda: broker_stats.activemq_destination_stats(broker.port, queue)["dequeueCount"] >= 1200, timeout=20
        )
        victim.kill()  # SIGKILL: no final shipment, no goodbye
        killed = time.monotonic()
        output, _ = master.communicate(timeout=40)
        # ~5 s left of -t, a drain idle for 5 s, the report: nothing waits for a worker Locust marked missing
        # (the final tallies' wait of 15 s did).
        assert time.monotonic() - killed < 20, output[-3000:]
        survivor.wait(timeout=20)
    finally:
        for process in (master, survivor, victim):
            if process.poll() is None:
                process.kill()
    assert master.returncode == 3, output[-3000:]
    document = json.loads(report.read_text())
    [lost] = document["lost_workers"]
    assert lost["reported"]["sent"] > 0 and lost["reported"]["received"] > 0, lost
    assert 0 < lost["last_report_s"] < 8 and lost["worker"] in output
    assert "gate failed: worker " in output and "was lost mid-test" in output
    assert "lost > --mq-max-lost" not in output, output[-3000:]  # not a false loss
    [row] = [r for r in document["destinations"] if r["destination"] == queue]
    assert row["lost"] == 0 and row["unreceived"] == 0 and row["worker_lost"] > 0, row
    truth = broker_stats.activemq_destination_stats(broker.port, queue)
    # The dead worker's sends after its last report are in the broker's count, not in mqusers'.
    assert truth["enqueueCount"] >= row["sent"]
    distinct = row["received"] - row["duplicated"] - row["after_reconnect"]
    # Each worker-lost message is one the dead worker took after its last report (dequeued by the
    # broker, counted by no one here) or one still queued.
    assert row["worker_lost"] <= truth["dequeueCount"] - distinct + truth["size"], (row, truth)
    assert any("a lost worker's" in note for note in document["notes"]) or truth["enqueueCount"] == row["sent"]


def test_a_worker_whose_master_was_killed_stops_within_the_bound_and_exits_1(destination: Any) -> None:
    broker = started("activemq")
    queue = destination("queue")
    port = free_port()
    locust = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILES / "queue_balance.py")]
    master = subprocess.Popen(
        [*locust, "--master", "--headless", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port),
         "--expect-workers", "1", "-u", "5", "-r", "5", "-t", "60s", "--host", broker.url,
         "--mq-destination", queue, "--mq-rate", "100"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT,
    )  # fmt: skip
    worker = subprocess.Popen(
        [*locust, "--worker", "--master-host", "127.0.0.1", "--master-port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
    )  # fmt: skip
    try:
        assert broker_stats.wait_for(
            lambda: broker_stats.activemq_destination_stats(broker.port, queue)["dequeueCount"] >= 100, timeout=20
        )
        master.kill()
        killed = time.monotonic()
        output, _ = worker.communicate(timeout=MASTER_TIMEOUT_S + 15)
        took = time.monotonic() - killed
    finally:
        for process in (master, worker):
            if process.poll() is None:
                process.kill()
    # docs/distributed.md's bound: MASTER_TIMEOUT_S since the last heartbeat, then the Users' end (--mq-timeout, 5 s).
    assert MASTER_TIMEOUT_S - 1.5 <= took < MASTER_TIMEOUT_S + 7, (took, output[-2000:])  # heartbeats: 1 a s
    assert worker.returncode == 1, output[-2000:]
    assert f"no heartbeat from the master for {MASTER_TIMEOUT_S} s" in output


def _master_and_workers(
    broker: Any, queue: str, report: Path, seconds: int, *extra: str
) -> tuple[subprocess.Popen[str], list[subprocess.Popen[bytes]]]:
    """queue_balance.py's master (output piped, JSON report at ``report``) and its two workers, on a free port."""
    port = free_port()
    locust = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILES / "queue_balance.py")]
    master = subprocess.Popen(
        [*locust, "--master", "--headless", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port),
         "--expect-workers", "2", "-u", "5", "-r", "5", "-t", f"{seconds}s", "--host", broker.url, "--only-summary",
         "--mq-destination", queue, "--mq-report-json", str(report), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
    )  # fmt: skip
    worker = [*locust, "--worker", "--master-host", "127.0.0.1", "--master-port", str(port)]
    workers = [subprocess.Popen(worker, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
               for _ in range(2)]  # fmt: skip
    return master, workers


def test_every_worker_missing_ends_the_run_within_seconds_with_one_line(destination: Any, tmp_path: Path) -> None:
    """Both workers stopped (SIGSTOP: alive, silent, as a starved process is): Locust marks them missing and stops
    the test; the master ends the run at once with its report and one line, not at the end of its -t 60 s."""
    broker = started("activemq")
    queue = destination("queue")
    report = tmp_path / "master.json"
    master, workers = _master_and_workers(broker, queue, report, 60, "--mq-rate", "100")
    try:
        assert broker_stats.wait_for(
            # 4 s at 200 msg/s: each worker has sent Locust's report of every 3 s, so the figures are partial, not none.
            lambda: broker_stats.activemq_destination_stats(broker.port, queue)["dequeueCount"] >= 800,
            timeout=20,
        )
        for process in workers:
            process.send_signal(signal.SIGSTOP)
        silenced = time.monotonic()
        output, _ = master.communicate(timeout=40)
        took = time.monotonic() - silenced
    finally:
        for process in (master, *workers):
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.kill()
            process.wait(timeout=10)
    # Locust marks a worker missing after 4 s without a heartbeat; the drain (no worker to wait for), the report.
    assert took < 15, (took, output[-3000:])
    assert master.returncode == 3, output[-3000:]
    [line] = [line for line in output.splitlines() if "every worker went missing" in line]
    assert "s into the test (Locust heard no heartbeat for 4 s from any of 2)" in line, line
    assert "2 of them on this host's" in line and "--processes" in line, line
    document = json.loads(report.read_text())
    assert len(document["lost_workers"]) == 2, document["lost_workers"]
    [row] = [r for r in document["destinations"] if r["destination"] == queue]
    # Their unknown seconds are worker-lost, never lost (none at all when their last reports cover every
    # message).
    assert row["sent"] > 0 and row["lost"] == 0, row


def _wait_for_line(process: subprocess.Popen[str], fragment: str, timeout: float) -> list[str]:
    """The lines ``process`` printed up to the first holding ``fragment`` (an AssertionError past ``timeout``)."""
    assert process.stdout is not None
    lines, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], deadline - time.monotonic())
        line = process.stdout.readline() if ready else ""
        lines.append(line)
        if fragment in line:
            return lines
        if not line and process.poll() is not None:
            break
    raise AssertionError(f"no {fragment!r} within {timeout} s:\n{''.join(lines)[-3000:]}")


def test_a_worker_back_from_missing_rejoins_and_its_figures_are_whole(destination: Any, tmp_path: Path) -> None:
    """One of two workers silent (SIGSTOP) until Locust marks it missing, then resumed: it heals, gets its users
    back, ships its final figures, and the run is exact, with no worker named lost."""
    broker = started("activemq")
    queue = destination("queue")
    report = tmp_path / "master.json"
    master, workers = _master_and_workers(broker, queue, report, 14, "--mq-rate", "100")
    try:
        _wait_for_line(master, "All users spawned", timeout=30)
        workers[0].send_signal(signal.SIGSTOP)
        before = _wait_for_line(master, "failed to send heartbeat, setting state to missing", timeout=15)
        workers[0].send_signal(signal.SIGCONT)
        rest, _ = master.communicate(timeout=60)
        output = "".join(before) + rest
        codes = [process.wait(timeout=20) for process in workers]
    finally:
        for process in (master, *workers):
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.kill()
    assert "self-healed with heartbeat" in output, output[-3000:]
    assert (master.returncode, codes) == (0, [0, 0]), output[-3000:]
    document = json.loads(report.read_text())
    assert document["lost_workers"] == []
    [row] = [r for r in document["destinations"] if r["destination"] == queue]
    assert (row["lost"], row["worker_lost"], row["unreceived"], row["duplicated"]) == (0, 0, 0, 0), row
    assert row["received"] == row["sent"] > 0, row
    truth = broker_stats.activemq_destination_stats(broker.port, queue)
    assert (truth["enqueueCount"], truth["size"]) == (row["sent"], 0), (truth, row)
