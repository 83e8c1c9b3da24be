"""The /metrics endpoint scraped live by a real Prometheus-compatible server, against the run's own report.

VictoriaMetrics (the services' ``victoria-scrape``: ``-promscrape.config`` naming the master's and one
worker's port, every second) scrapes a master + 1 worker run of docs/prometheus.md's two commands on
ActiveMQ; then its API is read: the scraped counters' last values equal the run's JSON report, the
worker's own series and a percentile series exist, and every query of the generated Prometheus
dashboard runs on what was scraped.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests

import services
from tests.doccommands import ROOT, commands
from tests.integration import broker_stats as bs
from tests.integration.brokers import started
from tests.integration.locust_runs import free_port
from tools import promdashboard

PAGE = ROOT / "docs" / "prometheus.md"
SERVICE = "victoria-scrape"


@pytest.fixture(scope="module")
def scraper() -> Iterator[dict[str, int]]:
    began = services.start(SERVICE)  # scrapes its "master" and "worker" ports from now on
    yield services.ports(SERVICE)
    if began:
        services.stop(SERVICE)


def replaced(command: str, replacements: dict[str, str]) -> list[str]:
    """The page's command with the test's ports, broker, duration and files; each one must be there to replace."""
    for shown, wanted in replacements.items():
        assert shown in command, f"docs/prometheus.md no longer shows {shown!r}: {command}"
        command = command.replace(shown, wanted)
    words = shlex.split(command)
    assert words[0] == "locust"
    return [sys.executable, "-m", "locust", *words[1:]]


@dataclass
class Run:
    commands: list[str]  # the page's, as shown
    destination: str
    output: str
    report: dict[str, Any]
    started_s: float
    ended_s: float

    def row(self) -> dict[str, Any]:
        [row] = [r for r in self.report["destinations"] if r["destination"] == self.destination]
        return row


@pytest.fixture(scope="module")
def run(scraper: dict[str, int], tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp = tmp_path_factory.mktemp("prometheus")
    broker = started("activemq").url
    destination, control = f"/queue/mqusers.prometheus.{uuid.uuid4().hex[:8]}", free_port()
    shown = [c for c in commands(PAGE) if c.startswith("locust -f locustfiles/queue_balance.py --prometheus-port")]
    [master_command] = [c for c in shown if " --master" in c]
    [worker_command] = [c for c in shown if " --worker" in c]
    common = ["--mq-destination", destination, "--prometheus-linger", "30"]
    master = replaced(master_command, {"--prometheus-port 9646": f"--prometheus-port {scraper['master']}",
                                       "stomp://127.0.0.1:61613": broker, "-t 1m": "-t 8s",
                                       "report.json": str(tmp / "report.json")})  # fmt: skip
    master += [*common, "--master-bind-host", "127.0.0.1", "--master-bind-port", str(control), "--only-summary"]
    worker = replaced(worker_command, {"--prometheus-port 9647": f"--prometheus-port {scraper['worker']}"})
    worker += [*common, "--master-host", "127.0.0.1", "--master-port", str(control)]
    popen: dict[str, Any] = {"cwd": ROOT, "stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True}
    began = time.time()
    boss = subprocess.Popen(master, **popen)
    hand = subprocess.Popen(worker, **popen)
    try:
        output, _ = boss.communicate(timeout=180)
        output += hand.communicate(timeout=60)[0]
    finally:
        for process in (boss, hand):
            if process.poll() is None:
                process.kill()
                process.communicate()
    assert boss.returncode == 0 and hand.returncode == 0, output[-4000:]
    report = json.loads((tmp / "report.json").read_text())
    return Run(shown, destination, output, report, began, time.time())


def export(port: int, name: str, **labels: str) -> list[dict[str, Any]]:
    selector = ",".join([f'__name__="{name}"', *(f'{key}="{value}"' for key, value in labels.items())])
    response = requests.get(f"http://127.0.0.1:{port}/api/v1/export", params={"match[]": "{" + selector + "}"},
                            timeout=10)  # fmt: skip
    response.raise_for_status()
    return [json.loads(line) for line in response.text.splitlines() if line.strip()]


def last(series: dict[str, Any]) -> float:
    """The value scraped last; null, the staleness marker written once a target has gone, is not a value."""
    samples = zip(series["timestamps"], series["values"], strict=True)
    return float(max((ts, value) for ts, value in samples if value is not None)[1])


@pytest.mark.activemq
@pytest.mark.victoria
def test_a_scraped_run_equals_its_report(run: Run, scraper: dict[str, int]) -> None:
    port, row, run_id = scraper["http"], run.row(), run.report["run_id"]
    assert len(run.commands) == 2  # the page's master and worker, with their endpoints
    assert all(c.startswith("locust -f locustfiles/queue_balance.py --prometheus-port") for c in run.commands)
    # Each process's endpoint stayed up until a scrape had read its final figures.
    assert run.output.count("the last one read the final figures") == 2, run.output[-4000:]
    assert row["sent"] > 300 and row["received"] == row["sent"] and row["lost"] == 0
    mine = {"run": run_id, "destination": run.destination}
    expected = {
        ("mqusers_destination_sent_total", ()): row["sent"],
        ("mqusers_destination_received_total", ()): row["received"],
        ("mqusers_audit_lost", ()): row["lost"],
        ("mqusers_audit_duplicated", ()): row["duplicated"],
        ("mqusers_audit_in_flight", ()): row["in_flight"],
        ("mqusers_merged_count_total", ("operation", "send")): row["sent"],
        ("mqusers_merged_count_total", ("operation", "receive")): row["received"],
        ("mqusers_summary_count", ("operation", "receive")): row["received"],
        # The worker's own endpoint: it ran every User.
        ("mqusers_ops_count_total", ("operation", "receive")): row["received"],
    }

    def scraped() -> dict[tuple[str, tuple[str, ...]], float | None]:
        found: dict[tuple[str, tuple[str, ...]], float | None] = {}
        for (name, extra), _ in expected.items():
            series = export(port, name, **mine, **dict([extra] if extra else []))
            found[(name, extra)] = last(series[0]) if len(series) == 1 else None
        return found

    # Scraped samples become searchable within a second or so of their scrape.
    assert bs.wait_for(lambda: scraped() == expected, timeout=20), (expected, scraped())
    [own] = export(port, "mqusers_ops_count_total", operation="receive", **mine)
    assert own["metric"]["worker"] not in ("", "master", "local")  # Locust's client id of the worker
    assert own["metric"]["instance"] == f"127.0.0.1:{scraper['worker']}"
    [merged] = export(port, "mqusers_merged_count_total", operation="receive", **mine)
    assert merged["metric"]["instance"] == f"127.0.0.1:{scraper['master']}" and "worker" not in merged["metric"]
    p99 = export(port, "mqusers_merged_p99_ms", operation="receive", **mine)
    values = [v for v in p99[0]["values"] if v is not None] if len(p99) == 1 else []
    assert len(values) >= 3 and all(0 < v < 1000 for v in values)
    whole = export(port, "mqusers_summary_p99_ms", operation="receive", **mine)
    # The whole run's p99 from the merged histograms; the report's too (its p99 rounded to the microsecond).
    assert len(whole) == 1 and last(whole[0]) == pytest.approx(row["latency_ms"]["p99"], abs=0.001)


@pytest.mark.activemq
@pytest.mark.victoria
def test_every_dashboard_query_runs_on_the_scraped_figures(run: Run, scraper: dict[str, int]) -> None:
    board = promdashboard.prometheus()
    values = {"$run": run.report["run_id"], "$destination": run.destination.replace(".", "\\\\."),
              "$worker": ".*", "$__rate_interval": "5s"}  # fmt: skip
    empty = []
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            query = target["expr"]
            for name, value in values.items():
                query = query.replace(name, value)
            response = requests.get(
                f"http://127.0.0.1:{scraper['http']}/api/v1/query_range",
                params={"query": query, "start": run.started_s, "end": run.ended_s + 30, "step": "1s"},
                timeout=10,
            )
            assert response.status_code == 200 and response.json()["status"] == "success", (query, response.text)
            if not response.json()["data"]["result"]:
                empty.append(query)
    # The master sampled ActiveMQ's own figures (its statistics plugin) too; it reports no connection count.
    assert [query for query in empty if "mqusers_broker_connections{" not in query] == []
