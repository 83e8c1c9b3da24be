"""The InfluxDB listener against real stores: VictoriaMetrics takes influxdb-client's v2 writes,
InfluxDB 1.6 runs every dashboard query on the same points, and a store outage costs the test nothing.

Locust runs as a subprocess with the scenario plus a two-line locustfile that calls
``mqusers.sinks.influx.register`` (harmless when mqusers' own plugin wires the listener too), so
the listener is exercised exactly as a user's locustfile would enable it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

import services
from mqusers.sinks import points as sink_points
from mqusers.sinks import schema
from tests import broker_samples
from tests.integration import broker_stats as bs
from tests.integration.brokers import started
from tests.integration.locust_runs import LOCUSTFILES, ROOT, free_port
from tools import dashboards

PRODUCERS, RATE = 2, 200  # the paced load: 2 producers x 200 msg/s
ENABLE = """from mqusers.sinks.influx import register

# An audit stand-in until mqusers' own audit exists: fixed running totals per destination.
register(audit=lambda: {{{destination!r}: {{"lost": 0, "duplicated": 0, "in_flight": 1}}}})
"""
#: Added where the dashboards are queried: a User that connects and disconnects and one that sends in
#: transactions (every other one aborted), so the connection and transaction panels have data (the
#: churner unpaced: never beside a load whose rate a test checks).
CHURNER = """
from mqusers import StompChurnProducerUser, StompTransactionProducerUser


class Churner(StompChurnProducerUser):
    destination = {destination!r}
    fixed_count = 1


class Committer(StompTransactionProducerUser):
    destination = {destination!r}
    fixed_count = 1
    tx_size = 5
    tx_abort_ratio = 0.5
"""


def store(name: str) -> Iterator[int]:
    began = services.start(name)
    yield services.ports(name)["http"]
    if began:
        services.stop(name)


@pytest.fixture(scope="module")
def victoria() -> Iterator[int]:
    yield from store("victoria-metrics")


@pytest.fixture(scope="module")
def influxdb() -> Iterator[int]:
    yield from store("influxdb")


@dataclass
class Run:
    destination: str
    output: str
    report: dict[str, Any]
    lines: Path

    def row(self) -> dict[str, Any]:
        [row] = [r for r in self.report["destinations"] if r["destination"] == self.destination]
        return row

    def report_operation(self, name: str) -> dict[str, Any]:
        [row] = [r for r in self.report["operations"] if r["name"] == name]
        return row


def locust_command(tmp_path: Path, destination: str, *args: str, churn: bool = False) -> list[str]:
    enable = tmp_path / f"enable_{uuid.uuid4().hex[:6]}.py"
    enable.write_text((ENABLE + (CHURNER if churn else "")).format(destination=destination))
    files = f"{LOCUSTFILES / 'queue_balance.py'},{enable}"
    return [sys.executable, "-m", "locust", "-f", files, "--mq-destination", destination, *args]


def vm_series(port: int, name: str, **labels: str) -> list[dict[str, Any]]:
    selector = ",".join([f'__name__="{name}"', *(f'{key}="{value}"' for key, value in labels.items())])
    response = requests.get(
        f"http://127.0.0.1:{port}/api/v1/export", params={"match[]": "{" + selector + "}"}, timeout=10
    )
    response.raise_for_status()
    return [json.loads(line) for line in response.text.splitlines() if line.strip()]


def vm_total(port: int, name: str, **labels: str) -> int:
    return int(sum(sum(series["values"]) for series in vm_series(port, name, **labels)))


def broker_url() -> str:
    return started("activemq").url


@pytest.fixture(scope="module")
def distributed(victoria: int, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """Master + 2 workers; only the master is given --influx-*: the workers take its settings."""
    tmp = tmp_path_factory.mktemp("influx")
    destination, port = f"/queue/mqusers.influx.{uuid.uuid4().hex[:8]}", free_port()
    report, lines = tmp / "r.json", tmp / "points.lp"
    base = locust_command(tmp, destination, churn=True)
    master = subprocess.Popen(
        [*base, "--master", "--headless", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port),
         "--expect-workers", "2", "-u", "6", "-r", "6", "-t", "6s", "--host", broker_url(), "--only-summary",
         "--mq-rate", "100", "--mq-receipts", "true", "--mq-report-json", str(report),
         "--influx-url", f"http://127.0.0.1:{victoria}", "--influx-line-file", str(lines)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
    )  # fmt: skip
    worker = [*base, "--worker", "--master-host", "127.0.0.1", "--master-port", str(port)]
    workers = [
        subprocess.Popen(worker, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
        for _ in range(2)
    ]
    output, _ = master.communicate(timeout=120)
    for worker in workers:
        output += worker.communicate(timeout=60)[0]
    assert master.returncode == 0, output[-3000:]
    return Run(destination, output, json.loads(report.read_text()), lines)


# ------------------------------------------------------------------------------------- write path


@pytest.mark.activemq
@pytest.mark.victoria
@pytest.mark.alone  # a minimum sent count and p99 bound of a paced run
def test_streamed_counts_match_the_runs_own_report(distributed: Run, victoria: int) -> None:
    row, run_id = distributed.row(), distributed.report["run_id"]
    # Producers send until --run-time ends: the last seconds travel in the workers' final messages.
    assert row["errors"] == 0 and row["sent"] > 800 and row["received"] > 800
    receipts = distributed.report_operation(f"receipt {distributed.destination}")["count"]
    expected = {"send": row["sent"], "receive": row["received"], "receipt": receipts}
    labels = {"run": run_id, "destination": distributed.destination}

    def totals() -> dict[str, dict[str, int]]:
        return {
            measurement: {op: vm_total(victoria, f"{measurement}_count", operation=op, **labels) for op in expected}
            for measurement in (schema.OPS.name, schema.MERGED.name, schema.SUMMARY.name)
        }

    # Each worker's own series, the master's merged one and the whole-run summary all agree with the report.
    assert bs.wait_for(lambda: all(t == expected for t in totals().values()), timeout=15), (expected, totals())
    workers = {s["metric"]["worker"] for s in vm_series(victoria, f"{schema.OPS.name}_count", **labels)}
    assert len(workers) == 2 and not workers & {"master", "local"}  # Locust's unique client ids
    assert vm_total(victoria, f"{schema.OPS.name}_errors", **labels) == 0
    merged = vm_series(victoria, f"{schema.MERGED.name}_p99", operation="receive", **labels)
    assert merged and all(0 < value < 1000 for value in merged[0]["values"])
    assert re.search(r"mqusers: influx: \d+ points written to \S+, 0 dropped", distributed.output)


# ------------------------------------------------------------------------------------- dashboards


def regex(value: str) -> str:
    """Grafana's InfluxQL escaping of a variable value inside /.../."""
    return re.sub(r"([\\^$*+?.()|\[\]{}/])", r"\\\1", value)


def board_queries(board: dict[str, Any]) -> list[str]:
    """Panel targets, template variables and annotations: everything Grafana would run."""
    texts = [t["query"] for p in board["panels"] for t in p.get("targets", [])]  # a row has none
    texts += [v["query"] for v in board["templating"]["list"]]
    return texts + [a["query"] for a in board["annotations"]["list"]]


def broker_points(run_id: str, scenario: str, destination: str, start_ms: int, end_ms: int) -> str:
    """Broker-metrics samples across the run, one a second, as the master's listener writes them.

    The broker sampler is not in this run, so its points are built here from each source's shape
    (ActiveMQ with its JVM, RabbitMQ with fd and alarms, Artemis with paging and destination sizes:
    between them every broker panel has data).
    Whole 2 s buckets (the queries' ``$__interval``) from ``start_ms`` to ``end_ms``, two samples in each.
    """
    tags = {schema.RUN: run_id, schema.SCENARIO: scenario}
    lines = []
    for second, ts_ms in enumerate(range(start_ms // 2000 * 2000, end_ms // 2000 * 2000 + 1001, 1000)):
        ts_ns = ts_ms * 1_000_000
        alarms = ("memory",) if second % 4 == 3 else ()
        for sample in (
            broker_samples.activemq(ts_ns, second, destination),
            broker_samples.rabbitmq(ts_ns, second, destination, alarms=alarms),
            broker_samples.artemis(ts_ns, second, destination),
        ):
            lines += [p.line() for p in sink_points.broker_points(tags, sample, ts_ms)]
    return "\n".join(lines)


def substituted(query: str, values: dict[str, str], start_ms: int, end_ms: int) -> str:
    macros = {"$timeFilter": f"time >= {start_ms}ms and time <= {end_ms}ms", "$__interval_ms": "2000"}
    macros |= {"$__interval": "2s", **{f"${name}": value for name, value in values.items()}}
    for macro in sorted(macros, key=len, reverse=True):  # $__interval_ms before $__interval
        query = query.replace(macro, macros[macro])
    return query


@pytest.mark.activemq
@pytest.mark.victoria
@pytest.mark.influxdb
def test_every_dashboard_query_returns_its_columns_from_influxdb_1(distributed: Run, influxdb: int) -> None:
    base, database = f"http://127.0.0.1:{influxdb}", f"mqusers_{uuid.uuid4().hex[:8]}"
    streamed = distributed.lines.read_text().splitlines()
    # The run streamed the broker's own readings (the master's sampler, ActiveMQ's statistics plugin);
    # the queries below get synthetic ones instead (both brokers' shapes, counters of a known rate).
    real = [line for line in streamed if line.startswith("mqusers_broker_destination,")]
    assert real and all("source=activemq" in line and "enqueued=" in line for line in real)
    points = "\n".join(line for line in streamed if not line.startswith("mqusers_broker"))
    stamps = [int(line.rsplit(" ", 1)[1]) for line in points.splitlines()]
    [scenario] = set(re.findall(r",scenario=([^, ]+)", points))
    run_id = distributed.report["run_id"]
    points += "\n" + broker_points(run_id, scenario, distributed.destination, min(stamps), max(stamps))
    requests.post(f"{base}/query", params={"q": f'CREATE DATABASE "{database}"'}, timeout=10).raise_for_status()
    try:
        written = requests.post(f"{base}/write", params={"db": database, "precision": "ms"}, data=points, timeout=30)
        assert written.status_code == 204, written.text
        workers = sorted({m for m in re.findall(r"worker=([^, ]+)", points) if m != "master"})
        values = {"run": distributed.report["run_id"], "destination": regex(distributed.destination)}
        values["worker"] = "(" + "|".join(regex(w) for w in workers) + ")"
        texts = [(name, text) for name, build in dashboards.DASHBOARDS.items() for text in board_queries(build())]
        assert len(texts) >= 60
        answers: dict[str, list[dict[str, Any]]] = {}
        for name, text in texts:
            query = substituted(text, values, min(stamps) - 1000, max(stamps) + 1000)
            answer = requests.get(f"{base}/query", params={"db": database, "q": query}, timeout=30).json()
            [result] = answer["results"]
            assert "error" not in result, (name, query, result)
            assert result.get("series"), f"{name}: no data for {query}"
            expected = ["key", "value"] if text.startswith("SHOW") else ["time", *re.findall(r'AS "([^"]+)"', text)]
            for series in result["series"]:
                assert series["columns"] == expected, (name, query)
                assert any(v is not None for row in series["values"] for v in row[1:]), (name, query)
            answers[text] = result["series"]
        # A broker counter's rate is its derivative per second: the samples' counters grow by RATE a second.
        # (InfluxDB buckets are aligned on the epoch: each 2 s bucket's last sample is its second one.)
        [rates] = [text for text in answers if '"broker enqueued/s"' in text]
        enqueued = [row[1] for series in answers[rates] for row in series["values"]]
        assert len(enqueued) >= 4 and set(enqueued) == {float(broker_samples.RATE)}, answers[rates]
        assert {s["tags"]["source"] for s in answers[rates]} == {"activemq", "rabbitmq", "artemis"}
    finally:
        requests.post(f"{base}/query", params={"q": f'DROP DATABASE "{database}"'}, timeout=10)


# ----------------------------------------------------------------------------------------- outage


def merged_send_counts(lines: str, run_id: str, destination: str) -> dict[int, tuple[int, float]]:
    """Every merged send interval the listener produced (written or not): ts -> (count, seconds)."""
    pattern = re.compile(
        rf"^{schema.MERGED.name},destination={re.escape(destination)},operation=send,run={run_id},\S* "
        r"count=(\d+)i.*interval_s=([\d.]+).* (\d+)$",
        re.M,
    )
    return {int(ts): (int(count), float(seconds)) for count, seconds, ts in pattern.findall(lines)}


@pytest.mark.activemq
@pytest.mark.victoria
@pytest.mark.alone  # it stops the shared store and checks the send rate within 10 %
def test_a_store_outage_costs_the_test_nothing_and_loses_only_what_the_bound_drops(
    victoria: int, tmp_path: Path
) -> None:
    destination, report, lines = f"/queue/mqusers.outage.{uuid.uuid4().hex[:8]}", tmp_path / "r.json", tmp_path / "p.lp"
    command = locust_command(tmp_path, destination)
    command += ["--headless", "-u", str(3 + PRODUCERS), "-r", "10", "-t", "28s", "--host", broker_url()]
    command += ["--only-summary", "--mq-rate", str(RATE), "--mq-report-json", str(report)]
    command += ["--influx-url", f"http://127.0.0.1:{victoria}", "--influx-line-file", str(lines)]
    # ~9 points a second: 80 overflow in a 12 s outage, yet outlast the back-off (up to 4 s + an
    # interval) after the store is back, so some of the outage's points are still there to retry.
    command += ["--influx-buffer", "80", "--influx-timeout", "1"]
    locust = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    try:
        assert bs.wait_for(lambda: vm_series(victoria, f"{schema.OPS.name}_count", destination=destination), 20)
        time.sleep(3)
        assert services.stop("victoria-metrics") is True
        down_ms = time.time_ns() // 1_000_000
        time.sleep(12)
        services.start("victoria-metrics")
        up_ms = time.time_ns() // 1_000_000
        output, _ = locust.communicate(timeout=90)
    finally:
        if locust.poll() is None:
            locust.kill()
        services.start("victoria-metrics")
    assert locust.returncode == 0, output[-3000:]
    document = json.loads(report.read_text())
    [row] = [r for r in document["destinations"] if r["destination"] == destination]
    nominal = PRODUCERS * RATE
    assert row["errors"] == 0  # (a few messages may still be in flight when the run stops)
    assert abs(row["send_rate_msgs"] - nominal) <= 0.1 * nominal, row

    # The line file holds every point produced, stored or not: the rate held while the store was down.
    produced = lines.read_text()
    counts = merged_send_counts(produced, document["run_id"], destination)
    during = [count / seconds for ts, (count, seconds) in counts.items() if down_ms + 1000 <= ts < up_ms - 1000]
    assert len(during) >= 5, counts
    assert all(abs(rate - nominal) <= 0.1 * nominal for rate in during), during

    # Dropped points are counted and said once; written + dropped accounts for every point produced.
    [summary] = re.findall(r"mqusers: influx: (\d+) points written to \S+, (\d+) dropped \((\d+) buffer full.*", output)
    written, dropped, overflowed = (int(n) for n in summary)
    assert dropped > 0 and overflowed > 0
    assert written + dropped == len(produced.splitlines())

    # Retried after recovery: points from the outage (the newest, within the bound) and from after it.
    def stamps() -> list[int]:
        series = vm_series(victoria, f"{schema.MERGED.name}_count", run=document["run_id"], destination=destination)
        return sorted(ts for s in series for ts in s["timestamps"])

    assert bs.wait_for(lambda: any(ts >= up_ms for ts in stamps()), timeout=15)
    assert any(down_ms + 1000 <= ts < up_ms for ts in stamps()), (down_ms, up_ms, stamps())
