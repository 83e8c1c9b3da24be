"""The HTML report of a real run, opened in a real headless Chromium with no network.

A short pub/sub run on ActiveMQ writes its JSON and HTML reports; the page must load without a
console error, draw every chart (a canvas of non-zero size with coloured pixels: the axes and grid
are grey), show as many points as the JSON holds, and show the JSON's audit figures. Screenshots
are saved under the test's tmp_path for a person to look at.
"""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from mqusers.commands.cluster import TITLES
from mqusers.commands.grids import Steady
from mqusers.commands.matrix import MODES, cells, matrix_document
from mqusers.report.htmlgrids import INTERRUPTED, WARMUP
from mqusers.report.htmlreport import main
from mqusers.report.htmlrun import AUDIT_COLUMNS, receive_plots
from tests.integration.brokers import started
from tests.integration.browser import opened, unavailable_reason
from tests.integration.locust_runs import LocustRun, run_locust

_UNAVAILABLE = unavailable_reason()
pytestmark = [
    pytest.mark.activemq,
    pytest.mark.browser,
    pytest.mark.skipif(_UNAVAILABLE is not None, reason=f"browser: {_UNAVAILABLE}"),
]

#: How the page fits its window: the page's own width, each table wider than its box, each chart's box and
#: the narrowest gap between two of its x labels.
FIT_JS = """() => ({
  scroll: document.documentElement.scrollWidth, inner: innerWidth,
  hidden: [...document.querySelectorAll("div.table")].filter(d => d.scrollWidth > d.clientWidth)
    .map(d => d.firstElementChild.className),
  uncued: [...document.querySelectorAll("div.table")].filter(d => d.scrollWidth > d.clientWidth
    && !getComputedStyle(d).backgroundImage.includes("radial-gradient")).length,
  charts: [...document.querySelectorAll("figure.chart")].map(f => ({title: f.dataset.title,
    right: f.querySelector("canvas").getBoundingClientRect().right, gap: Number(f.dataset.xGap)})),
})"""
#: Per chart: what a canvas looks like to the test (size, coloured pixels) and the points it was given.
CHARTS_JS = """figures => figures.map(figure => {
  const canvas = figure.querySelector("canvas");
  const box = canvas ? canvas.getBoundingClientRect() : {width: 0, height: 0};
  let coloured = 0;
  if (canvas) {
    const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
    for (let i = 0; i < pixels.length; i += 4) {
      const rgb = [pixels[i], pixels[i + 1], pixels[i + 2]];
      if (pixels[i + 3] > 0 && Math.max(...rgb) - Math.min(...rgb) > 60) coloured++;
    }
  }
  return {title: figure.dataset.title, points: Number(figure.dataset.points), width: box.width,
          height: box.height, coloured: coloured};
})"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[LocustRun, Path, str]:
    broker = started("activemq")
    folder = tmp_path_factory.mktemp("html")
    destination = f"/topic/mqusers.test.html.{folder.name[-6:]}"
    html = folder / "run.html"
    result = run_locust(
        "pubsub.py", broker.url, "--mq-consumers", "2", "--mq-rate", "200", "--mq-destination", destination,
        "--mq-report-html", str(html), users=3, seconds=6, tmp_path=folder,
    )  # fmt: skip
    assert result.code == 0, result.output[-3000:]
    return result, html, destination


def charts(page: Any) -> dict[str, dict[str, Any]]:
    return {chart["title"]: chart for chart in page.eval_on_selector_all("figure.chart", CHARTS_JS)}


def drawn(chart: dict[str, Any], points: int) -> None:
    assert chart["width"] > 300 and chart["height"] > 100, chart
    assert chart["points"] == points, chart
    assert chart["coloured"] > 100, chart  # the series' lines and points, not only grey axes


def non_null(*columns: list[Any]) -> int:
    return sum(value is not None for column in columns for value in column)


@pytest.mark.alone  # the generator's CPU and the sampler's missed ticks
def test_a_runs_page_draws_every_chart_and_shows_the_audit(run: tuple[LocustRun, Path, str], tmp_path: Path) -> None:
    result, html, destination = run
    document = result.report
    row = result.row(destination)
    column = document["series"]["destinations"][destination]
    width = document["series"]["width_s"]
    # The series and the book count the same messages by different paths.
    assert sum(column["sent_per_s"]) * width == row["sent"] > 0
    assert sum(column["received_per_s"]) * width == row["received"] == 2 * row["sent"]
    assert column["backlog"][-1] == 2 * row["sent"] - row["received"] == 0
    [generator] = document["series"]["generators"].values()
    # A second the health sampler's tick missed (it ran just before and just after) is a gap, None.
    sampled = [cpu for cpu in generator["cpu_percent"] if cpu is not None]
    assert len(generator["t"]) >= 4 and len(sampled) >= len(generator["t"]) - 2
    assert all(0 < cpu < 100 for cpu in sampled)
    with opened(html) as browser:
        page = browser.page
        page.screenshot(path=str(tmp_path / "run.png"), full_page=True)
        shown = charts(page)
        audit = page.eval_on_selector_all(
            "table.audit tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.innerText))"
        )
    assert browser.errors == []
    times = len(column["t"])
    drawn(shown["Send and receive rate"], 2 * times)
    drawn(shown["Backlog (sent, not yet received by every subscription)"], times)
    drawn(shown["Receive latency over time"], non_null(column["p50_ms"], column["p99_ms"], column["p999_ms"]))
    drawn(shown["Generator CPU (% of one core)"], non_null(generator["cpu_percent"]))
    drawn(shown["Generator loop lag (worst per bucket)"], non_null(generator["loop_lag_ms"]))
    drawn(shown["Receive latency by percentile"], len(receive_plots(document)[destination]))
    # The broker's own readings (--mq-broker-metrics auto: ActiveMQ's statistics plugin): depth beside
    # the backlog, memory and store % (no JVM figures without --mq-broker-pid: no heap chart).
    readings = document["broker"]["series"]
    depths = sum(destination in r["depth"] for r in readings)
    assert readings and depths >= 2
    drawn(shown["Broker depth against mqusers' backlog"], depths + times)
    drawn(shown["Broker memory and store (% of their limits)"], 2 * len(readings))
    assert "Broker JVM heap" not in shown
    assert [[cells[0], *(int(c.replace(",", "")) for c in cells[1:])] for cells in audit] == [
        [destination, *(row[key] for key in AUDIT_COLUMNS)]
    ]


def test_saved_runs_a_search_and_a_curve_render_and_compare(run: tuple[LocustRun, Path, str], tmp_path: Path) -> None:
    result, _, destination = run
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps(result.report))
    shutil.copy(first, second)
    steps = [{"rate": rate, "achieved": achieved, "sustained": achieved >= 0.99 * rate, "reason": "", "p50_ms": 0.3,
              "p99_ms": 1.0, "p999_ms": 2.0, "max_ms": 4.0, "lost": 0, "verdict": "ok", "report": str(first)}
             for rate, achieved in ((1000.0, 1000.0), (4000.0, 2500.0), (2000.0, 1990.0))]  # fmt: skip
    search = tmp_path / "find-max.json"
    search.write_text(json.dumps({"kind": "find-max", "max_rate": 2000.0, "steps": steps}))
    points = [{"percent": p, "offered": 20.0 * p, "achieved": 20.0 * p, "p50_ms": 0.3 + p / 100, "p99_ms": 1 + p / 10,
               "p999_ms": 2 + p / 5, "max_ms": 5 + p, "lost": 0} for p in (10.0, 50.0, 100.0)]  # fmt: skip
    curve = tmp_path / "curve.json"
    curve.write_text(json.dumps({"kind": "curve", "max_rate": 2000.0, "points": points}))
    html = tmp_path / "compare.html"
    assert main([str(first), str(second), str(search), str(curve), "--html", str(html)]) == 0
    with opened(html) as browser:
        page = browser.page
        page.screenshot(path=str(tmp_path / "compare.png"), full_page=True)
        shown = charts(page)
        compared = page.eval_on_selector_all("table.compare tbody tr", "rows => rows.map(r => r.cells[0].innerText)")
    assert browser.errors == []
    plot = len(receive_plots(result.report)[destination])
    drawn(shown["Receive latency by percentile, runs overlaid"], 2 * plot)
    drawn(shown["Offered against achieved rate per step"], 3 + 3)  # offered, and each step's achieved once
    drawn(shown["Latency against offered load"], 4 * 3)
    assert compared == [first.name, second.name]  # the folder is in each name's tooltip


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
def test_the_pages_fit_a_laptop_and_a_phone(run: tuple[LocustRun, Path, str], tmp_path: Path, width: int,
                                            height: int) -> None:  # fmt: skip
    """Nothing wider than the window; at 1280 px every column shows; every chart drawn, its x labels apart."""
    result, html, _ = run
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps(result.report))
    other = {**result.report, "run_id": "other"}
    (tmp_path / "other.json").write_text(json.dumps(other))
    steps = [{"rate": rate, "achieved": rate, "sustained": True, "reason": "", "p50_ms": 0.3, "p99_ms": 1.0,
              "p999_ms": 2.0, "max_ms": 4.0, "lost": 0, "verdict": "ok",
              "report": str(tmp_path / "a-long-folder-name-for-the-steps" / f"step-{rate:.0f}.json")}
             for rate in (1000.0, 16000.0, 8000.0)]  # fmt: skip
    search = tmp_path / "find-max.json"
    search.write_text(json.dumps({"kind": "find-max", "max_rate": 16000.0, "steps": steps}))
    compare = tmp_path / "compare.html"
    assert main([str(saved), str(tmp_path / "other.json"), str(search), "--html", str(compare)]) == 0
    for name, page_file in (("run", html), ("compare", compare)):
        with opened(page_file, width=width, height=height) as browser:
            page = browser.page
            page.screenshot(path=str(tmp_path / f"{name}-{width}.png"), full_page=True)
            fit = page.evaluate(FIT_JS)
            shown = page.eval_on_selector_all("figure.chart", CHARTS_JS)
        assert browser.errors == []
        assert fit["scroll"] <= fit["inner"] == width, (name, fit)
        if width >= 1280:
            assert fit["hidden"] == [], (name, fit)  # no column behind a scroll bar
        assert fit["uncued"] == 0, (name, fit)  # a table that scrolls shades the side with more columns
        assert len(fit["charts"]) == len(shown) >= 3, name
        for chart in fit["charts"]:
            assert chart["right"] <= width, (name, chart)
            assert chart["gap"] >= 20, (name, chart)  # labels apart, not run together
        for chart in shown:
            assert chart["points"] > 0 and chart["coloured"] > 100, (name, chart)


#: docs/matrix.md's six configurations: a pair's failover URL is the widest text in the table.
CLUSTER_CONFIGS = {
    "single": "stomp://127.0.0.1:61615",
    "shared-fs": "stomp://127.0.0.1:61630,stomp://127.0.0.1:61632",
    "jdbc": "stomp://127.0.0.1:61634,stomp://127.0.0.1:61636",
    "artemis": "stomp://127.0.0.1:61713",
    "artemis-shared": "stomp://127.0.0.1:61723,stomp://127.0.0.1:61733",
    "artemis-replicated": "stomp://127.0.0.1:61743,stomp://127.0.0.1:61753",
}


#: The widest figures a grid cell shows: a median, its 95 % interval and its runs' reports in a long folder.
CELL = {"msgs": 126502.2, "msgs_interval": [98639.4, 131086.9], "msgs_spread": [97001.0, 131500.0], "repeats": 3}
STEADY = Steady(warmup_seconds=10, steady_after=3, seconds=20, messages=20000, repeats=3)


def grid_runs(folder: Path, name: str) -> list[dict[str, Any]]:
    return [{"repeat": repeat, "report": str(folder / "a-long-folder-name-for-the-runs" / f"{name}-{repeat}.json"),
             "msgs": 126502.2, "sent": 2_530_044, "received": 2_530_044, "lost": 0, "p99_ms": 1234.567}
            for repeat in (1, 2, 3)]  # fmt: skip


def fits(html: Path, width: int, height: int, shot: Path) -> dict[str, Any]:
    """The page opened at ``width``: no console error, nothing wider than the window; how its tables fit."""
    with opened(html, width=width, height=height) as browser:
        browser.page.screenshot(path=str(shot), full_page=True)
        fit: dict[str, Any] = browser.page.evaluate(FIT_JS)
        fit["text"] = browser.page.inner_text("body")
    assert browser.errors == []
    assert fit["scroll"] <= fit["inner"] == width, fit
    if width >= 1280:
        assert fit["hidden"] == [], fit  # every column in view, no scroll bar on a table
    return fit


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
def test_a_six_configuration_cluster_comparison_fits(tmp_path: Path, width: int, height: int) -> None:
    failover = {"window_ms": 15449.079, "reconnect_ms": 15392.879, "after_ready_ms": 1187.407, "lost": 10000,
                "unconfirmed": 1000, "dup_after_reconnect": 35000}  # fmt: skip
    schemes = ("nonpersistent", "persistent", "durable")
    rows = [{"config": name, "url": url, "failover": failover,
             "schemes": {s: {**CELL, "runs": grid_runs(tmp_path, f"{name}-{s}")} for s in schemes},
             "warmup": {s: {**grid_runs(tmp_path, f"{name}-{s}")[0], "repeat": None} for s in schemes},
             "noise": [list(pair) for pair in itertools.combinations(schemes, 2)]}  # the widest: every pair
            for name, url in CLUSTER_CONFIGS.items()]  # fmt: skip
    saved = tmp_path / "cluster.json"
    saved.write_text(json.dumps({"kind": "cluster-compare", "size": "646", **STEADY.document(), "titles": TITLES,
                                 "rows": rows, "interrupted": True}))  # fmt: skip
    html = tmp_path / "cluster.html"
    assert main([str(saved), "--html", str(html)]) == 0
    text = fits(html, width, height, tmp_path / f"cluster-{width}.png")["text"]
    assert "126,502.2\n(98,639.4-131,086.9)" in text and STEADY.legend() in text and INTERRUPTED in text
    assert "non-persistent ≈ persistent durable" in text and WARMUP in text


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
def test_a_seed_matrix_fits(tmp_path: Path, width: int, height: int) -> None:
    """The seed grid: three modes, every persistence variant, 1, 10 and 20 KB, each cell with its runs."""
    grid = cells(list(MODES), ["1KB", "10KB", "20KB"])
    results = {mode: [(cell, {**CELL, "mean": 1234.567, "p99": 12345.678, "mbit": 12345.67, "lost": 0,
                              "persisted": True, "noise": ["non-persistent", "persistent durable"],
                              "runs": grid_runs(tmp_path, cell.slug), "warmup": grid_runs(tmp_path, cell.slug)[0]})
                       for cell in grid if cell.mode == mode] for mode in MODES}  # fmt: skip
    saved = tmp_path / "matrix.json"
    saved.write_text(json.dumps(matrix_document(results, STEADY, 0.0, interrupted=True)))
    html = tmp_path / "matrix.html"
    assert main([str(saved), "--html", str(html)]) == 0
    text = fits(html, width, height, tmp_path / f"matrix-{width}.png")["text"]
    assert "126,502.2\n(98,639.4-131,086.9)" in text and STEADY.legend() in text and INTERRUPTED in text
