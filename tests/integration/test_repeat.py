"""``mqusers repeat`` and a results folder's trend page against the real ActiveMQ, the page in a real Chromium.

Three short paced runs: each run's figures are computed here from its own JSON, independently of
``mqusers.stats`` (throughput: the intervals' successes over their seconds after the warm-up; the
percentiles: the report's own latency figures), and the repeat's medians, spreads and the trend
page's figures must equal them. Ctrl-C mid-repeat must end with the statistics of the runs done.
"""

from __future__ import annotations

import json
import re
import signal
import statistics
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.integration.broker_stats import wait_for
from tests.integration.brokers import started
from tests.integration.browser import opened, unavailable_reason
from tests.integration.locust_runs import LOCUSTFILES, ROOT

# alone: its repeated runs' throughput within 5 % of the rate asked
pytestmark = [pytest.mark.activemq, pytest.mark.alone]

RUNS = 3
#: Each run: 5 s at 500 msg/s, the first second left out.
LOAD = ["-u", "2", "-r", "2", "-t", "5s", "--mq-consumers", "1", "--mq-rate", "500", "--mq-warmup", "1",
        "--only-summary"]  # fmt: skip
FIGURES = ("throughput", "p50", "p90", "p99", "p99.9")
#: The report's key of each percentile.
REPORTED = {"p50": "p50", "p90": "p90", "p99": "p99", "p99.9": "p999"}
_UNAVAILABLE = unavailable_reason()


def mqusers(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mqusers.commands.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT, check=False)


def locust_args(url: str, topic: str) -> list[str]:
    return ["-f", str(LOCUSTFILES / "pubsub.py"), "--host", url, "--headless", "--mq-destination", topic, *LOAD]


def own_figures(document: dict[str, Any], topic: str) -> dict[str, float]:
    """A run's figures from its JSON alone: intervals summed after the warm-up, the report's percentiles."""
    intervals = document["intervals"]
    rows = [row for row in intervals["operations"][f"receive {topic}"] if row[0] >= intervals["measured_from"]]
    [row] = [r for r in document["destinations"] if r["destination"] == topic]
    figures = {"throughput": sum(r[2] for r in rows) / sum(r[1] for r in rows)}
    return figures | {figure: row["latency_ms"][key] for figure, key in REPORTED.items()}


@pytest.fixture(scope="module")
def repeated(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path, str]:
    folder = tmp_path_factory.mktemp("repeat")
    topic = f"/topic/mqusers.test.repeat.{uuid.uuid4().hex[:6]}"
    outputs = ["--json", str(folder / "repeat.json"), "--html", str(folder / "repeat.html")]
    result = mqusers("repeat", str(RUNS), "--results", str(folder / "runs"), *outputs, "--",
                     *locust_args(started("activemq").url, topic))  # fmt: skip
    return result, folder, topic


def test_three_runs_each_a_json_and_the_medians_are_the_medians_of_their_figures(
    repeated: tuple[subprocess.CompletedProcess[str], Path, str],
) -> None:
    result, folder, topic = repeated
    assert result.returncode == 0, result.stdout + result.stderr
    files = sorted((folder / "runs").glob("*.json"))
    documents = [json.loads(path.read_text()) for path in files]
    assert len(documents) == RUNS and len({d["run_id"] for d in documents}) == RUNS  # a fresh run id each
    assert [d["ended_by"] for d in documents] == ["time"] * RUNS
    assert all(re.fullmatch(rf"\d{{8}}T\d{{6}}Z-{d['run_id']}", p.stem) for p, d in zip(files, documents, strict=True))
    summary = json.loads((folder / "repeat.json").read_text())
    truth = [own_figures(d, topic) for d in documents]
    assert truth[0]["throughput"] == pytest.approx(500, rel=0.05)  # paced at 500 msg/s
    by_run = {run["run_id"]: run for run in summary["runs"]}
    for document, own in zip(documents, truth, strict=True):
        shown = by_run[document["run_id"]]["figures"][f"receive {topic}"]
        assert shown == pytest.approx(own, rel=1e-9, abs=5e-4)  # the report's ms keep 3 decimals
    found = summary["operations"][f"receive {topic}"]
    for figure in FIGURES:
        values = [own[figure] for own in truth]
        estimate = found[figure]
        assert estimate["median"] == pytest.approx(statistics.median(values), rel=1e-9, abs=5e-4), figure
        assert (estimate["min"], estimate["max"]) == pytest.approx((min(values), max(values)), rel=1e-9, abs=5e-4)
        assert estimate["low"] <= estimate["median"] <= estimate["high"] and estimate["runs"] == RUNS, estimate
    printed = " ".join(result.stdout.split())
    assert f"p99 ms {statistics.median(t['p99'] for t in truth):,.3f} " in printed
    # Each run's own verdicts, read here from its JSON: the generator's verdict, what it lost, how it ended.
    for document in documents:
        run, verdict = by_run[document["run_id"]], document["generator"]["verdict"]
        lost = sum(row["lost"] + row["unreceived"] + row["worker_lost"] for row in document["destinations"])
        fit = verdict not in ("contended", "saturated") and lost == 0
        assert (run["baseline"]["generator"], run["baseline"]["lost"], run["baseline"]["fit"]) == (verdict, lost, fit)
        said = f"ok (exit 0), {run['stopped'] - run['started']:.1f} s, nothing lost, generator {verdict};" if fit \
            else ": not a baseline, "  # fmt: skip
        assert any(line.startswith("run ") and document["run_id"] in line and said in line
                   for line in result.stdout.splitlines()), result.stdout  # fmt: skip
    assert "how the runs differ: each run is a fresh locust process with its own run id, its first 1 s" in printed


def test_ctrl_c_mid_repeat_ends_with_the_statistics_of_the_runs_done(tmp_path: Path) -> None:
    topic = f"/topic/mqusers.test.repeat.{uuid.uuid4().hex[:6]}"
    runs = tmp_path / "runs"
    command = [sys.executable, "-m", "mqusers.commands.cli", "repeat", "3", "--results", str(runs), "--json",
               str(tmp_path / "repeat.json"), "--", *locust_args(started("activemq").url, topic)]  # fmt: skip
    with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as repeat:
        # The second run's load is under way: its log says its users are spawned.
        def second_spawned() -> bool:
            logs = sorted(runs.glob("*.log"))
            return len(logs) == 2 and "All users spawned" in logs[1].read_text()

        assert wait_for(second_spawned, timeout=60, interval=0.1), "no second run under way within 60 s"
        repeat.send_signal(signal.SIGINT)
        output, _ = repeat.communicate(timeout=60)
    assert repeat.returncode == 1, output
    summary = json.loads((tmp_path / "repeat.json").read_text())
    assert summary["interrupted"] and [(r["status"], r["counted"]) for r in summary["runs"]] == [
        ("ok", True), ("interrupted", False)]  # fmt: skip
    documents = [json.loads(path.read_text()) for path in sorted(runs.glob("*.json"))]
    assert [d["ended_by"] for d in documents] == ["time", "interrupt"]  # it drained and reported; no third run
    own = own_figures(documents[0], topic)
    assert summary["operations"][f"receive {topic}"]["p99"]["median"] == pytest.approx(own["p99"], abs=5e-4)
    assert "interrupted after 2 run(s); statistics of the 1 measured to their end" in output


#: How the page fits its window, and per chart its title, points given and coloured pixels drawn.
PAGE_JS = """() => ({
  scroll: document.documentElement.scrollWidth, inner: innerWidth,
  charts: [...document.querySelectorAll("figure.chart")].map(f => {
    const canvas = f.querySelector("canvas");
    const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
    let coloured = 0;
    for (let i = 0; i < pixels.length; i += 4) {
      const rgb = [pixels[i], pixels[i + 1], pixels[i + 2]];
      if (pixels[i + 3] > 0 && Math.max(...rgb) - Math.min(...rgb) > 60) coloured++;
    }
    return {title: f.dataset.title, points: Number(f.dataset.points), right: canvas.getBoundingClientRect().right,
            coloured: coloured};
  }),
  rows: [...document.querySelector("section.trend table.trend").tBodies[0].rows]
    .map(r => [...r.cells].map(c => c.innerText)),
})"""


@pytest.mark.browser
@pytest.mark.skipif(_UNAVAILABLE is not None, reason=f"browser: {_UNAVAILABLE}")
def test_a_results_folders_trend_page_shows_each_runs_figures_and_fits_a_phone(
    repeated: tuple[subprocess.CompletedProcess[str], Path, str], tmp_path: Path
) -> None:
    result, folder, topic = repeated
    assert result.returncode == 0, result.stdout + result.stderr
    runs = folder / "runs"
    # A single run kept in the same folder by --mq-results: the fourth point of the trend.
    single = subprocess.run([sys.executable, "-m", "locust", *locust_args(started("activemq").url, topic),
                             "--mq-results", str(runs)], cwd=ROOT, capture_output=True, text=True, timeout=60,
                            check=False)  # fmt: skip
    assert single.returncode == 0, single.stdout[-3000:] + single.stderr[-3000:]
    files = sorted(runs.glob("*.json"))
    documents = sorted((json.loads(path.read_text()) for path in files), key=lambda d: d["started"])
    assert len(documents) == RUNS + 1 and f"{documents[-1]['run_id']}.json" in files[-1].name
    page = tmp_path / "trend.html"
    made = mqusers("report", str(runs), "--html", str(page))
    assert made.returncode == 0 and f"the trend of {RUNS + 1} runs in {runs}" in made.stdout, made.stderr
    summary = json.loads((folder / "repeat.json").read_text())
    for width in (1280, 390):
        # The repeat's own page: its statistics on top, as its JSON has them, then its runs' trend.
        with opened(folder / "repeat.html", width=width) as browser:
            browser.page.screenshot(path=str(tmp_path / f"repeat-{width}.png"), full_page=True)
            medians = browser.page.eval_on_selector_all(
                "table.repeat tbody tr", "rows => rows.map(r => [r.cells[0].innerText, r.cells[1].innerText, "
                "r.cells[2].innerText])")  # fmt: skip
            fits = browser.page.evaluate("() => document.documentElement.scrollWidth <= innerWidth")
        assert browser.errors == [] and fits
        decimals = {"msg/s": 1, "ms": 3}
        assert medians == [[op, f"{figure} {found['unit']}", f"{found['median']:,.{decimals[found['unit']]}f}"]
                           for op, figures in summary["operations"].items()
                           for figure, found in ((f, figures[f]) for f in FIGURES)]  # fmt: skip
        with opened(page, width=width) as browser:
            browser.page.screenshot(path=str(tmp_path / f"trend-{width}.png"), full_page=True)
            shown = browser.page.evaluate(PAGE_JS)
        assert browser.errors == []
        assert shown["scroll"] <= shown["inner"], shown  # no horizontal scroll: tables scroll in their own box
        charts = {chart["title"]: chart for chart in shown["charts"]}
        # Each run's figure and both ends of its interval: 3 points a run per figure drawn.
        throughput, latency = (
            charts[f"Throughput per run: receive {topic}"],
            charts[f"Latency per run: receive {topic}"],
        )
        assert (throughput["points"], latency["points"]) == (3 * (RUNS + 1), 3 * 3 * (RUNS + 1)), charts
        assert all(chart["coloured"] > 100 and chart["right"] <= width for chart in (throughput, latency)), charts
        for row, document in zip(shown["rows"], documents, strict=True):
            own = own_figures(document, topic)
            assert row[2].endswith(f"-{document['run_id']}.json")  # oldest first, each its own file
            values = [float(cell.split()[0].replace(",", "")) for cell in row[3:]]
            assert values == [round(own["throughput"], 1), own["p50"], own["p99"], own["p99.9"]], (row, own)
