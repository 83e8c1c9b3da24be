"""``mqusers find-max`` and ``mqusers curve``: the command lines, each step a ``locust`` run, the tables.

A step runs the command a user would type, as a child process (bounded in time), with the
search's rate on the shared schedule and its own JSON report, which :func:`mqusers.findmax.search.judge`
reads. ``--processes N`` (or ``--master --expect-workers N`` with workers started elsewhere) gives
the generator several cores, and find-max gives it more (up to this machine's cores) when a failed
step's generator was not clearly idle; everything after ``--`` goes to ``locust`` unchanged. Bad
options are refused in one line with exit 2 before any step runs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mqusers.commands.locustchild import SLACK_S, Parser, StepFailed, masked, refuse, run_locust
from mqusers.commands.machineload import Sampler
from mqusers.findmax import findmaxanswer, recovery
from mqusers.findmax.findstep import Step, judge
from mqusers.findmax.latencybound import DEFAULT, LatencyBound, parse
from mqusers.findmax.search import Search, curve_points, search

COLUMNS = ("offered/s", "achieved/s", "keeps up", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "due p99 ms", "lag p99 ms",
           "drain s", "processes", "machine %", "latency", "generator")  # fmt: skip


@dataclass(frozen=True)
class StepPlan:
    """How every step of one search runs ``locust``."""

    locustfile: str
    host: str
    users: int
    consumers: int | None
    warmup: float
    window: float
    max_lag_ms: float | None
    workdir: Path
    processes: int = 0
    expect_workers: int = 0
    destination: str = ""
    extra: tuple[str, ...] = ()

    def command(self, rate: float, report: Path, index: int, processes: int = 0) -> list[str]:
        # This interpreter's locust, as matrix and cluster-compare run it: no `locust` script need be on PATH
        # (an unactivated venv, pipx), and never another installation's.
        command = [sys.executable, "-m", "locust", "-f", self.locustfile, "--headless", "--host", self.host,
                   "-u", str(self.users), "-r", str(self.users), "-t", f"{self.warmup + self.window:g}s",
                   "--only-summary", "--mq-total-rate", f"{rate:.3f}", "--mq-warmup", f"{self.warmup:g}",
                   "--mq-report-json", str(report)]  # fmt: skip
        if self.consumers is not None:
            command += ["--mq-consumers", str(self.consumers)]
        if self.destination:
            command += ["--mq-destination", f"{self.destination}.{index}"]  # a fresh one per step
        if max(processes, self.processes) > 1 and not self.expect_workers:
            command += ["--processes", str(max(processes, self.processes))]
        if self.expect_workers:
            command += ["--master", "--expect-workers", str(self.expect_workers), "--expect-workers-max-wait", "60"]
        return [*command, *self.extra]

    @property
    def size(self) -> int:
        """The generator's processes to start with: the workers, --processes, or one."""
        return self.expect_workers or max(1, self.processes)

    def run(self, rate: float, index: int, processes: int = 0) -> Step:
        report = self.workdir / f"step-{index:02d}.json"
        with Sampler() as load:
            finished = run_locust(self.command(rate, report, index, processes), report,
                                  self.warmup + self.window + SLACK_S, at=f" at {rate:,.0f} msg/s")  # fmt: skip
        document = finished.document
        busy = load.busy_percent(document.get("started", 0.0) + self.warmup, document.get("stopped", 0.0))
        return judge(document, rate, self.max_lag_ms, str(report), max(processes, self.size), busy)

    def recover(self, failed: Step, baseline: Step | None) -> str:
        """Light probes on the failed step's destination until one keeps up at the light load's latency."""
        index = int(Path(failed.report).stem.split("-")[1])  # step-NN: its destination's suffix
        probe_plan = replace(self, warmup=recovery.WARMUP_S, window=recovery.WINDOW_S)
        rate, why, limit_s = recovery.probe_rate(failed, baseline), "", recovery.WARMUP_S + recovery.WINDOW_S + SLACK_S
        for probe in range(1, recovery.PROBES + 1):
            report = self.workdir / f"step-{index:02d}-recovery-{probe}.json"
            command = probe_plan.command(rate, report, index, failed.processes)
            finished = run_locust(command, report, limit_s, at=f" at {rate:,.0f} msg/s (recovery probe)")
            why = recovery.unrecovered(judge(finished.document, rate, self.max_lag_ms, str(report)), baseline)
            print(f"{'':>10}  recovery probe {probe} at {rate:,.0f} msg/s: {why or 'recovered'}", flush=True)
            if not why:
                return ""
        return f"{recovery.PROBES} probes at {rate:,.0f} msg/s, the last: {why}"


def step_line(step: Step) -> str:
    def ms(value: float) -> str:
        return "-" if math.isnan(value) else f"{value:,.3f}"

    keeps_up = ("flaky" if step.flaky else "yes") if step.sustained else "no"
    latency = {True: "ok", False: "over", None: "-"}[step.latency_ok]
    cells = (f"{step.rate:,.0f}", f"{step.achieved:,.0f}", keeps_up, ms(step.p50_ms), ms(step.p99_ms),
             ms(step.p999_ms), ms(step.max_ms), ms(step.due_p99_ms), ms(step.lag_p99_ms), f"{step.drain_s:.1f}",
             str(step.processes),
             "-" if math.isnan(step.machine_busy_percent) else f"{step.machine_busy_percent:.0f}", latency,
             step.verdict)  # fmt: skip
    line = "  ".join(f"{cell:>10}" for cell in cells)
    return f"{line}  {step.why}" if step.why else line


def _parser(prog: str, description: str) -> argparse.ArgumentParser:
    parser = Parser(prog=prog, description=description)
    parser.add_argument("-f", "--locustfile", required=True, help="the scenario (producers and consumers)")
    parser.add_argument("--host", required=True, help="the broker, stomp://HOST:PORT")
    parser.add_argument("-u", "--users", type=int, default=4, help="Locust users per step (default 4)")
    parser.add_argument("--consumers", type=int, default=None, help="--mq-consumers for each step")
    parser.add_argument("--destination", default="", help="base name: each step uses a fresh DESTINATION.<run>.<n>")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds left out of each step (default 5)")
    parser.add_argument("--window", type=float, default=10.0, help="measured seconds per step (default 10)")
    parser.add_argument("--max-lag-ms", type=float, default=None,
                        help="a rule on the schedule lag p99 of a step that keeps up (default none: late sends count "
                        "in the due-time latency the --slo bound judges)")  # fmt: skip
    parser.add_argument(
        "--processes",
        type=int,
        default=0,
        help="locust --processes N: generator cores to start with (find-max adds more if needed)",
    )
    parser.add_argument("--master", action="store_true", help="run each step as a Locust master (workers elsewhere)")
    parser.add_argument("--expect-workers", type=int, default=0, help="with --master: workers each step waits for")
    parser.add_argument("--json", default="", help="write the result here")
    parser.add_argument("--workdir", default="", help="keep each step's report and log here (default: a temp dir)")
    parser.add_argument("extra", nargs="*", help="after --: passed to locust as they are")
    return parser


def _plan(options: argparse.Namespace) -> StepPlan:
    if options.users < 2 or options.warmup < 0 or options.window <= 0 or (options.max_lag_ms or 1) <= 0:
        refuse("-u must be at least 2, --window and --max-lag-ms positive, --warmup >= 0")
    if options.processes < 0:
        refuse("--processes must be >= 0")
    if options.master != (options.expect_workers > 0):
        refuse("--master and --expect-workers N (N >= 1) go together")
    if not Path(options.locustfile).is_file():
        refuse(f"no locustfile {options.locustfile}")
    workdir = Path(options.workdir or tempfile.mkdtemp(prefix="mqusers-capacity-"))
    workdir.mkdir(parents=True, exist_ok=True)
    destination = f"{options.destination}.{uuid.uuid4().hex[:6]}" if options.destination else ""
    return StepPlan(options.locustfile, options.host, options.users, options.consumers, options.warmup,
                    options.window, options.max_lag_ms, workdir, options.processes, options.expect_workers,
                    destination, tuple(options.extra))  # fmt: skip


def _write(path: str, document: dict[str, Any]) -> None:
    if path:
        Path(path).write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")


def _run_search(plan: StepPlan, options: argparse.Namespace, bound: LatencyBound | None) -> Search:
    print("  ".join(f"{c:>10}" for c in COLUMNS), flush=True)
    index = iter(range(1, 1000))
    # Workers run elsewhere and cannot be added from here; local processes up to this machine's cores.
    most = plan.size if plan.expect_workers else max(plan.size, os.cpu_count() or 1)
    return search(lambda rate, processes: plan.run(rate, next(index), processes), options.start,
                  ceiling=options.ceiling, steps=options.steps, budget_s=options.budget, processes=plan.size,
                  max_processes=most, bound=bound, on_step=lambda step: print(step_line(step), flush=True),
                  recover=plan.recover)  # fmt: skip


def find_max(argv: Sequence[str]) -> int:
    parser = _parser("mqusers find-max", "The highest total rate the broker keeps up with, and within a latency "
                     "bound, by a search over paced runs.")  # fmt: skip
    parser.add_argument("--start", type=float, default=1000.0, help="first rate, msg/s (default 1000)")
    parser.add_argument("--max-rate", "--ceiling", dest="ceiling", type=float, default=math.inf,
                        help="never offer more than this, msg/s (default: no ceiling)")  # fmt: skip
    parser.add_argument("--steps", type=int, default=14, help="at most this many runs (default 14)")
    parser.add_argument("--budget", type=float, default=1800.0, help="stop starting steps after this many s")
    parser.add_argument("--slo", default=DEFAULT,
                        help="the latency bound: p50|p99|p99.9|max<=VALUE with us, ms or s (p99<=10ms), or x for"
                             " times the light load's, the median of the first kept-up steps"
                             f" (default {DEFAULT}); 'none' for no bound")  # fmt: skip
    options = parser.parse_args(argv)
    if options.start <= 0 or options.ceiling <= 0 or options.steps < 1 or options.budget <= 0:
        refuse("--start, --max-rate, --steps and --budget must be positive")
    try:
        bound = None if options.slo == "none" else parse(options.slo)
    except ValueError as error:
        refuse(str(error))
    plan = _plan(options)
    started = time.time()
    try:
        found = _run_search(plan, options, bound)
    except StepFailed as error:
        print(f"mqusers: {error}", file=sys.stderr)
        return 2
    criterion = findmaxanswer.criterion(plan.window, plan.warmup, plan.max_lag_ms, bound, found)
    print("\n" + "\n".join(findmaxanswer.lines(found, bound, criterion)))
    _write(options.json, {"kind": "find-max", **findmaxanswer.document(found, bound, criterion), "started": started,
                          "stopped": time.time(), "plan": _plan_document(plan),
                          "steps": [s.row() for s in found.steps]})  # fmt: skip
    return 0 if found.max_rate is not None else 1


def curve(argv: Sequence[str]) -> int:
    parser = _parser("mqusers curve", "Latency against offered load, at percentages of a maximum rate.")
    parser.add_argument("--max-rate", type=float, required=True, help="100 %%, msg/s (e.g. from find-max)")
    parser.add_argument("--percents", default="10,25,50,75,90,100", help="points (default 10,25,50,75,90,100)")
    options = parser.parse_args(argv)
    try:
        percents = [float(p) for p in options.percents.split(",")]
    except ValueError:
        refuse(f"--percents {options.percents!r} is not a list of numbers")
    if options.max_rate <= 0 or not percents or min(percents) <= 0:
        refuse("--max-rate and every percent must be positive")
    plan = _plan(options)
    print("   percent  " + "  ".join(f"{c:>10}" for c in COLUMNS), flush=True)
    index = iter(range(1, 1000))

    def run_step(percent: float, rate: float) -> Step:
        return plan.run(rate, next(index))

    def shown(percent: float, step: Step) -> None:
        print(f"{percent:>9g}%  {step_line(step)}", flush=True)

    try:
        points = curve_points(run_step, options.max_rate, percents, shown)
    except StepFailed as error:
        print(f"mqusers: {error}", file=sys.stderr)
        return 2
    headline = findmaxanswer.curve_headline(points, options.max_rate)
    print(f"\nheadline: {headline['text']}")
    _write(options.json, {"kind": "curve", "max_rate": options.max_rate, "plan": _plan_document(plan),
                          "headline": headline["text"], "kept_up": headline["kept_up"], "points": points})  # fmt: skip
    return 0 if headline["kept_up"] is not None else 1  # as find-max: a curve with no point kept up is no answer


def _plan_document(plan: StepPlan) -> dict[str, Any]:
    return {"locustfile": plan.locustfile, "host": plan.host, "users": plan.users, "consumers": plan.consumers,
            "warmup_s": plan.warmup, "window_s": plan.window, "max_lag_ms": plan.max_lag_ms,
            "processes": plan.processes, "expect_workers": plan.expect_workers, "workdir": str(plan.workdir),
            "extra": masked(plan.extra)}  # fmt: skip
