"""find-max's answer in words and JSON, and its latency bound, on hand-made searches."""

from __future__ import annotations

import json
import math
import re
from html import escape
from pathlib import Path
from typing import Any

import pytest

from mqusers.commands.capacity import COLUMNS, StepPlan, curve
from mqusers.findmax import findmaxanswer
from mqusers.findmax.findstep import Step
from mqusers.findmax.latencybound import LatencyBound, parse
from mqusers.findmax.search import Search
from mqusers.report.htmlreport import chart_data, render
from tests.unit.html_page import Page


def kept(rate: float, p99: float = 1.0, **fields: object) -> Step:
    return Step(rate, achieved=rate, sustained=True, p99_ms=p99, mb_per_s=rate / 1000, **fields)  # type: ignore[arg-type]


def failed(rate: float, reason: str = "9,000 msg/s < 99% of 16,000", limit: str = "broker", **fields: object) -> Step:
    return Step(rate, achieved=rate * 0.5, reason=reason, limit=limit, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "figure", "limit", "relative", "spec"),
    [
        ("p99<=10ms", "p99", 10.0, False, "p99<=10ms"),
        (" p99 <= 10 ms ", "p99", 10.0, False, "p99<=10ms"),
        ("p99.9<=2.5ms", "p99.9", 2.5, False, "p99.9<=2.5ms"),
        ("max<=1s", "max", 1000.0, False, "max<=1s"),
        ("p50<=250us", "p50", 0.25, False, "p50<=250us"),
        ("p99<=10x", "p99", 10.0, True, "p99<=10x"),
    ],
)
def test_a_latency_bound_parses(text: str, figure: str, limit: float, relative: bool, spec: str) -> None:
    assert parse(text) == LatencyBound(figure, limit, relative, spec)


@pytest.mark.parametrize("text", ["p99<10ms", "p99<=10", "p99=<10ms", "p95<=3ms", "p99<=-1ms", "p99<=ms", "",
                                  "p99<=10ms,max<=1s", "P99<=10MS", "p99<=1e3ms", "p99<=10 x 2"])  # fmt: skip
def test_a_bad_latency_bound_is_refused_in_one_line(text: str) -> None:
    with pytest.raises(ValueError) as refused:
        parse(text)
    assert "\n" not in str(refused.value) and f"--slo {text!r}" in str(refused.value)


def test_a_bound_judges_a_step_absolutely_or_against_the_first_kept_up_step() -> None:
    base = kept(1000.0, p99=1.5)
    assert parse("p99<=10ms").judge(kept(8000.0, p99=9.9), base) == {"latency_ok": True, "latency_reason": ""}
    relative = parse("p99<=10x")
    assert relative.judge(kept(14_672.0, p99=198.0), base) == {
        "latency_ok": False, "latency_reason": "p99 198.000 ms > 15.000 ms"}  # fmt: skip
    assert relative.judge(kept(8000.0, p99=15.0), base)["latency_ok"]
    assert relative.judge(kept(8000.0, p99=math.nan), base)["latency_ok"] is None  # put-only: nothing received
    assert relative.describe(base) == "p99 <= 10 x the light load's (1.500 ms at 1,000 msg/s) = 15.000 ms"
    assert relative.describe(None) == "p99 <= 10 x the light load's"
    assert parse("max<=1s").describe(None) == "max <= 1000 ms"
    assert relative.as_dict(base)["limit_ms"] == 15.0 and relative.as_dict(None)["limit_ms"] is None


def test_a_search_that_never_failed_says_at_least_never_maximum() -> None:
    found = Search(steps=[kept(1000.0), kept(2000.0), kept(4000.0)], max_rate=4000.0, slo_rate=4000.0,
                   ended="no step failed up to the ceiling 4,000 msg/s", baseline=kept(1000.0))  # fmt: skip
    bound = parse("p99<=10x")
    text = "\n".join(findmaxanswer.lines(found, bound, "CRITERION"))
    assert "highest rate kept up with: at least 4,000 msg/s, 4.00 MB/s (no step failed up to the ceiling; raise" \
           " --max-rate)" in text  # fmt: skip
    assert "also within p99 <= 10 x the light load's (1.000 ms at" \
           " 1,000 msg/s) = 10.000 ms: at least 4,000" \
           " msg/s" in text  # fmt: skip
    assert "criterion: CRITERION" in text and "maximum" not in text
    document = findmaxanswer.document(found, bound, "CRITERION")
    assert document["bound"] == "lower" and document["max_rate"] == 4000.0
    assert document["keeps_up"]["bound"] == document["within_latency"]["bound"] == "lower"
    out_of_steps = Search(steps=[kept(1000.0)], max_rate=1000.0, ended="1 steps run")
    assert "no step failed in 1 steps run; raise --steps" in findmaxanswer.lines(out_of_steps, None, "C")[2]
    out_of_time = Search(steps=[kept(1000.0)], max_rate=1000.0, ended="time budget spent")
    assert (
        findmaxanswer.figures(out_of_time, None)[0].why
        == "no step failed before the time budget ran out; raise --budget"
    )


def test_a_bracketed_search_gives_both_figures_each_with_the_step_above_it() -> None:
    steps = [kept(1000.0, p99=1.2), kept(8000.0, p99=4.0), failed(16_000.0),
             kept(14_672.0, p99=198.0, latency_ok=False, latency_reason="p99 198.000 ms > 12.000 ms")]  # fmt: skip
    found = Search(steps=steps, max_rate=14_672.0, failed_rate=16_000.0, slo_rate=8000.0, slo_failed_rate=14_672.0,
                   ended="bracketed within 5%", baseline=steps[0])  # fmt: skip
    keeps_up, within = findmaxanswer.figures(found, parse("p99<=10x"))
    assert keeps_up.text() == "14,672 msg/s, 14.67 MB/s (16,000 msg/s did not: 9,000 msg/s < 99% of 16,000)"
    assert within is not None and within.bound == "found"
    assert within.text() == "8,000 msg/s, 8.00 MB/s (14,672 msg/s did not: p99 198.000 ms > 12.000 ms)"
    document = findmaxanswer.document(found, parse("p99<=10x"), "C")
    assert document["bound"] == "found" and document["within_latency"]["rate"] == 8000.0
    assert document["latency_bound"]["limit_ms"] == pytest.approx(12.0)


def test_a_flaky_step_and_a_grown_generator_are_said_so() -> None:
    lag = "schedule lag p99 9.00 ms > 5 ms"
    steps = [
        kept(1000.0),
        failed(2000.0, lag, lag_only=True),
        kept(2000.0, flaky=True, rerun_after=lag),
        failed(4000.0, lag, processes=1),
        kept(4000.0, processes=2, rerun_after=lag),
        failed(8000.0, processes=2),
    ]
    found = Search(steps=steps, max_rate=4000.0, failed_rate=8000.0, ended="bracketed within 5%")  # fmt: skip
    text = findmaxanswer.lines(found, None, "C")
    assert "flaky" not in text[2]  # the figure's own step held with more processes, first time
    assert text[3] == f"note: 4,000 msg/s held with 2 generator processes after failing with fewer ({lag})"
    found.max_rate, found.failed_rate = 2000.0, 4000.0
    keeps_up, _ = findmaxanswer.figures(found, None)
    assert keeps_up.flaky == lag and keeps_up.as_dict()["flaky"] is True
    assert keeps_up.text().endswith(f"[flaky: failed once ({lag}), held on a rerun]")


def test_the_generator_or_the_machine_as_the_limit_is_a_lower_bound_with_its_figures() -> None:
    limited = ("at 16,000 msg/s (2 generator processes, busiest CPU 99 % of a core, loop lag p99 45.0 ms: generator"
               " saturated)")  # fmt: skip
    found = Search(steps=[kept(8000.0), failed(16_000.0, "generator saturated", "generator", processes=2)],
                   max_rate=8000.0, ended="12 steps run", limit="generator", limited=limited)  # fmt: skip
    keeps_up, _ = findmaxanswer.figures(found, None)
    assert keeps_up.bound == "lower" and keeps_up.text().startswith("at least 8,000 msg/s")
    assert keeps_up.why == (f"limit: generator, not the broker, {limited}; add workers on other machines"
                            " (--master --expect-workers N)")  # fmt: skip
    found.limit = "machine"
    assert "run the generator on another machine than the broker" in findmaxanswer.figures(found, None)[0].why
    starved = Search(steps=[failed(1000.0, limit="machine")], ended="not kept up with even at 1 msg/s", limit="machine",
                     limited="at 1 msg/s (...)")  # fmt: skip
    assert findmaxanswer.figures(starved, None)[0].why == (
        "not kept up with even at 1 msg/s; limit: machine, not the broker, at 1 msg/s (...); run the generator on"
        " another machine than the broker")  # fmt: skip
    nothing = Search(steps=[failed(1000.0)], ended="not kept up with even at 1 msg/s")
    assert findmaxanswer.document(nothing, None, "C")["bound"] == "none"
    assert (
        findmaxanswer.lines(nothing, None, "C")[2]
        == "highest rate kept up with: none (not kept up with even at 1 msg/s)"
    )


def test_the_criterion_names_every_condition() -> None:
    found = Search(baseline=kept(1000.0, p99=2.0))
    text = findmaxanswer.criterion(10, 5, 5.0, parse("p99<=10x"), found)
    for part in ("10 s window after a 5 s warm-up", "at least 99% of the offered rate", "first send to last receive",
                 "nothing is lost, unreceived or failed", "schedule lag p99 is <= 5 ms", "generator's verdict is ok",
                 "sustainable when it also has due-time latency (from when each message was due: late sends count) "
                 "p99 <= 10 x the light load's (2.000 ms at 1,000 msg/s)"
                 " = 20.000 ms"):  # fmt: skip
        assert part in text, part
    assert findmaxanswer.criterion(10, 5, 5.0, None, found).endswith("; no latency bound")
    assert "schedule lag" not in findmaxanswer.criterion(10, 5, None, None, found)  # the default: no such rule


def test_the_capacity_page_says_the_same_words_as_the_console() -> None:
    lag = "schedule lag p99 9.00 ms > 5 ms"
    steps = [kept(1000.0, p99=1.5, latency_ok=True), failed(2000.0, lag, lag_only=True),
             kept(2000.0, flaky=True, rerun_after=lag, latency_ok=True),
             kept(4000.0, p99=40.0, latency_ok=False, latency_reason="p99 40.000 ms > 15.000 ms")]  # fmt: skip
    found = Search(steps=steps, max_rate=4000.0, slo_rate=2000.0, slo_failed_rate=4000.0,
                   ended="no step failed up to the ceiling 4,000 msg/s", baseline=steps[0])  # fmt: skip
    bound = parse("p99<=10x")
    document = {"kind": "find-max", **findmaxanswer.document(found, bound, "CRITERION"),
                "steps": [s.row() for s in steps]}  # fmt: skip
    html = render([document], ["fm.json"])
    console = findmaxanswer.lines(found, bound, "CRITERION")
    for line in console[2:4]:
        label, text = line.split(": ", 1)
        assert f"<b>{escape(label)}:</b> {escape(text)}</li>" in html, line
    assert '<li class="bound-lower"><b>highest rate kept up with:</b> at least 4,000 msg/s' in html
    assert '<li class="bound-found"><b>highest rate also within' in html and "maximum" not in html.split("<script")[0]
    assert "criterion: CRITERION" in html and "search ended: no step failed up to the ceiling" in html
    # The offered rate as every msg/s figure (1 decimal), the words in text cells, "-" for none.
    cells = r'<tr><td>([\d,]+)\.0</td><td>[\d,.]+</td><td class="text">(\w+)</td><td class="\w+">([\w-]+)</td>'
    rows = re.findall(cells, html)
    assert rows == [("1,000", "yes", "ok"), ("2,000", "no", "-"), ("2,000", "flaky", "ok"), ("4,000", "yes", "over")]
    assert f"held on a rerun after: {lag}" in html and "p99 40.000 ms &gt; 15.000 ms" in html
    assert chart_data(document)["bound_ms"] == pytest.approx(15.0) and chart_data(document)["bound"] == "p99"
    old = render([{"kind": "find-max", "max_rate": 1800.0, "steps": []}], ["old.json"])
    assert "1,800 msg/s (saved without saying whether this is a lower bound)" in old


def curve_run(capacity: float, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int = 0) -> dict[str, Any]:
    """``mqusers curve --max-rate 4000`` (10 ... 100 %) on a model broker that keeps up to ``capacity``: its JSON
    (its exit status ``code``)."""

    def run(plan: StepPlan, rate: float, index: int, processes: int = 0) -> Step:
        held = rate <= capacity
        return Step(rate, achieved=min(rate, capacity), sustained=held, limit="" if held else "broker",
                    reason="" if held else f"{capacity:,.0f} msg/s < {0.99 * rate:,.0f}, 99% of {rate:,.0f}",
                    p99_ms=1.0 + rate / 1000 if held else 900.0)  # fmt: skip

    monkeypatch.setattr(StepPlan, "run", run)
    out = tmp_path / "curve.json"
    assert curve(["-f", __file__, "--host", "stomp://127.0.0.1:1", "--max-rate", "4000", "--json", str(out),
                  "--workdir", str(tmp_path / "steps")]) == code  # fmt: skip
    return dict(json.loads(out.read_text()))


def keeps_up_column(console: str) -> dict[str, str]:
    """The console table's "keeps up" cell by offered rate (a row: percent, offered, achieved, keeps up, ...)."""
    rows = [line.split() for line in console.splitlines() if re.match(r"\s+[\d.]+%  ", line)]
    return {row[1]: row[3] for row in rows}


def test_the_curves_headline_names_only_a_point_that_kept_up_in_console_json_and_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    document = curve_run(3000.0, tmp_path, monkeypatch)  # 3,600 and 4,000 msg/s (90 and 100 %) fall behind
    console = capsys.readouterr().out
    assert " keeps up " in console.splitlines()[0]
    column = keeps_up_column(console)
    assert column == {"400": "yes", "1,000": "yes", "2,000": "yes", "3,000": "yes", "3,600": "no", "4,000": "no"}
    headline = ("highest rate kept up with 3,000 msg/s (75 % of --max-rate 4,000 msg/s; 3,600 msg/s did not); p99 at"
                " 50 % (2,000 msg/s): 3.000 ms")  # fmt: skip
    assert console.splitlines()[-1] == f"headline: {headline}" and "maximum" not in console
    named = re.search(r"kept up with ([\d,]+) msg/s", headline)
    assert named is not None and column[named.group(1)] == "yes"  # the row the headline names says so
    assert document["headline"] == headline
    assert document["kept_up"] == {"rate": 3000.0, "percent": 75.0, "flaky": False}
    page = Page(render([document], ["curve.json"]))
    header, *rows = page.tables["points"]
    # The page's column has the console's label and cells.
    assert header[3] == "keeps up" == COLUMNS[2]
    assert {row[1].removesuffix(".0"): row[3] for row in rows} == column
    assert f"<b>headline:</b> {escape(headline)}" in render([document], ["curve.json"])


def test_a_curve_where_no_point_kept_up_says_so_plainly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    document = curve_run(100.0, tmp_path, monkeypatch, code=1)  # no answer: exit 1, as find-max
    console = capsys.readouterr().out
    assert set(keeps_up_column(console).values()) == {"no"}
    said = "no point kept up, down to 400 msg/s (10 % of --max-rate 4,000 msg/s): each row says why"
    assert console.splitlines()[-1] == f"headline: {said}" and "maximum" not in console
    assert (document["headline"], document["kept_up"]) == (said, None)


def test_a_curves_p99_is_a_kept_up_points_and_a_flaky_top_says_so() -> None:
    def point(percent: float, sustained: bool, p99: float, flaky: bool = False) -> dict[str, Any]:
        return {"percent": percent, "offered": 40.0 * percent, "sustained": sustained, "flaky": flaky, "p99_ms": p99}

    # The 50 % point fell behind (a stall), 75 % held on a rerun, 100 % did not: the headline's p99 is 25 %'s.
    points = [point(25, True, 1.2), point(50, False, 80.0), point(75, True, 2.5, flaky=True), point(100, False, 90.0)]
    found = findmaxanswer.curve_headline(points, 4000.0)
    assert found["kept_up"] == {"rate": 3000.0, "percent": 75, "flaky": True}
    assert found["text"] == ("highest rate kept up with 3,000 msg/s (75 % of --max-rate 4,000 msg/s; 4,000 msg/s did"
                             " not) [flaky: held on a rerun]; p99 at 25 % (1,000 msg/s): 1.200 ms")  # fmt: skip
    every = findmaxanswer.curve_headline([point(50, True, 1.0), point(100, True, 2.0)], 4000.0)["text"]
    assert every.startswith("highest rate kept up with 4,000 msg/s (100 % of --max-rate 4,000 msg/s);")
