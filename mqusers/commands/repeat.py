"""``mqusers repeat N -- LOCUST ARGS``: the same test run N times, each a ``locust`` child process, then its statistics.

Each run is the command after ``--`` with its own JSON report in the results folder (named by
:func:`mqusers.report.history.result_name`) and a fresh run id, bounded by its ``-t`` plus
``--slack``; Ctrl-C or SIGTERM stops the run under way (it drains and reports) and the repeat
reports the runs done. Bad input is one line and exit 2 before any run starts.
"""

from __future__ import annotations

from locust.util.timespan import parse_timespan

import secrets
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mqusers.commands.locustchild import (
    SLACK_S,
    Interrupted,
    Parser,
    StepFailed,
    Stop,
    interruptible,
    masked,
    refuse,
    run_locust,
)
from mqusers.commands.repeatsummary import RunRecord, print_summary, write_outputs
from mqusers.options.parsing import OptionError
from mqusers.options.paths import writable_file, writable_folder
from mqusers.report.history import STAMP, result_name

#: Options the repeat gives each run itself.
OWN_OPTIONS = {"--mq-report-json": "each run's JSON goes into --results", "--mq-run-id": "each run gets a fresh one"}
#: Locust's exit code for options refused before any load: every run would be refused alike.
REFUSED = 2
#: A run's own gate (--mq-max-p99-ms ...) failed: it measured, and the repeat says so.
GATE = 3


@dataclass(frozen=True)
class Plan:
    """What every run of a repeat runs, and where its files go."""

    count: int
    locust: tuple[str, ...]
    seconds: float  # its -t
    slack: float
    results: Path
    warmup: str  # --mq-warmup as given, "" without

    def command(self, report: Path, run_id: str) -> list[str]:
        # This interpreter's locust, as find-max runs it: never another installation's.
        return [sys.executable, "-m", "locust", *self.locust, "--mq-report-json", str(report), "--mq-run-id", run_id]

    def how_runs_differ(self) -> list[str]:
        """What changes from one run to the next, said with the statistics."""
        warmup = (f"its first {self.warmup} s left out (--mq-warmup: each run warms up anew)" if self.warmup else
                  "measured from its start (no --mq-warmup: a fresh process's first seconds count)")  # fmt: skip
        return [f"each run is a fresh locust process with its own run id, {warmup}",
                "runs follow each other at once; the broker is neither restarted nor emptied between them (a message"
                " of an earlier run is counted apart, never measured)"]  # fmt: skip


def option_value(args: Sequence[str], *names: str) -> str | None:
    """The last value given for any of ``names`` (``-t 5s``, ``-t5s``, ``--run-time=5s``), None when absent."""
    value = None
    for i, arg in enumerate(args):
        for name in names:
            if arg == name:
                value = args[i + 1] if i + 1 < len(args) else ""
            elif arg.startswith(name + "=") or (len(name) == 2 and arg.startswith(name) and len(arg) > 2):
                value = arg[len(name) + 1 :] if arg.startswith(name + "=") else arg[2:]
    return value


def parse_plan(argv: Sequence[str]) -> tuple[Plan, str, str]:
    """The plan, the --json and --html paths; refuses bad input in one line with exit 2."""
    if "--" not in argv and not {"-h", "--help"} & set(argv):
        refuse("mqusers repeat: give the locust arguments after --: mqusers repeat N -- -f FILE --headless -t 30s ...")
    split = list(argv).index("--") if "--" in argv else len(argv)
    parser = Parser(prog="mqusers repeat", usage="mqusers repeat N [options] -- LOCUST ARGS (with --headless, -t)",
                    description="Run one locust test N times; each headline figure's median, 95 % confidence "
                    "interval and spread (docs/repeat.md).",
                    epilog="exit 0; 1: a run failed or Ctrl-C; 2: bad input or a run refused before load; 3: a "
                    "run's own gate failed")  # fmt: skip
    parser.add_argument("count", type=int, help="how many runs (at least 2)")
    parser.add_argument("--results", default="", help="the folder of each run's JSON and log (default: a new "
                        "reports/repeat-<UTC time>)")  # fmt: skip
    parser.add_argument("--json", default="", help="write the statistics and each run's figures here")
    parser.add_argument("--html", default="", help="write the page of the runs and their statistics here")
    parser.add_argument("--slack", type=float, default=SLACK_S,
                        help=f"a run is killed after its -t plus this many s (default {SLACK_S:g})")  # fmt: skip
    options = parser.parse_args(argv[:split])
    locust = tuple(argv[split + 1 :])
    if options.count < 2:
        refuse(f"mqusers repeat: {options.count} runs; a median and its interval need at least 2")
    if options.slack <= 0:
        refuse("mqusers repeat: --slack must be positive")
    if "--headless" not in locust:
        refuse("mqusers repeat: the locust arguments need --headless (each run ends by itself)")
    given = option_value(locust, "-t", "--run-time")
    try:
        seconds = float(parse_timespan(given)) if given else 0.0
    except ValueError:
        refuse(f"mqusers repeat: -t {given!r} is not a duration; use e.g. 30s, 5m or 1h30m")
    if seconds <= 0:
        refuse("mqusers repeat: the locust arguments need -t DURATION (each run is bounded by it), e.g. -t 30s")
    for name, why in OWN_OPTIONS.items():
        if option_value(locust, name) is not None:
            refuse(f"mqusers repeat: leave {name} out: {why}")
    results = options.results or f"reports/repeat-{time.strftime(STAMP, time.gmtime())}"
    try:
        for flag, path in (("--json", options.json), ("--html", options.html)):
            if path:
                writable_file(path, flag)
        Path(writable_folder(results, "--results")).mkdir(parents=True, exist_ok=True)
    except OptionError as error:
        refuse(f"mqusers repeat: {error}")
    except OSError as error:
        refuse(f"mqusers repeat: --results: cannot make {results!r}: {error.strerror}")
    warmup = option_value(locust, "--mq-warmup") or ""
    plan = Plan(options.count, locust, seconds, options.slack, Path(results), "" if warmup in ("", "0") else warmup)
    return plan, options.json, options.html


def run_once(plan: Plan, index: int, stop: Stop) -> RunRecord:
    """Run ``index`` (from 1): its record, whatever happened (Ctrl-C: the record of a run interrupted)."""
    run_id = secrets.token_hex(6)
    report = plan.results / result_name(time.time(), run_id)
    record = RunRecord(index, run_id, str(report), run_time_s=plan.seconds)
    try:
        finished = run_locust(plan.command(report, run_id), report, plan.seconds + plan.slack, f" (run {index})", stop)
    except StepFailed as error:
        return record.failed(str(error), error.code)
    except Interrupted as stop:
        return record.interrupted(stop.document)
    return record.finished(finished.code, finished.document)


def main(argv: Sequence[str]) -> int:
    plan, json_path, html_path = parse_plan(argv)
    print(f"mqusers repeat: {plan.count} runs of locust {' '.join(masked(plan.locust))}; files in {plan.results}",
          flush=True)  # fmt: skip
    records: list[RunRecord] = []
    started = time.time()
    with interruptible() as stop:
        for index in range(1, plan.count + 1):
            if stop.requested:  # between two runs
                break
            record = run_once(plan, index, stop)
            records.append(record)
            print(record.line(plan.count), flush=True)
            if record.status == "failed" and record.code == REFUSED and record.document is None:
                print(f"mqusers repeat: run {index} was refused before any load; the others would be too",
                      file=sys.stderr)  # fmt: skip
                return REFUSED
    interrupted = stop.requested
    summary = print_summary(plan.how_runs_differ(), records, interrupted)
    summary.update({"repeats": plan.count, "locust": masked(plan.locust), "results": str(plan.results),
                    "how_runs_differ": plan.how_runs_differ(), "interrupted": interrupted, "started": started,
                    "stopped": time.time()})  # fmt: skip
    write_outputs(summary, records, json_path, html_path)
    if interrupted or any(r.status == "failed" for r in records):
        return 1
    return GATE if any(r.status == "gate" for r in records) else 0
