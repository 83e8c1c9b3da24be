"""The run JSON's per-interval histograms and its HdrHistogram log against the same run's report.

A real run on ActiveMQ, by a local runner and by a master with two workers: per operation the
intervals' counts add up to the report's, and the interval histograms merged are the report's
histogram (the same count, the same p99: one histogram arithmetic). The ``--mq-hdr-log`` file read
back by the hdrhistogram package's reader, tag by tag, and by HdrHistogram's own Java
``HistogramLogProcessor`` gives the report's counts and percentiles.
"""

from __future__ import annotations

import re
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

from mqusers.measure.book import new_histogram
from mqusers.report.hdrlog import name_of, tag_of
from services import hdrtools
from tests.integration.brokers import started
from tests.integration.locust_runs import LocustRun, run_locust

pytestmark = pytest.mark.activemq


def merged(rows: list[list[Any]]) -> HdrHistogram:
    histogram = HdrHistogram.decode(rows[0][4].encode())
    for row in rows[1:]:
        histogram.add(HdrHistogram.decode(row[4].encode()))
    return histogram


def assert_intervals_add_up(run: LocustRun, queue: str) -> None:
    intervals, report = run.report["intervals"], run.report
    operations = intervals["operations"]
    assert set(operations) == set(report["histograms"])
    row = run.row(queue)
    assert row["sent"] > 0 and row["received"] == row["sent"], row
    sends, receives = operations[f"send {queue}"], operations[f"receive {queue}"]
    assert sum(r[2] for r in sends) == row["sent"]
    assert sum(r[2] + r[3] for r in receives) == row["received"]
    for operation in report["operations"]:
        rows = operations[operation["name"]]
        assert sum(r[2] + r[3] for r in rows) == operation["count"], operation["name"]
        assert sum(r[3] for r in rows) == operation["errors"], operation["name"]
    for name, encoded in report["histograms"].items():
        whole, parts = HdrHistogram.decode(encoded.encode()), merged(operations[name])
        assert parts.get_total_count() == whole.get_total_count(), name
        for percentile in (50.0, 99.0, 99.9):
            assert parts.get_value_at_percentile(percentile) == whole.get_value_at_percentile(percentile), name
    # Oldest first, one per second: a short run is far from the bound.
    starts = [r[0] for r in receives]
    assert starts == sorted(starts) and intervals["width_s"] == 1.0
    assert all(0 < r[1] <= 1.0 for r in receives), receives
    assert p99(merged(receives)) == row["latency_ms"]["p99"]


def successes(run: LocustRun, name: str) -> int:
    """The report's successful count of ``name``: a row's sent or received, an operation's count less errors."""
    operation, destination = name.split(" ", 1)
    if operation in ("send", "receive"):
        return int(run.row(destination)["sent" if operation == "send" else "received"])
    row = run.operation(name)
    return int(row["count"] - row["errors"])


def assert_the_log_reads_back(run: LocustRun, log: Path, queue: str) -> None:
    reader = HistogramLogReader(str(log), new_histogram())
    tags: dict[str, HdrHistogram] = {}
    while (interval := reader.get_next_interval_histogram()) is not None:
        tags.setdefault(name_of(interval.get_tag()), new_histogram()).add(interval)
    assert set(tags) == set(run.report["histograms"])
    for name, histogram in tags.items():
        whole = HdrHistogram.decode(run.report["histograms"][name].encode())
        assert histogram.get_total_count() == whole.get_total_count() == successes(run, name), name
        for percentile in (50.0, 99.0):
            assert histogram.get_value_at_percentile(percentile) == whole.get_value_at_percentile(percentile), name
    assert p99(tags[f"receive {queue}"]) == run.row(queue)["latency_ms"]["p99"]
    # HdrHistogram's own processor: the whole run's receive distribution, in ms.
    for name in (f"send {queue}", f"receive {queue}"):
        out = log.with_name(f"{log.stem}-{name.split()[0]}")
        command = ["java", "-cp", str(hdrtools.jar()), "org.HdrHistogram.HistogramLogProcessor", "-i", str(log),
                   "-tag", tag_of(name), "-outputValueUnitRatio", "1000", "-o", str(out)]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        footer = re.search(r"#\[Max += +([\d.]+), Total count += +(\d+)\]", out.with_suffix(".hgrm").read_text())
        assert footer, out.with_suffix(".hgrm").read_text()[-500:]
        assert int(footer.group(2)) == successes(run, name), name
        whole = HdrHistogram.decode(run.report["histograms"][name].encode())
        assert float(footer.group(1)) == pytest.approx(whole.get_max_value() / 1000.0, abs=0.001)


def p99(histogram: HdrHistogram) -> float:
    return histogram.get_value_at_percentile(99.0) / 1000.0


@pytest.mark.alone  # the measured window starts 0.9-1.5 s after the start
def test_a_local_run_s_intervals_add_up_to_its_report(tmp_path: Path) -> None:
    broker, queue = started("activemq"), f"/queue/hdr.{uuid.uuid4().hex[:8]}"
    run = run_locust("put_get.py", broker.url, "--mq-destination", queue, "--mq-consumers", "1", "--mq-rate", "400",
                     "--mq-warmup", "1", "--mq-hdr-log", str(tmp_path / "local.hlog"), users=2, seconds=4,
                     tmp_path=tmp_path)  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    assert_intervals_add_up(run, queue)
    assert_the_log_reads_back(run, tmp_path / "local.hlog", queue)
    # measured from the warm-up's end: a second after the test started; no interval before it.
    measured_from = run.report["intervals"]["measured_from"]
    assert 0.9 < measured_from - run.report["started"] < 1.5
    receives = run.report["intervals"]["operations"][f"receive {queue}"]
    assert receives[0][0] >= measured_from


def test_a_master_and_two_workers_intervals_add_up_to_the_report(tmp_path: Path) -> None:
    broker, queue = started("activemq"), f"/queue/hdr.{uuid.uuid4().hex[:8]}"
    run = run_locust("put_get.py", broker.url, "--mq-destination", queue, "--mq-consumers", "2", "--mq-rate", "400",
                     "--processes", "2", "--mq-hdr-log", str(tmp_path / "workers.hlog"), users=4, seconds=4,
                     tmp_path=tmp_path)  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    assert_intervals_add_up(run, queue)
    assert_the_log_reads_back(run, tmp_path / "workers.hlog", queue)
    assert run.report["intervals"]["measured_from"] == run.report["started"]
