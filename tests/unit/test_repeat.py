"""``mqusers repeat``: bad input refused before any run, each run's outcome, the statistics of the runs that count.

The runs are faked at ``run_locust`` (the real child process is the integration test's): each returns
a run JSON whose intervals hold known latencies, so every printed figure has an independent truth.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mqusers.commands import repeat
from mqusers.commands.locustchild import Finished, Interrupted, StepFailed
from mqusers.commands.repeat import option_value, parse_plan
from mqusers.stats.figures import run_headlines
from mqusers.stats.samples import run_from_document
from tests.unit.html_page import Page
from tests.unit.synthetic_runs import document, interval_latencies

LOCUST = ["-f", "pubsub.py", "--host", "stomp://127.0.0.1:61613", "--headless", "-t", "5s"]
OPERATION = "receive /queue/x"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["3", *LOCUST], "give the locust arguments after --"),
        (["1", "--", *LOCUST], "1 runs; a median and its interval need at least 2"),
        (["x", "--", *LOCUST], "argument count: invalid int value: 'x'"),
        (["3", "--", "-f", "pubsub.py", "-t", "5s"], "need --headless"),
        (["3", "--", "-f", "pubsub.py", "--headless"], "need -t DURATION"),
        (["3", "--", "--headless", "-t", "5x"], "-t '5x' is not a duration"),
        (["3", "--", *LOCUST, "--mq-run-id", "a"], "leave --mq-run-id out: each run gets a fresh one"),
        (["3", "--", *LOCUST, "--mq-report-json=r.json"], "leave --mq-report-json out"),
        (["3", "--slack", "0", "--", *LOCUST], "--slack must be positive"),
        (["3", "--results", "/proc/mqusers-no", "--", *LOCUST], "--results: cannot make '/proc/mqusers-no'"),
        (["3", "--json", "/no/such/folder/r.json", "--", *LOCUST], "--json: cannot write '/no/such/folder/r.json'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_before_any_run(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(repeat, "run_locust", lambda *a: pytest.fail("a run started"))
    with pytest.raises(SystemExit) as ended:
        repeat.main(argv)
    assert ended.value.code == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("mqusers repeat: ") and said in line


@pytest.mark.parametrize(
    ("args", "value"),
    [(["-t", "5s"], "5s"), (["-t5s"], "5s"), (["--run-time", "1m"], "1m"), (["--run-time=2m"], "2m"),
     (["-t", "1s", "-u", "2", "-t", "3s"], "3s"), (["-u", "2"], None), (["--tags", "x"], None)],
)  # fmt: skip
def test_a_locust_option_is_read_in_each_of_its_spellings(args: list[str], value: str | None) -> None:
    assert option_value(args, "-t", "--run-time") == value


def test_the_plan_runs_this_interpreters_locust_with_a_report_and_run_id_of_its_own(tmp_path: Path) -> None:
    plan, json_path, html_path = parse_plan(["4", "--results", str(tmp_path / "r"), "--", *LOCUST, "--mq-warmup", "2"])
    assert (plan.count, plan.seconds, plan.warmup, json_path, html_path) == (4, 5.0, "2", "", "")
    assert (tmp_path / "r").is_dir()  # made before any run
    command = plan.command(tmp_path / "r" / "a.json", "abc")
    report = str(tmp_path / "r" / "a.json")
    assert command[1:3] == ["-m", "locust"]
    assert command[3:] == [*LOCUST, "--mq-warmup", "2", "--mq-report-json", report, "--mq-run-id", "abc"]
    assert "its first 2 s left out" in plan.how_runs_differ()[0]
    assert "no --mq-warmup" in parse_plan(["2", "--results", str(tmp_path), "--", *LOCUST])[0].how_runs_differ()[0]


def runs_of(medians: list[float], seed: int = 1) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    return [document(interval_latencies(rng, 12, 200, median), operation=OPERATION) for median in medians]


class FakeRuns:
    """``run_locust`` answering each run in turn: a document (exit 0), (code, document), or an exception."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.commands: list[list[str]] = []

    def __call__(self, command: list[str], report: Path, limit: float, at: str, stop: Any) -> Finished:
        self.commands.append(command)
        answer = self.answers[len(self.commands) - 1]
        if isinstance(answer, BaseException):
            raise answer
        code, found = answer if isinstance(answer, tuple) else (0, answer)
        report.write_text(json.dumps(found))
        return Finished(code, found)


def repeat_with(answers: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int = 0) -> tuple[int, Any]:
    fake = FakeRuns(answers)
    monkeypatch.setattr(repeat, "run_locust", fake)
    out = tmp_path / "repeat.json"
    code = repeat.main([str(count or len(answers)), "--results", str(tmp_path / "runs"), "--json", str(out), "--",
                        *LOCUST])  # fmt: skip
    return code, json.loads(out.read_text())


def test_the_medians_are_the_medians_of_the_runs_figures_within_their_intervals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    documents = runs_of([1.0, 1.3, 0.8])
    code, summary = repeat_with(documents, tmp_path, monkeypatch)
    assert code == 0
    truth = [run_headlines(run_from_document(d, "run"))[OPERATION] for d in documents]
    for figure, found in summary["operations"][OPERATION].items():
        values = [t[figure] for t in truth]
        assert found["median"] == statistics.median(values)
        assert (found["min"], found["max"]) == (min(values), max(values))
        assert found["low"] <= found["median"] <= found["high"] and found["runs"] == 3
    assert [run["figures"][OPERATION] for run in summary["runs"]] == truth
    run_ids = [run["run_id"] for run in summary["runs"]]
    assert len(set(run_ids)) == 3  # a fresh run id each
    printed = capsys.readouterr().out
    assert f"{statistics.median(t['p99'] for t in truth):,.3f}" in printed
    assert "how the runs differ: each run is a fresh locust process with its own run id" in printed


def test_a_failed_run_is_reported_left_out_and_the_repeat_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    documents = runs_of([1.0, 1.1, 1.2])
    crashed = StepFailed("locust exited 1 without a report (run 2): boom", 1)
    code, summary = repeat_with([documents[0], crashed, (1, documents[1]), documents[2]], tmp_path, monkeypatch)
    assert code == 1
    assert [(r["status"], r["exit_code"], r["counted"]) for r in summary["runs"]] == [
        ("ok", 0, True), ("failed", 1, False), ("failed", 1, False), ("ok", 0, True)]  # fmt: skip
    assert summary["operations"][OPERATION]["p50"]["runs"] == 2
    assert "run 2/4" in capsys.readouterr().out


def test_a_gate_failing_counts_the_run_and_exits_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    documents = runs_of([1.0, 1.1])
    code, summary = repeat_with([documents[0], (3, documents[1])], tmp_path, monkeypatch)
    assert code == 3 and [r["status"] for r in summary["runs"]] == ["ok", "gate"]
    assert summary["operations"][OPERATION]["p99"]["runs"] == 2


def test_a_run_refused_before_load_stops_the_repeat_with_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = FakeRuns([StepFailed("locust exited 2 without a report (run 1): mqusers: --mq-size: bad", 2)])
    monkeypatch.setattr(repeat, "run_locust", fake)
    assert repeat.main(["3", "--results", str(tmp_path), "--", *LOCUST]) == 2
    assert len(fake.commands) == 1
    assert "refused before any load" in capsys.readouterr().err


def test_ctrl_c_ends_with_the_statistics_of_the_runs_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    documents = runs_of([1.0, 1.2, 0.9])

    class Stopped(FakeRuns):
        def __call__(self, command: list[str], report: Path, limit: float, at: str, stop: Any) -> Finished:
            if len(self.commands) == 2:
                stop.requested = True  # as the SIGINT handler notes it
            return super().__call__(command, report, limit, at, stop)

    fake = Stopped([documents[0], documents[1], Interrupted(documents[2])])
    monkeypatch.setattr(repeat, "run_locust", fake)
    out = tmp_path / "r.json"
    assert repeat.main(["5", "--results", str(tmp_path / "runs"), "--json", str(out), "--", *LOCUST]) == 1
    summary = json.loads(out.read_text())
    assert len(fake.commands) == 3 and summary["interrupted"]
    assert [(r["status"], r["counted"]) for r in summary["runs"]] == [("ok", True), ("ok", True),
                                                                       ("interrupted", False)]  # fmt: skip
    truth = [run_headlines(run_from_document(d, "run"))[OPERATION]["p99"] for d in documents[:2]]
    assert summary["operations"][OPERATION]["p99"]["median"] == statistics.median(truth)
    assert "interrupted after 3 run(s); statistics of the 2 measured to their end" in capsys.readouterr().out


def test_help_exits_0_and_shows_where_the_locust_arguments_go(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ended:
        repeat.main(["--help"])
    assert ended.value.code == 0
    assert capsys.readouterr().out.startswith("usage: mqusers repeat N [options] -- LOCUST ARGS")


def verdicts(document: dict[str, Any], generator: str = "ok", lost: int = 0, seconds: float = 5.3,
             ended_by: str = "time") -> dict[str, Any]:  # fmt: skip
    """``document`` with what a run's report says besides its intervals: generator verdict, audit, times."""
    row = {"destination": "/queue/x", "lost": lost, "unreceived": 0, "worker_lost": 0, "aborted": 7}
    return {**document, "generator": {"verdict": generator}, "destinations": [row], "ended_by": ended_by,
            "started": 1_796_513_000.0, "stopped": 1_796_513_000.0 + seconds}  # fmt: skip


def test_each_run_carries_its_own_verdicts_and_a_contended_run_is_not_a_baseline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seen: a contended run (p50 12.9 ms against 0.73 for the others) listed as "ok (exit 0)"."""
    clean, contended, other = runs_of([0.73, 12.9, 0.75])
    fake = FakeRuns([verdicts(clean), verdicts(contended, "contended"), verdicts(other, "broker-slow")])
    monkeypatch.setattr(repeat, "run_locust", fake)
    out, page = tmp_path / "repeat.json", tmp_path / "repeat.html"
    assert repeat.main(["3", "--results", str(tmp_path / "runs"), "--json", str(out), "--html", str(page), "--",
                        *LOCUST]) == 0  # fmt: skip
    summary = json.loads(out.read_text())
    ids = [run["run_id"] for run in summary["runs"]]
    printed = capsys.readouterr().out
    lines = [line for line in printed.splitlines() if line.startswith(("run ", "not a baseline"))]
    assert lines[0].startswith(f"run 1/3 {ids[0]}: ok (exit 0), 5.3 s, nothing lost, generator ok; ")
    assert lines[1].startswith(f"run 2/3 {ids[1]}: exit 0, generator contended: not a baseline, 5.3 s, nothing lost; ")
    assert lines[2].startswith(f"run 3/3 {ids[2]}: ok (exit 0), 5.3 s, nothing lost, generator broker-slow; ")
    assert lines[3] == f"not a baseline: run 2 {ids[1]}: generator contended (counted in the statistics)"
    assert re.search(rf"\n  run 2 {ids[1]} \(not a baseline\) +[\d,.]+ ", printed)  # its figures' row, marked
    assert re.search(rf"\n  run 1 {ids[0]} +[\d,.]+ ", printed)
    assert [run["baseline"]["fit"] for run in summary["runs"]] == [True, False, True]
    assert summary["runs"][1]["baseline"] == {"fit": False, "reasons": ["generator contended"], "lost": 0,
                                              "generator": "contended", "ended_early": None,
                                              "text": "not a baseline: generator contended"}  # fmt: skip
    assert summary["not_baseline"] == [{"run": 2, "run_id": ids[1], "reasons": ["generator contended"]}]
    header, *rows = Page(page.read_text()).tables["repeat-runs"]
    assert header[:8] == ["run", "run id", "status", "exit code", "lost", "generator", "ended early", "baseline"]
    assert [row[1:8] for row in rows] == [
        [ids[0], "ok", "0", "0", "ok", "no", "yes"],
        [ids[1], "ok", "0", "0", "contended", "no", "no: generator contended"],
        [ids[2], "ok", "0", "0", "broker-slow", "no", "yes"],
    ]


def test_a_run_that_lost_messages_or_ended_early_is_not_a_baseline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    documents = runs_of([1.0, 1.1, 1.2, 0.9])
    answers = [verdicts(documents[0]), verdicts(documents[1], lost=3), verdicts(documents[2], seconds=3.1),
               (3, verdicts(documents[3], "saturated", lost=1))]  # fmt: skip
    code, summary = repeat_with(answers, tmp_path, monkeypatch)
    assert code == 3  # the last run's own gate failed
    printed = capsys.readouterr().out
    ids = [run["run_id"] for run in summary["runs"]]
    lost = "exit 0, 3 messages lost or never received: not a baseline, 5.3 s, generator ok;"
    assert f"run 2/4 {ids[1]}: {lost}" in printed
    assert f"run 3/4 {ids[2]}: exit 0, ended early: 3.1 s of its 5 s (-t): not a baseline, 3.1 s, nothing lost," \
        in printed  # fmt: skip
    assert f"run 4/4 {ids[3]}: gate failed, exit 3, 1 message lost or never received, generator saturated: not a" \
        " baseline, 5.3 s;" in printed  # fmt: skip
    assert [r["reasons"] for r in summary["not_baseline"]] == [
        ["3 messages lost or never received"], ["ended early: 3.1 s of its 5 s (-t)"],
        ["1 message lost or never received", "generator saturated"]]  # fmt: skip
    assert [r["run"] for r in summary["not_baseline"]] == [2, 3, 4]
    assert "not a baseline: run 2" in " ".join(printed.split())  # the summary's line, wrapped


def test_every_run_fit_says_so_and_an_interrupted_run_is_no_baseline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    documents = runs_of([1.0, 1.2])
    code, summary = repeat_with([verdicts(d) for d in documents], tmp_path, monkeypatch)
    assert code == 0 and summary["not_baseline"] == []
    assert "baseline: every run can serve as one" in " ".join(capsys.readouterr().out.split())
    crashed = StepFailed("locust exited 1 without a report (run 2): boom", 1)
    stopped = Interrupted(verdicts(documents[1], ended_by="interrupt", seconds=2.0))
    code, summary = repeat_with([verdicts(documents[0]), crashed, stopped], tmp_path, monkeypatch)
    reasons = [["locust exited 1 without a report (run 2): boom"], ["ended early: interrupted (Ctrl-C or SIGTERM)"]]
    assert [r["reasons"] for r in summary["not_baseline"]] == reasons
