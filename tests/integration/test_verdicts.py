"""The first screen's figures against independent truths: due times, rates, the generator's verdict.

Messages are read back with plain stomp.py (not mqusers) to check their own stamps; the generator's
verdict is judged on runs with a planted fault: a CPU hog beside the run (contended), a broker
frozen with SIGSTOP (broker-slow); the saturated generator is ``test_stress.py``'s.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import stomp

import services
from mqusers.run.verdicts import LAG_LATE_MS
from tests.integration.broker_stats import activemq_destination_stats, wait_for
from tests.integration.brokers import Broker, started
from tests.integration.locust_runs import ROOT, locust_command, run_locust, start_locust

# alone: rates within 5 %, a pinned CPU hog, a frozen broker: the verdicts are about load
pytestmark = pytest.mark.alone


class Collector(stomp.ConnectionListener):  # type: ignore[misc]
    def __init__(self, count: int):
        self.headers: list[dict[str, str]] = []
        self.count, self.done = count, threading.Event()

    def on_message(self, frame: Any) -> None:
        self.headers.append(frame.headers)
        if len(self.headers) >= self.count:
            self.done.set()


def read_back(broker: Broker, queue: str, count: int) -> list[dict[str, str]]:
    """Every message left on ``queue`` (at least ``count``, waited for up to 30 s), by plain stomp.py."""
    connection = stomp.Connection12([("127.0.0.1", broker.port)], vhost="/")
    collector = Collector(count)
    connection.set_listener("collector", collector)
    connection.connect(wait=True)
    connection.subscribe(queue, id="collector", ack="auto")
    try:
        assert collector.done.wait(30), f"{len(collector.headers)} of {count} messages read back"
    finally:
        connection.disconnect()
    return collector.headers


def test_paced_messages_never_leave_before_their_due_time_and_put_only_rates_are_over_the_sends(
    destination, tmp_path: Path
) -> None:
    """Every message on the shared schedule carries a send stamp at or after its due stamp, and a
    put-only run's send rate is over its sends' own span, in msg/s and Mbit/s."""
    broker = started("activemq")
    queue, total, rate = destination("queue"), 500, 250
    run = run_locust(
        "put_only.py", broker.url, "--mq-destination", queue, "--mq-total-messages", str(total), "--mq-total-rate",
        str(rate), users=1, seconds=20, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    messages = read_back(broker, queue, total)
    early = [int(h["mq-due-ns"]) - int(h["mq-sent-ns"]) for h in messages if int(h["mq-sent-ns"]) < int(h["mq-due-ns"])]
    late = f"{len(early)} of {len(messages)} sent early, by up to {max(early, default=0)} ns"
    assert len(messages) == total and not early, late
    row = run.row(queue)
    # 500 messages due 4 ms apart: the sends span (500 - 1) / 250 s, the schedule's own length.
    assert abs(row["send_span_s"] - (total - 1) / rate) < 0.1, row
    assert abs(row["send_rate_msgs"] - rate) < 0.05 * rate, row
    assert row["send_rate_mbit"] == pytest.approx(row["send_rate_msgs"] * 1024 * 8 / 1e6), row  # 1 KB bodies
    assert (row["receive_span_s"], row["receive_rate_msgs"]) == (0.0, 0.0), row
    assert f"{row['send_rate_mbit']:.2f}" in run.output and f"{row['send_span_s']:.3f}" in run.output


HOG = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


def test_a_generator_starved_by_a_cpu_hog_is_judged_contended_not_saturated(destination, tmp_path: Path) -> None:
    """A light paced run whose loop thread shares one core, at low priority, with a CPU hog: its loop is
    late while it uses little CPU, as when a broker on the same machine has the cores."""
    broker = started("activemq")
    core = max(os.sched_getaffinity(0))
    command = locust_command(
        "pubsub.py", broker.url, "--mq-destination", destination("topic"), "--mq-consumers", "1", "--mq-rate", "100",
        users=2, seconds=12, report=tmp_path / "contended.json",
    )  # fmt: skip
    locust = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    lines: list[str] = []
    spawned = threading.Event()

    def read() -> None:
        for line in locust.stdout:  # type: ignore[union-attr]
            lines.append(line)
            if "All users spawned" in line:
                spawned.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    hog = None
    try:
        assert spawned.wait(30), "".join(lines)[-3000:]
        # The hog ends by itself after 6 s (and is killed below in any case); the generator's loop
        # thread then shares its core at nice 19: it gets a sliver of the core while the hog runs.
        hog = subprocess.Popen([sys.executable, "-c", HOG.format(seconds=6)])
        os.sched_setaffinity(hog.pid, {core})
        # Every thread of it (Linux pins and schedules threads, not processes), and SCHED_IDLE rather
        # than nice 19: a nice-19 loop that mostly sleeps still preempts the hog on each wake-up (the
        # scheduler credits sleepers), so its lag depended on the kernel; an idle-policy one never does.
        for thread in os.listdir(f"/proc/{locust.pid}/task"):
            os.sched_setaffinity(int(thread), {core})
            os.sched_setscheduler(int(thread), os.SCHED_IDLE, os.sched_param(0))
        assert hog.wait(30) == 0
        code = locust.wait(60)  # it ends by itself (-t 12s), or TimeoutExpired fails the test
    finally:
        for process in (hog, locust):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
    reader.join(10)
    output = "".join(lines)
    assert code == 0, output[-3000:]  # a slow loop is judged, not failed: no request failed, no gate
    generator = json.loads((tmp_path / "contended.json").read_text())["generator"]
    [process] = generator["processes"].values()
    assert generator["verdict"] == "contended", (generator, output[-3000:])
    # A loop starved this hard may not tick in every contended second (as few as 1 of 5 is judged): one will do.
    assert process["contended_s"] >= 1 and process["late_cpu_percent_max"] < 50, process
    assert process["loop_lag_ms_max"] >= LAG_LATE_MS and process["cpu_wait_ms_max"] >= 100, process
    assert f"generator: {generator['sentence']}" in " ".join(output.split())  # the summary wraps at 100 columns
    assert "a machine of its own" in generator["sentence"] and "saturated" not in generator["sentence"]


def test_a_broker_frozen_while_the_generator_keeps_time_is_judged_broker_slow(destination, tmp_path: Path) -> None:
    """A light paced run whose broker is stopped (SIGSTOP) for 1.5 s: the deliveries are late, the loop is not."""
    broker = started("activemq-stress")
    pid = services.pid("activemq-stress")
    queue = destination("queue")
    running = start_locust(
        "put_get.py", broker.url, "--mq-destination", queue, "--mq-rate", "100", "--mq-timeout", "5",
        users=3, seconds=8, tmp_path=tmp_path,
    )  # fmt: skip
    try:
        assert wait_for(lambda: activemq_destination_stats(broker.port, queue)["dequeueCount"] > 100, timeout=15)
        os.kill(pid, signal.SIGSTOP)
        time.sleep(1.5)  # the planted fault's length, not a wait for an event
    finally:
        os.kill(pid, signal.SIGCONT)
    run = running.finish(timeout=40)
    generator = run.report["generator"]
    [process] = generator["processes"].values()
    assert generator["verdict"] == "broker-slow", (generator, run.output[-3000:])
    assert process["verdict"] == "ok" and process["loop_lag_ms_p99"] < LAG_LATE_MS, process
    p99 = run.row(queue)["latency_ms"]["p99"]  # messages sent during the freeze arrive up to 1.5 s late
    assert p99 >= 500 and f"receive {queue} p99" in generator["broker"], (p99, generator["broker"])
    assert generator["sentence"].startswith("broker-slow: the broker is the limit")
    assert f"generator: {generator['sentence']}" in " ".join(run.output.split())
