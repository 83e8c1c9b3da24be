"""``mqusers cluster-compare`` on one local broker compares like with like: a warm-up left out, interleaved repeats,
each cell its runs' median, and two schemes that cost the broker the same marked as noise.

The independent truths: each run's own JSON report (when it started and stopped, its intervals: the steady
throughput is recomputed here from them as COMMON's format defines it) and the local ``activemq`` service's
configuration (``persistent="false"``: persistent and non-persistent messages to a non-durable subscriber are
the same work for it).
"""

from __future__ import annotations

import json
import signal
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

import services
from tests.integration.broker_stats import wait_for
from tests.integration.brokers import started
from tests.integration.locust_runs import ROOT, steady_rate

REPEATS = 3
STEADY_AFTER = 1.0


@pytest.mark.activemq
@pytest.mark.alone  # a noise verdict between runs and the warm-up's timing
def test_cluster_compare_warms_up_repeats_interleaved_and_marks_identical_schemes_as_noise(tmp_path: Path) -> None:
    broker = started("activemq")
    assert 'persistent="false"' in (services.state_dir() / "activemq" / "conf" / "activemq.xml").read_text()
    command = [sys.executable, "-m", "mqusers.commands.cli", "cluster-compare", "--config", f"single={broker.url}",
               "--schemes", "nonpersistent,persistent", "--repeats", str(REPEATS), "--warmup-seconds", "2",
               "--seconds", "3", "--steady-after", f"{STEADY_AFTER:g}", "--messages", "100", "--out", str(tmp_path),
               "--json", str(tmp_path / "cc.json"), "--mq-drain-idle", "1", "--mq-rate", "2000"]  # fmt: skip
    # Paced (passed on to every run): unpaced runs grow the shared broker's heap, and later tests on it see its
    # pauses; the warm-up, the interleaving and the noise mark do not need the broker's ceiling.
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    print(done.stdout)
    document = json.loads((tmp_path / "cc.json").read_text())
    [row] = document["rows"]
    assert (document["repeats"], document["steady_after"]) == (REPEATS, STEADY_AFTER)
    reports = {path: json.loads(path.read_text()) for path in tmp_path.glob("single-*.json")}
    warmups = {scheme: Path(row["warmup"][scheme]["report"]) for scheme in ("nonpersistent", "persistent")}
    # The warm-up: one run per scheme, before any measured run, never among a cell's runs.
    first_measured = min(r["started"] for path, r in reports.items() if path not in warmups.values())
    assert all(reports[path]["stopped"] <= first_measured for path in warmups.values())
    assert "single nonpersistent warm-up (left out)" in done.stdout and "Warm-up: each cell ran 2 s" in done.stdout
    runs = [(scheme, run) for scheme, cell in row["schemes"].items() for run in cell["runs"]]
    assert not {Path(run["report"]) for _, run in runs} & set(warmups.values())
    # Each cell carries its repeats: each run's steady rate from its own intervals, the cell their median.
    for cell in row["schemes"].values():
        assert [run["repeat"] for run in cell["runs"]] == list(range(1, REPEATS + 1))
        rates = [steady_rate(reports[Path(run["report"])], run["destination"]) for run in cell["runs"]]
        assert [run["msgs"] for run in cell["runs"]] == pytest.approx(rates, rel=1e-9)
        assert cell["msgs"] == pytest.approx(statistics.median(rates), rel=1e-9)
        assert cell["msgs_spread"] == pytest.approx([min(rates), max(rates)], rel=1e-9)
        low, high = cell["msgs_interval"]
        assert low <= cell["msgs"] <= high
        for run in cell["runs"]:
            report = reports[Path(run["report"])]
            assert report["intervals"]["measured_from"] == pytest.approx(report["started"] + STEADY_AFTER, abs=0.5)
            [destination] = report["destinations"]
            assert destination["sent"] == destination["received"] > 0 and destination["lost"] == 0
    # Interleaved: the runs started round-robin, each repeat one scheme later than the last.
    order = sorted(runs, key=lambda found: reports[Path(found[1]["report"])]["started"])
    assert [(run["repeat"], scheme) for scheme, run in order] == [
        (1, "nonpersistent"), (1, "persistent"), (2, "persistent"), (2, "nonpersistent"),
        (3, "nonpersistent"), (3, "persistent")]  # fmt: skip
    # The same work for this broker: not told apart from noise, in the JSON and the table.
    assert row["noise"] == [["nonpersistent", "persistent"]]
    assert "| non-persistent, non-durable ≈ persistent, non-durable |" in done.stdout


@pytest.mark.activemq
def test_ctrl_c_mid_grid_ends_with_the_table_of_the_runs_that_ended(tmp_path: Path) -> None:
    broker = started("activemq")
    command = [sys.executable, "-m", "mqusers.commands.cli", "cluster-compare", "--config", f"single={broker.url}",
               "--schemes", "nonpersistent,persistent", "--repeats", "3", "--warmup-seconds", "1", "--seconds", "2",
               "--steady-after", "0.5", "--messages", "100", "--out", str(tmp_path), "--json",
               str(tmp_path / "cc.json"), "--mq-drain-idle", "1", "--mq-rate", "1000"]  # fmt: skip
    with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as grid:
        # The first measured run has its report; the second is under way (its log says its users are spawned).
        second = tmp_path / "single-persistent-1.log"
        under_way = wait_for(lambda: second.exists() and "All users spawned" in second.read_text(), 120, 0.1)
        assert under_way, "no second run under way within 120 s"
        grid.send_signal(signal.SIGINT)
        output, _ = grid.communicate(timeout=60)
    assert grid.returncode == 1, output
    document = json.loads((tmp_path / "cc.json").read_text())
    [row] = document["rows"]
    assert document["interrupted"] is True
    # The run that ended is the table's; the one stopped mid-way is in no cell, and no run started after it.
    assert [run["repeat"] for run in row["schemes"]["nonpersistent"]["runs"]] == [1]
    assert row["schemes"]["persistent"]["runs"] == [] and row["schemes"]["persistent"]["msgs"] is None
    assert sorted(path.name for path in tmp_path.glob("single-*-[0-9].json")) == [
        "single-nonpersistent-1.json", "single-persistent-1.json"]  # fmt: skip
    assert "single persistent run 1/3 ... interrupted" in output
    assert "interrupted: the table holds the runs that ended before the Ctrl-C or SIGTERM" in output
