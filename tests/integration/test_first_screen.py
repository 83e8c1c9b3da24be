"""The end of a headless run as a user reads it: Locust's tables, then mqusers' summary, last, naming its files.

Locust's own figures leave the warm-up out too (its stats are reset when the warm-up ends) and keep
sub-millisecond digits, so the two tables a user sees agree; the broker's own count, which includes
the warm-up, is the independent truth that something was left out.
"""

from __future__ import annotations

import csv
import uuid
from pathlib import Path

import pytest

from tests.integration.brokers import started
from tests.integration.locust_runs import run_locust

# alone: Locust's CSV median, up to 1 s stale, against mqusers' p50: latency drift moves it
pytestmark = [pytest.mark.activemq, pytest.mark.alone]


def test_the_summary_is_printed_last_names_every_file_and_agrees_with_locusts_table(
    tmp_path: Path,
) -> None:
    # A name as short as a real one (the summary's tables are as wide as the longest name).
    broker, topic = started("activemq"), f"/topic/t.{uuid.uuid4().hex[:8]}"
    prefix, html = tmp_path / "locust", tmp_path / "locust.html"
    run = run_locust("pubsub.py", broker.url, "--mq-destination", topic, "--mq-rate", "200", "--mq-warmup", "2",
                     "--csv", str(prefix), "--html", str(html), users=4, seconds=5, tmp_path=tmp_path)  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    lines = run.output.rstrip().splitlines()
    start = max(i for i, line in enumerate(lines) if line.startswith("mqusers summary: "))
    summary = lines[start:]
    # Locust's final tables come first; nothing but the summary after it.
    assert start > max(i for i, line in enumerate(lines) if line.startswith("Response time percentiles"))
    assert len(summary) <= 25 and max(map(len, summary)) < 100, "\n".join(summary)
    assert summary[0].startswith(f"mqusers summary: run {run.report['run_id']}, pubsub.py on ActiveMQ/")
    assert summary[0].endswith(f"at {broker.url}")
    assert summary[1].startswith("load: 4 users (2 Publisher, 2 Subscriber), 200 msg/s asked per producer")
    named = " ".join(line.strip() for line in summary[next(i for i, line in enumerate(summary)
                                                             if line.startswith("files written: ")):])  # fmt: skip
    files = named.removeprefix("files written: ").split(", ")
    assert all(Path(f).exists() for f in files), named
    assert {str(tmp_path / f"{prefix.name}_stats.csv"), str(html)} <= set(files)
    assert any(f.endswith(".json") for f in files)

    row = run.row(topic)

    # The same messages in both: the warm-up left out of Locust's stats as of mqusers' ...
    assert (run.locust_count("send", topic), run.locust_count("receive", topic)) == (row["sent"], row["received"])
    # ... and something was left out: the broker counted the warm-up's messages too.
    assert run.report["broker"]["destinations"][topic]["enqueued"] > row["sent"] > 0
    # Locust's median keeps sub-millisecond digits (its buckets: 10 µs below 1 ms, 0.1 ms below 10 ms);
    # its CSV was last written up to 1 s before the end, hence twice the step.
    rows = csv.DictReader(Path(f"{prefix}_stats.csv").read_text().splitlines())
    receives = {r["Name"]: r for r in rows}[f"receive {topic}"]
    p50, median = row["latency_ms"]["p50"], float(receives["Median Response Time"])
    step = 0.01 if p50 < 1 else 0.1 if p50 < 10 else 1.0
    assert abs(median - p50) <= 2 * step + p50 * 0.02, (median, p50)
