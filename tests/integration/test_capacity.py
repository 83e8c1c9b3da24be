"""`mqusers find-max` and `mqusers curve` against the real ActiveMQ, checked by runs of their own."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from mqusers.commands.capacity import StepPlan
from mqusers.findmax.findstep import TAIL_GRACE_S
from tests.integration.brokers import started
from tests.integration.locust_runs import LOCUSTFILES, ROOT

pytestmark = pytest.mark.activemq

SHORT = ["--warmup", "2", "--window", "4", "-u", "4", "--consumers", "2"]
#: find-max's steps, shorter still: its search is about which steps keep up, each judged from its own report.
STEP = ["--warmup", "1", "--window", "3", "-u", "4", "--consumers", "2"]
LAG_MS = 50.0


def mqusers(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mqusers.commands.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT, check=False)


def steps_kept_up_at_top(document: dict[str, Any]) -> bool:
    """The search's last step kept up at its highest rate: nothing above it failed."""
    top = max(s["rate"] for s in document["steps"])
    return any(s["sustained"] and s["rate"] == top == document["max_rate"] for s in document["steps"])


@pytest.mark.alone  # find-max and curve verdicts are rates and latencies
def test_find_max_holds_at_half_and_not_at_two_and_a_half_times(tmp_path: Path) -> None:
    broker = started("activemq")
    locustfile = str(LOCUSTFILES / "put_get.py")
    queue = f"/queue/mqusers.findmax.{uuid.uuid4().hex[:6]}"
    # The broker shares this machine's two cores: near its limit the generator's schedule lag flaps
    # around the default 5 ms (a 30 % wide band, seen), so the lag bound is loosened here and the
    # search is decided by what the broker delivers, a sharp limit. The lag criterion is unit-tested.
    # Four short steps: enough to bracket the limit on this machine (its precision, a bracket within 5 %, is the
    # search's own, unit-tested in tests/unit/test_findmax.py); the full search is `make bench`'s question.
    found = mqusers("find-max", "-f", locustfile, "--host", broker.url, "--destination", queue, "--start", "4000",
                    "--json", str(tmp_path / "fm.json"), "--workdir", str(tmp_path / "steps"), "--steps", "4",
                    "--max-lag-ms", str(LAG_MS), "--slo", "none", *STEP)  # fmt: skip
    assert found.returncode == 0, found.stdout + found.stderr
    said = " ".join(found.stdout.split())  # the answer wraps at 100 columns, wherever its figures fall
    document = json.loads((tmp_path / "fm.json").read_text())
    max_rate = document["max_rate"]
    # A floor against a broken search only: with other work on the two cores it bracketed 1,252 and, in CI's
    # last phase, 947 (seen).
    assert document["kind"] == "find-max" and max_rate >= 500, document
    if document["bound"] == "lower":  # only a lower bound, said so: the generator or this machine failed first, or
        # the steps ran out on a step that kept up (a fast machine: 4,000, 8,000, 16,000 failed with 1 process and
        # kept up with 2)
        if document["limit"]:
            assert f"limit: {document['limit']}, not the broker" in said
        else:
            assert document["ended"].startswith("4 steps") and steps_kept_up_at_top(document), document
        assert f"highest rate kept up with: at least {max_rate:,.0f} msg/s" in said
    else:
        assert document["bound"] == "found" and f"highest rate kept up with: {max_rate:,.0f} msg/s, " in said
        # The rate named as failed is a step that failed on the broker's account (a step the machine
        # starved is noted apart, and may be lower): one of the steps, the answer's own words printed.
        keeps_up = document["keeps_up"]
        failed = float(keeps_up["why"].split(" msg/s did not")[0].replace(",", ""))
        # The words round the rate (7,661 for a bisected 7,660.83).
        assert any(abs(failed - s["rate"]) <= 0.5 for s in document["steps"] if not s["sustained"]), keeps_up
        assert " ".join(keeps_up["text"].split()) in said and f"({failed:,.0f} msg/s did not: " in said
    steps = document["steps"]
    if document["bound"] == "found":
        # Bracketed: a step failed above the maximum, within 5 % of it when the search says it got that close.
        above = min(s["rate"] for s in steps if not s["sustained"])
        assert above > max_rate, steps
        if document["ended"] == "bracketed within 5%":
            assert above <= 1.05 * max_rate, steps
        else:
            assert document["ended"].startswith("4 steps"), document["ended"]
    for step in steps:  # each step's verdict agrees with its own run report
        row = json.loads(Path(step["report"]).read_text())["destinations"][0]
        # Sent over first send to last receive, the last 0.1 s of the tail after the last send forgiven.
        tail = max(0.0, row["span_s"] - row["send_span_s"] - TAIL_GRACE_S)
        assert step["achieved"] == pytest.approx(row["sent"] / (row["send_span_s"] + tail))
        assert step["sustained"] <= (row["lost"] == 0 and step["achieved"] >= 0.99 * step["rate"])
        processes = json.loads(Path(step["report"]).read_text())["generator"]["processes"].values()
        assert step["cpu_percent_max"] == max(p["cpu_percent_max"] for p in processes)  # the limit's evidence
        assert step["processes"] == max(1, len(processes))

    # Independent runs on a fresh queue, judged from their own reports.
    plan = StepPlan(locustfile, broker.url, users=4, consumers=2, warmup=1, window=3, max_lag_ms=LAG_MS,
                    workdir=tmp_path / "check", destination=queue + ".check")  # fmt: skip
    plan.workdir.mkdir()
    # Wide margins: on two cores shared with the test runner, what the broker sustains moves a lot from
    # one run to the next (checks after searches that bracketed 10,834 and 13,454 msg/s held 14,000 and
    # 20,000). So this catches a search that is off by a factor, not by 10 %; the steps are checked above.
    below, above = plan.run(0.5 * max_rate, 1), plan.run(2.5 * max_rate, 2)
    if below.lag_only:  # a stall of the shared cores (lag p99 can reach 50 ms): confirmed, as the search does
        below = plan.run(0.5 * max_rate, 3)
    # At half the maximum a 3 s window on the shared cores can read a few % short (1,955 of 2,000): the
    # check is for a search off by a factor, so 95 % holds it.
    assert below.sustained or below.achieved >= 0.95 * below.rate, below
    assert not above.sustained, above  # the broker's limit, or on a small machine the generator's


@pytest.mark.alone  # find-max and curve verdicts are rates and latencies
def test_a_search_that_never_failed_is_a_lower_bound_and_states_its_latency_bound(tmp_path: Path) -> None:
    broker = started("activemq")
    queue = f"/queue/mqusers.findmax.low.{uuid.uuid4().hex[:6]}"
    # A bound no broker meets (1 us): every step keeps up at these light rates and none is within it.
    found = mqusers("find-max", "-f", str(LOCUSTFILES / "put_get.py"), "--host", broker.url, "--destination", queue,
                    "--start", "200", "--max-rate", "400", "--slo", "p99<=1us", "--max-lag-ms", str(LAG_MS),
                    "--json", str(tmp_path / "fm.json"), "--workdir", str(tmp_path / "steps"), "--warmup", "1",
                    "--window", "3", "-u", "4", "--consumers", "2")  # fmt: skip
    assert found.returncode == 0, found.stdout + found.stderr
    document = json.loads((tmp_path / "fm.json").read_text())
    assert document["bound"] == "lower" and document["max_rate"] == 400.0, document
    assert document["within_latency"]["bound"] == "none" and document["within_latency"]["rate"] is None
    assert document["latency_bound"]["limit_ms"] == 0.001 and document["ended"].startswith("no step failed up to")
    out = found.stdout
    assert "highest rate kept up with: at least 400 msg/s" in out
    assert "(no step failed up to the ceiling; raise --max-rate)" in out and "maximum" not in out
    assert "highest rate also within p99 <= 0.001 ms: none" in out
    assert "schedule lag p99 is <= 50 ms" in out
    assert (
        "sustainable when it also has due-time latency (from when each message was due: late sends count) p99 <= "
        "0.001 ms" in " ".join(out.split())
    )
    assert {s["rate"] for s in document["steps"]} == {200.0, 400.0}
    for step in document["steps"]:  # each verdict from the step's own run report
        [row] = json.loads(Path(step["report"]).read_text())["destinations"]
        assert step["sustained"] and row["lost"] == 0 and row["send_rate_msgs"] >= 0.99 * step["rate"], step
        assert step["p99_ms"] == row["latency_ms"]["p99"] > 0.001 and step["latency_ok"] is False
        operations = json.loads(Path(step["report"]).read_text())["operations"]
        [due] = [op["latency_ms"]["p99"] for op in operations if op["name"].startswith("receive-due ")]
        assert step["due_p99_ms"] == due and f"due p99 {due:,.3f} ms > 0.001 ms" in out  # the bound judges due time


@pytest.mark.alone  # find-max and curve verdicts are rates and latencies
def test_curve_reports_latency_against_offered_load(tmp_path: Path) -> None:
    broker = started("activemq")
    queue = f"/queue/mqusers.curve.{uuid.uuid4().hex[:6]}"
    # The lag bound loosened as in find-max's test above: this machine's loop lag p99 reached 5.7-11.5 ms at 1,000
    # msg/s today, with CPU to spare (this test failed in a full run at a3ed2ea, passed alone).
    done = mqusers("curve", "-f", str(LOCUSTFILES / "put_get.py"), "--host", broker.url, "--destination", queue,
                   "--max-rate", "2000", "--percents", "25,50", "--json", str(tmp_path / "c.json"),
                   "--max-lag-ms", str(LAG_MS), *SHORT)  # fmt: skip
    points = json.loads((tmp_path / "c.json").read_text())["points"]
    # Exit 0 when a point kept up, 1 when none did (as find-max): a curve with nothing kept up is no answer.
    assert done.returncode == (0 if any(p["sustained"] for p in points) else 1), done.stdout + done.stderr
    assert [(p["percent"], p["offered"]) for p in points] == [(25.0, 500.0), (50.0, 1000.0)]
    for point in points:
        report = json.loads(Path(point["report"]).read_text())
        [row] = report["destinations"]
        # A stall of the shared machine inside a point's 4 s window can leave it short of 99 % (984 of 1,000 msg/s
        # in a full run): the point then says so from its own figures, and the broker still delivered it all.
        short = (f"{point['achieved']:,.0f} msg/s < {0.99 * point['offered']:,.0f}, 99% of {point['offered']:,.0f}"
                 " (send to last receive)")  # fmt: skip
        assert point["sustained"] or short in point["reason"], point
        assert point["achieved"] >= 0.95 * point["offered"] and row["lost"] == 0 == point["errors"], point
        assert point["p99_ms"] == row["latency_ms"]["p99"]
        tail = max(0.0, row["span_s"] - row["send_span_s"] - TAIL_GRACE_S)  # as find-max's steps are judged
        assert point["achieved"] == pytest.approx(row["sent"] / (row["send_span_s"] + tail))
    # The headline names only a point that kept up (--max-rate is the curve's 100 %, no maximum as such).
    kept = [p["offered"] for p in points if p["sustained"]]
    said = f"headline: highest rate kept up with {max(kept):,.0f} msg/s (" if kept else "headline: no point kept up"
    assert said in done.stdout and "maximum" not in done.stdout, done.stdout


def test_a_step_without_a_report_ends_the_search_with_one_line(tmp_path: Path) -> None:
    done = mqusers("find-max", "-f", str(LOCUSTFILES / "put_get.py"), "--host", "stomp://127.0.0.1:1",
                   "--workdir", str(tmp_path), *SHORT, timeout=120)  # fmt: skip
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert "without a report at 1,000 msg/s" in line and "cannot reach the broker" in line
    missing = mqusers("find-max", "-f", "nowhere.py", "--host", "stomp://127.0.0.1:1", timeout=60)
    assert missing.returncode != 0 and "no locustfile nowhere.py" in missing.stderr
