"""Comparisons of real runs on ActiveMQ (issue 27, items 3 and 4): ``mqusers compare`` and the regression gate.

Five identical put/get runs (8 s, 2 s warm-up, 2 producers x 1,500 msg/s = 3,000 msg/s, one queue) on the
local non-persistent ActiveMQ, runs 2-5 gated against run 1; then one persistent run with receipts on its
KahaDB twin (``activemq-persistent``) at a third of the rate, gated against all five. Every run is a real
locust process.

The slower run's regression is planted, its size known: it is asked for 1,000 msg/s where the others are asked
for 3,000 (-66.7 %). Persistence with receipts alone is no regression that holds: a warm KahaDB broker kept up
with 3,000 msg/s sync sends here (a cold one sent 2,000 to 3,100 a second, a trend whose interval reached +3 %),
and on CI's busy machine the non-persistent runs' p50 reached 2.1 ms (0.37 ms quiet), as high as the persistent
run's 1.8 ms.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from mqusers.stats.figures import FIGURES
from tests.integration.brokers import started
from tests.integration.browser import opened, unavailable_reason
from tests.integration.locust_runs import ROOT, LocustRun, run_locust

# alone: its verdicts compare run times and latencies, which a busy machine moves
pytestmark = [pytest.mark.activemq, pytest.mark.alone]

RUNS = 5
#: p50 is the figure a persistent store moves most (fsync per message); p99's interval on a 10 s run is wide. Both at
#: 20 %: above the 10-15 % by which the p50 of identical runs on a warm broker differed here.
GATE = "p50:20%,p99:20%,throughput:10%"
RATE = 1500
WARMUP = ("--mq-warmup", "2")
ARGS = ("--mq-rate", str(RATE), *WARMUP)
#: The slower run's rate per producer: a third of the others', so its throughput is -66.7 % by construction.
SLOWER_RATE = RATE // 3
UNFIT = ("--mq-baseline-unfit", "true")


def compare(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mqusers.commands.cli", "compare", *args], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)  # fmt: skip


#: Each run's seconds, its first 2 left out (--mq-warmup): about 6 s measured on the one-second grid, at least 5
#: intervals once the slivers at its ends are joined to their neighbours (5 is the fewest compare judges,
#: docs/compare.md; a 5 s window came to 4 when both ends were slivers), 15 and 10 a side of the repeats'
#: comparison; the fixtures stay under the 60 s a test may take.
SECONDS = 8


@pytest.fixture(scope="module")
def identical_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[LocustRun]]:
    """The folder of the identical runs' JSONs (run-1.json ...) and those runs."""
    folder = tmp_path_factory.mktemp("compare")
    queue = f"/queue/compare.{uuid.uuid4().hex[:8]}"
    broker = started("activemq")
    # The broker's first seconds after a start are slower (its JIT): one run warms it, as a nightly job's would be.
    run_locust("put_get.py", broker.url, "--mq-destination", queue, *ARGS, users=4, seconds=3, tmp_path=folder)
    identical: list[LocustRun] = []
    for i in range(1, RUNS + 1):
        # The gate's statistics are the question here; a baseline run whose generator this shared machine contended
        # would be refused (unit-tested, test_regression_gate.py), so it is accepted as it is.
        gate = ("--mq-baseline", str(folder / "run-1.json"), "--mq-gate-regression", GATE, *UNFIT) if i > 1 else ()
        run = run_locust("put_get.py", broker.url, "--mq-destination", queue, *ARGS, *gate, users=4,
                         seconds=SECONDS, tmp_path=folder)  # fmt: skip
        assert run.report.get("intervals"), run.output[-3000:]
        (folder / f"run-{i}.json").write_text(json.dumps(run.report))
        identical.append(run)
    return folder, identical


@pytest.fixture(scope="module")
def runs(identical_runs: tuple[Path, list[LocustRun]]) -> tuple[Path, list[LocustRun], LocustRun]:
    """The identical runs, and one persistent run with receipts at a third of their rate, gated against all five
    (a folder): one run's straggling last messages (4 of them 0.5 s after the last send: receive rate 2,715 of
    3,000) stood for the whole baseline when it was run 1 alone, and its interval reached -8 % of a -34 %."""
    folder, identical = identical_runs
    queue = identical[0].report["destinations"][0]["destination"]
    baseline = folder / "baseline"
    baseline.mkdir()
    for i in range(1, RUNS + 1):
        (baseline / f"run-{i}.json").write_text((folder / f"run-{i}.json").read_text())
    persistent = started("activemq-persistent")
    slower = run_locust("put_get.py", persistent.url, "--mq-destination", queue, "--mq-rate", str(SLOWER_RATE),
                        *WARMUP, "--mq-persistent", "true", "--mq-receipts", "true", "--mq-baseline", str(baseline),
                        "--mq-gate-regression", GATE, *UNFIT, users=4, seconds=SECONDS, tmp_path=folder)  # fmt: skip
    (folder / "persistent.json").write_text(json.dumps(slower.report))
    return folder, identical, slower


def figures(path: Path, operation: str) -> dict[str, Any]:
    return dict(json.loads(path.read_text())["operations"][operation])


def test_identical_runs_raise_no_more_false_alarms_than_the_confidence_allows(
    identical_runs: tuple[Path, list[LocustRun]],
) -> None:
    _, identical = identical_runs
    # Each gated run makes 6 tests (p50, p99 and throughput; send and receive), each at 99.17 % (Bonferroni), so
    # a run fails falsely, one-sided, with probability at most 2.5 % if the noise is what the intervals see. Runs
    # of a shared machine differ by more than one run's intervals show (a whole run's shift): of the 4 gated
    # runs, 2 are allowed to fail; 3 or more would say the gate's thresholds sit below the machine's noise.
    alarms = [run for run in identical[1:] if run.code == 3]
    assert all(run.code in (0, 3) for run in identical), [run.output[-2000:] for run in identical]
    assert len(alarms) <= 2, [run.output[-1500:] for run in alarms]


def test_two_identical_runs_show_no_significant_difference(identical_runs: tuple[Path, list[LocustRun]]) -> None:
    folder, identical = identical_runs
    queue = identical[0].report["destinations"][0]["destination"]
    # Runs 2 and 3: neither is the gates' baseline, both on a warm broker.
    done = compare(str(folder / "run-2.json"), str(folder / "run-3.json"), "--json", str(folder / "same.json"))
    assert done.returncode == 0, done.stderr
    same = figures(folder / "same.json", f"receive {queue}")
    # Throughput (paced) shows no difference. One run a side cannot promise as much for latency: a whole run's
    # level moves by more than its seconds do (one of five identical runs here had its p50 24 % below the others,
    # interval -31 % to -14 %); the output says so in its note, and repeats a side (below) absorb it.
    assert same["throughput"]["verdict"] == "no significant difference", same
    assert "note: one run a side" in done.stdout
    # Repeats a side (folders): the runs are resampled, their noise is in the interval. Interleaved (runs 1, 3, 5
    # against 2, 4), as the grids interleave their repeats: a drift of the machine over the five runs (a full CI run
    # failed on 1-3 against 4-5 where the module alone passed) falls on both sides alike.
    for name, members in (("base", (1, 3, 5)), ("new", (2, 4))):
        (folder / name).mkdir()
        for i in members:
            (folder / name / f"run-{i}.json").write_text((folder / f"run-{i}.json").read_text())
    # Every figure at once, as compare reads a table by default (family-wise: each interval at 1 - 5 % / the figures
    # judged), so that the claim "none differs" holds at 95 %; at 95 % each, one of five figures is flagged falsely
    # up to 23 % of the time (this test failed in a full run at a3ed2ea, passed alone).
    done = compare(str(folder / "base"), str(folder / "new"), "--json", str(folder / "repeats.json"))
    assert done.returncode == 0, done.stderr
    repeats = figures(folder / "repeats.json", f"receive {queue}")
    assert set(repeats) == set(FIGURES)
    # A short run's p99.9 may hold too few samples for a verdict (docs/compare.md): never a direction.
    assert {figure["verdict"] for figure in repeats.values()} <= {"no significant difference", "too few samples"}
    assert repeats["p50"]["verdict"] == "no significant difference", repeats
    assert "one run a side" not in done.stdout and "BASE 3 runs" in done.stdout


def test_a_run_at_a_third_of_the_rate_is_found_lower_and_fails_the_gate(
    runs: tuple[Path, list[LocustRun], LocustRun],
) -> None:
    folder, identical, slower = runs
    queue = identical[0].report["destinations"][0]["destination"]
    assert identical[0].code == 0 and slower.row(queue)["lost"] == 0
    done = compare(str(folder / "baseline"), str(folder / "persistent.json"), "--json", str(folder / "slower.json"),
                   "--html", str(folder / "slower.html"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    found = figures(folder / "slower.json", f"receive {queue}")
    throughput, p50 = found["throughput"], found["p50"]
    # The truth, independently: each run's own report (its merged histogram) gives the p50s compared, BASE's the
    # median of its five runs'.
    base_p50 = statistics.median(run.row(queue)["latency_ms"]["p50"] for run in identical)
    assert (p50["base"]["point"], p50["new"]["point"]) == (base_p50, slower.row(queue)["latency_ms"]["p50"])
    # The slower run kept up with the third it was asked for (2 producers x 500 msg/s), and the difference found is
    # the reports' own receive rates' (BASE's the median of five), whatever BASE reached on a cold broker.
    slower_rate = slower.row(queue)["receive_rate_msgs"]
    assert slower_rate == pytest.approx(2 * SLOWER_RATE, rel=0.05), slower.row(queue)
    base_rate = statistics.median(run.row(queue)["receive_rate_msgs"] for run in identical)
    assert throughput["verdict"] == "lower" and throughput["difference_high_pct"] < -10, throughput
    assert throughput["difference_pct"] == pytest.approx(100 * (slower_rate / base_rate - 1), abs=5), throughput
    line = next(line for line in done.stdout.splitlines() if line.startswith("throughput msg/s ") and "lower" in line)
    assert f"{throughput['difference_pct']:+,.1f} % ({throughput['difference_low_pct']:+,.1f} to" in line
    assert "note: not compared, measured by one side only: receipt " + queue in done.stdout
    # The gate, at the end of the persistent run itself: exit 3, the figure, its difference and interval named.
    assert slower.code == 3, slower.output[-3000:]
    summary = " ".join(slower.output.split())
    assert f"receive {queue}: throughput lower than --mq-baseline by -" in summary
    # 6 figures gated (p50, p99, throughput of send and receive): each at 99.17 %, 95 % over the gate (Bonferroni).
    assert "at 99.17 %, 95 % over the gate's 6 figures), beyond --mq-gate-regression throughput:10%" in summary
    assert "one baseline run" not in summary  # five: their run-to-run noise is in the interval


@pytest.mark.browser
@pytest.mark.skipif(unavailable_reason() is not None, reason=f"browser: {unavailable_reason()}")
@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
def test_the_comparison_page_fits_a_laptop_and_a_phone(
    runs: tuple[Path, list[LocustRun], LocustRun], width: int, height: int
) -> None:
    folder = runs[0]
    page_file, compared = folder / "page.html", folder / "page.json"
    done = compare(str(folder / "run-1.json"), str(folder / "persistent.json"), "--html", str(page_file), "--json",
                   str(compared))  # fmt: skip
    assert done.returncode == 0, done.stderr
    operations = json.loads(compared.read_text())["operations"]
    verdicts = [figure["verdict"] for figures in operations.values() for figure in figures.values()]
    worse = verdicts.count("slower") + verdicts.count("lower")
    with opened(page_file, width=width, height=height) as browser:
        browser.page.screenshot(path=str(folder / f"compare-{width}.png"), full_page=True)
        fit = browser.page.evaluate("""() => ({scroll: document.documentElement.scrollWidth, inner: innerWidth,
          hidden: [...document.querySelectorAll("div.table")].filter(d => d.scrollWidth > d.clientWidth).length,
          bars: document.querySelectorAll("span.ci span").length,
          worse: document.querySelectorAll("span.change-slower, span.change-lower").length})""")
    assert browser.errors == []
    assert fit["scroll"] <= fit["inner"] == width, fit
    if width >= 1280:
        assert fit["hidden"] == 0, fit  # every column in view, no scroll bar on the table
    # One interval bar per figure and operation; each "slower" or "lower" of the JSON shown as one; throughput surely.
    judged = sum(verdict != "too few samples" for verdict in verdicts)  # no interval drawn where none is read
    assert fit["bars"] == judged and fit["worse"] == worse >= 1, (fit, worse)
