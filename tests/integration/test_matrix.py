"""``mqusers matrix`` runs its grid through Locust and prints the method's tables."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import services
from mqusers.commands.matrix import NOT_PERSISTED
from tests.integration.brokers import started
from tests.integration.locust_runs import LOCUSTFILES, ROOT

# alone: 1 s cells with a 0.5 s drain, and its queue names are the second's (another grid would share them)
pytestmark = pytest.mark.alone

#: One short run per cell after a 1 s warm-up: these tests check the grid's cells, test_grids.py its repeats.
SHORT = ["--repeats", "1", "--warmup-seconds", "1", "--seconds", "1", "--steady-after", "0.5"]

CLI = "mqusers.commands.cli"
#: On a store, paced: an unpaced warm-up leaves KahaDB a debt that blocks the next run's producer past its 1 s
#: ("no receive ... after its warm-up"). This test is about the store's mark, not its ceiling.
PACED = ["--rate", "500"]


@pytest.mark.activemq
def test_matrix_runs_each_cell_to_its_message_count(tmp_path: Path) -> None:
    broker = started("activemq")
    out = tmp_path / "matrix"
    run = subprocess.run(
        [sys.executable, "-m", CLI, "matrix", "--host", broker.url, "--modes", "queue,request-reply",
         "--sizes", "1KB", "--messages", "200", *SHORT, "--out", str(out), "--json", str(tmp_path / "m.json"),
         "--mq-drain-idle", "0.5"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "### queue" in run.stdout and "### request-reply" in run.stdout
    assert "| persistent | durable | size | latency mean ms | latency p99 ms | msg/s | Mbit/s | lost | ≈ noise |" in (
        run.stdout)  # fmt: skip
    reports = sorted(p.name for p in out.glob("*.json"))
    slugs = ["queue-n-1KB", "queue-p-1KB", "request-reply-n-1KB", "request-reply-p-1KB"]
    assert reports == sorted(f"{slug}-{run}.json" for slug in slugs for run in ("1", "warmup"))
    queue = json.loads((out / "queue-p-1KB-1.json").read_text())
    [row] = queue["destinations"]
    assert row["sent"] == row["received"] > 0 and row["lost"] == 0
    # The shared ActiveMQ runs persistent="false" (services/activemq.py): its persistent cells are marked.
    assert 'persistent="false"' in (services.state_dir() / "activemq" / "conf" / "activemq.xml").read_text()
    assert "| yes (store 0 B) |" in run.stdout and NOT_PERSISTED in run.stdout
    cells = json.loads((tmp_path / "m.json").read_text())["cells"]
    assert [(c["persistent"], c["persisted"]) for c in cells] == [(False, None), (True, False)] * 2


@pytest.mark.activemq
def test_persistent_cells_on_a_kahadb_broker_are_not_marked(tmp_path: Path) -> None:
    broker = started("activemq-persistent")
    assert 'persistent="true"' in (services.state_dir() / "activemq-persistent" / "conf" / "activemq.xml").read_text()
    run = subprocess.run(
        [sys.executable, "-m", CLI, "matrix", "--host", broker.url, "--modes", "queue", "--sizes", "1KB",
         "--messages", "100", *SHORT, *PACED, "--out", str(tmp_path / "matrix"), "--json", str(tmp_path / "m.json"),
         "--mq-drain-idle", "0.5"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    cells = json.loads((tmp_path / "m.json").read_text())["cells"]
    assert [(c["persistent"], c["persisted"]) for c in cells] == [(False, None), (True, True)]
    assert cells[1]["store_bytes"] > 0 and "store 0 B" not in run.stdout


def test_matrix_refuses_bad_input_in_one_line() -> None:
    run = subprocess.run(
        [sys.executable, "-m", CLI, "matrix", "--sizes", "1XB"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert run.returncode == 2
    assert run.stderr.strip().startswith("mqusers matrix: --mq-size: '1XB' is not a size")


def test_matrix_refuses_a_locustfiles_folder_without_the_grids_scenarios(tmp_path: Path) -> None:
    (tmp_path / "queue_balance.py").write_text("")
    run = subprocess.run(
        [sys.executable, "-m", CLI, "matrix", "--locustfiles", str(tmp_path), "--modes", "queue,topic"],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert run.returncode == 2
    assert run.stderr == f"mqusers matrix: --locustfiles: {tmp_path} has no durable_topic.py, pubsub.py\n"


def test_in_a_checkout_the_scenarios_are_the_repositorys_locustfiles() -> None:
    run = subprocess.run([sys.executable, "-m", CLI, "locustfiles"], capture_output=True, text=True, cwd=ROOT)
    assert (run.returncode, run.stdout) == (0, f"{LOCUSTFILES}\n")
