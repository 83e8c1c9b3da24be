"""``mqusers cluster-compare`` on the real master/slave pairs: the three schemes, then a failover.

The independent truths: which broker of the pair serves STOMP, polled by this test while the
failover run goes (the takeover time), the pair's master before and after, and the counts each
scheme's run must reach.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import services
from mqusers.commands.cluster import SCHEMES
from tests.integration.locust_runs import ROOT, steady_rate

# alone: it fails over the pairs and times the clients' reconnection
pytestmark = pytest.mark.alone

MESSAGES = 600
#: Each scheme's producer paced (passed on to every run, after cluster-compare's own unpaced --mq-rate 0): unpaced
#: sends into a JDBC durable subscription outrun its store (~500 msg/s here) and leave a debt of acknowledgements
#: that blocks the next run's producer by flow control for all its seconds. This test checks the schemes and the
#: failover, not the store's ceiling.
RATE = 300
#: The slave took over at most this long before a client was back on it (issue: within 2 s).
RECONNECT_AFTER_READY_S = 2.0


class Takeover(threading.Thread):
    """Polls which broker of ``pair`` serves STOMP; notes when a broker other than ``first`` does."""

    def __init__(self, pair: tuple[str, str], first: str) -> None:
        super().__init__(daemon=True)
        self.pair, self.first = pair, first
        self.at_ns: int | None = None
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.05):
            master = services.master_of(self.pair)
            if master is not None and master != self.first:
                self.at_ns = time.time_ns()
                return


# One pair: cluster-compare's own work (schemes, a failover run, its figures) does not depend on how a pair elects
# its master; every pair's takeover, Artemis's included, is tested in test_cluster_services.py, and a client's
# failover across brokers in test_failover.py.
@pytest.mark.cluster
@pytest.mark.parametrize("kind", ["shared"])
def test_cluster_compare_measures_the_schemes_and_a_failover_of_a_pair(kind: str, tmp_path: Path) -> None:
    pair = services.PAIRS[kind]
    needed = list(pair)
    started_here = [name for name in needed if services.start(name)]
    first = services.master_of(pair)
    assert first is not None
    url = ",".join(f"stomp://127.0.0.1:{services.ports(name)['stomp']}" for name in pair)
    failover = f"{sys.executable} -m services fail-over {' '.join(pair)}"
    takeover = Takeover(pair, first)
    command = [sys.executable, "-m", "mqusers.commands.cli", "cluster-compare", "--config", f"{kind}={url}",
               "--failover", f"{kind}={failover}", "--messages", str(MESSAGES), "--repeats", "1", "--seconds", "1",
               "--steady-after", "1", "--warmup-seconds", "1", "--failover-seconds", "14",
               "--fault-at", "3", "--failover-rate", "200", "--out", str(tmp_path), "--json", str(tmp_path / "cc.json"),
               "--mq-drain-idle", "3", "--mq-rate", str(RATE)]  # fmt: skip
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        takeover.start()
        output, _ = process.communicate(timeout=240)
        after = services.master_of(pair)
    finally:
        process.kill()
        takeover.done.set()
        for name in needed:
            services.start(name)  # whichever was stopped comes back as the slave...
        for name in reversed(started_here):
            services.stop(name)  # ...and what this test started is stopped (the database last)
    assert process.returncode == 0, output
    print(output)
    assert takeover.at_ns is not None and after not in (None, first)
    [row] = json.loads((tmp_path / "cc.json").read_text())["rows"]
    for scheme in SCHEMES:
        report = json.loads((tmp_path / f"{kind}-{scheme}-1.json").read_text())
        [destination] = report["destinations"]
        assert destination["sent"] == destination["received"] > 0 and destination["lost"] == 0
        assert row["schemes"][scheme]["msgs"] == pytest.approx(steady_rate(report, destination["destination"]))
        assert Path(row["warmup"][scheme]["report"]) == tmp_path / f"{kind}-{scheme}-warmup.json"
    run = json.loads((tmp_path / f"{kind}-failover.json").read_text())
    [fault] = run["faults"]
    assert fault["exit_code"] == 0 and fault["started_ns"] < takeover.at_ns
    figures = row["failover"]
    assert figures["lost"] == 0 and figures["unrecovered"] == 0 and figures["window_ms"] > 0
    for outage in run["failover"]["listed"]:
        late_s = (outage["reconnected_ns"] - takeover.at_ns) / 1e9
        print(f"{kind} {outage['role']}: window {outage['window_ms']:,.0f} ms, reconnected {late_s:+.2f} s after "
              "the takeover")  # fmt: skip
        assert outage["first_ok_ns"] > fault["started_ns"]
        assert late_s <= RECONNECT_AFTER_READY_S
