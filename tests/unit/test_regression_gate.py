"""``--mq-gate-regression`` against ``--mq-baseline``: parsed once, refused before load when it cannot work, and
failing a run only when the whole interval of a figure's difference lies beyond its threshold (simulated runs)."""

from __future__ import annotations

from locust.argument_parser import get_parser

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import mqusers  # noqa: F401  (registers the --mq-* arguments)
from mqusers.measure.book import Book
from mqusers.options.gatespec import GATE_FIGURES, parse_regressions
from mqusers.options.parsing import OptionError
from mqusers.options.settings import Settings, read_settings
from mqusers.report.build import RunFacts, RunReport, build_report
from mqusers.report.gates import gate_failures, judge
from mqusers.run.ending import DrainOutcome
from mqusers.stats.figures import FIGURES
from mqusers.wiring.admission import baseline_problem
from tests.unit.synthetic_runs import document, interval_latencies


def test_the_gate_names_the_statistics_figures() -> None:
    assert GATE_FIGURES == FIGURES


def test_regressions_are_figure_percent_items() -> None:
    flag = "--mq-gate-regression"
    assert parse_regressions("p99:10%, throughput:5", flag) == (("p99", 0.1), ("throughput", 0.05))
    assert parse_regressions("p99.9:0%", flag) == (("p99.9", 0.0),)
    for bad, said in (("p98:10%", "is not FIGURE:PERCENT"), ("p99", "is not FIGURE:PERCENT"),
                      ("p99:10%,p99:5%", "p99 is given twice"), ("p50:2000%", "at most 1000 %")):  # fmt: skip
        with pytest.raises(OptionError, match=said):
            parse_regressions(bad, flag)


def report(baseline: Path, gate: str, latencies: list[Any], locustfile: str = "pubsub.py") -> RunReport:
    facts = RunFacts("run1", 0.0, 60.0, "time", DrainOutcome(True, 1.0, ""), scenario={"locustfile": locustfile})
    settings = Settings(baseline=str(baseline), gate_regression=parse_regressions(gate, "--mq-gate-regression"))
    return dataclasses.replace(build_report(Book(), None, facts, settings), intervals=document(latencies)["intervals"])


def test_a_significant_regression_beyond_the_threshold_fails_the_run(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    baseline = tmp_path / "base.json"
    baseline.write_text(json.dumps(document(interval_latencies(rng, 30, 400, 1.0))))
    slower = interval_latencies(rng, 30, 400, 1.0, scale=1.6)
    [p99] = gate_failures(report(baseline, "p99:10%,throughput:5%", slower))
    assert (
        p99.startswith("receive /queue/x: p99 slower than --mq-baseline by +")
        and "at 97.5 %, 95 % over the gate's 2 figures)" in p99
    )
    assert p99.endswith("beyond --mq-gate-regression p99:10%; one baseline run: the run-to-run noise is not in the "
                        "interval")  # fmt: skip
    # The same run against a threshold its interval does not lie wholly beyond: no failure.
    assert gate_failures(report(baseline, "p99:200%", slower)) == []


def test_an_identical_run_or_a_faster_one_passes(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    baseline = tmp_path / "base"
    baseline.mkdir()
    for i in range(3):
        (baseline / f"{i}.json").write_text(json.dumps(document(interval_latencies(rng, 30, 400, 1.0))))
    gate = "p50:0%,p90:0%,p99:0%,p99.9:0%,throughput:0%"
    assert gate_failures(report(baseline, gate, interval_latencies(rng, 30, 400, 1.0))) == []
    assert gate_failures(report(baseline, gate, interval_latencies(rng, 30, 400, 1.0, scale=0.6))) == []


def test_a_figure_with_too_few_samples_is_named_not_gated(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    baseline = tmp_path / "base.json"
    baseline.write_text(json.dumps(document(interval_latencies(rng, 30, 400, 1.0))))
    # 30 x 200 samples: p99.9 needs 10,000 a run (10 above it); p50 has plenty. A slower p99.9 cannot fail the run.
    failures, notes = judge(report(baseline, "p50:1000%,p99.9:0%", interval_latencies(rng, 30, 200, 1.0, scale=3)))
    assert failures == []
    assert notes == ["--mq-gate-regression did not judge receive /queue/x p99.9: too few samples for a verdict (a "
                     "verdict needs at least 5 intervals with samples in every run of each side and, for a percentile,"
                     " 10 samples above it (p99: 1,000), and an interval of some width); those figures neither fail "
                     "the run nor pass it"]  # fmt: skip
    assert judge(report(baseline, "p50:1000%", interval_latencies(rng, 30, 200, 1.0))) == ([], [])


def test_a_run_that_cannot_be_compared_fails_the_gate(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    baseline = tmp_path / "base.json"
    baseline.write_text(json.dumps(document(interval_latencies(rng, 5, 50, 1.0))))
    [failure] = gate_failures(report(baseline, "p99:10%", interval_latencies(rng, 5, 50, 1.0), locustfile="q.py"))
    said = f"this run ran q.py, {baseline} ran pubsub.py"
    assert failure == f"--mq-gate-regression: cannot compare this run with --mq-baseline: {said}"


def test_the_gate_and_its_baseline_come_together(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match=r"^--mq-baseline is the regression gate's: give --mq-gate-regression"):
        read_settings(get_parser().parse_args(["-f", "x.py", "--mq-baseline", str(tmp_path)]), None)
    with pytest.raises(
        OptionError, match=r"^--mq-gate-regression compares the run with a baseline: give --mq-baseline"
    ):
        read_settings(get_parser().parse_args(["-f", "x.py", "--mq-gate-regression", "p99:10%"]), None)
    given = [
        "-f",
        "x.py",
        "--mq-baseline",
        str(tmp_path),
        "--mq-gate-regression",
        "p99:10%",
        "--mq-gate-confidence",
        "90",
    ]
    settings = read_settings(get_parser().parse_args(given), None)
    assert (settings.baseline, settings.gate_regression, settings.gate_confidence) == (
        str(tmp_path),
        (("p99", 0.1),),
        90.0,
    )


def test_a_baseline_that_cannot_be_read_is_refused_before_load(tmp_path: Path) -> None:
    environment = SimpleNamespace(parsed_options=SimpleNamespace(locustfile="locustfiles/pubsub.py"))
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"kind": "run"}))
    said = baseline_problem(environment, Settings(baseline=str(old)))  # type: ignore[arg-type]
    assert said == f'--mq-baseline: {old}: no "intervals" (a run JSON written by --mq-report-json of this version)'
    other = tmp_path / "other.json"
    other.write_text(json.dumps(document(interval_latencies(np.random.default_rng(4), 3, 10, 1.0), locustfile="q.py")))
    said = baseline_problem(environment, Settings(baseline=str(other)))  # type: ignore[arg-type]
    assert said == f"--mq-baseline: {other} ran q.py, this run pubsub.py"
    said = baseline_problem(environment, Settings(baseline=str(tmp_path / "missing.json")))  # type: ignore[arg-type]
    assert said == f"--mq-baseline: {tmp_path / 'missing.json'}: no such file or folder"
    assert baseline_problem(environment, Settings()) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ({"destinations": [{"destination": "/queue/x", "lost": 56_079}]}, "56,079 messages lost or never received"),
        ({"generator": {"verdict": "saturated"}}, "generator saturated"),
        ({"ended_by": "interrupt"}, "ended early: interrupted (Ctrl-C or SIGTERM)"),
    ],
)
def test_a_baseline_that_lost_messages_was_contended_or_cut_short_is_refused(
    tmp_path: Path, fault: dict[str, Any], said: str
) -> None:
    environment = SimpleNamespace(parsed_options=SimpleNamespace(locustfile="locustfiles/pubsub.py"))
    path = tmp_path / "base.json"
    path.write_text(json.dumps({**document(interval_latencies(np.random.default_rng(5), 8, 50, 1.0)), **fault}))
    refused = baseline_problem(environment, Settings(baseline=str(path)))  # type: ignore[arg-type]
    assert refused == (f"--mq-baseline: {path} is not a baseline: {said} (--mq-baseline-unfit true holds the run "
                       "to it anyway)")  # fmt: skip
    assert baseline_problem(environment, Settings(baseline=str(path), baseline_unfit=True)) is None  # type: ignore[arg-type]
