"""Does find-max agree with plain runs? Its answer against the highest rate a plain run of the same locustfile keeps up.

    python -m benchmarks.findmax_agreement --host stomp://127.0.0.1:61613 [--rounds 1] [--tolerance 10] [--slo S]
        [--max-rate R]

Each round runs ``mqusers find-max`` (defaults: 5 s warm-up, 10 s window, ``--slo p99<=20x``) on
``locustfiles/put_get.py`` (``-u 4 --consumers 2``, 1 KB), takes its answer A (the highest rate also
within its latency bound, that bound in ms, and the generator processes its step at A ran with), then
plain ``locust`` runs of the same locustfile with that many processes, each the length of one of
find-max's steps (the same 5 s warm-up and 10 s window) on a fresh queue, judged here from their own
JSON reports and nothing of find-max's: a plain run *keeps up* when nothing is lost or unreceived, it
received at least 99 % of the offered rate, and its receive-due p99 is within the search's bound. A
rate is kept up with when most of three plain runs keep up (the runs stop once two agree), their
kept-up fractions pooled so they fall with the rate (:func:`pooled`): near the knee one run's due p99
on two cores shared with the broker is a coin toss between a good mode and a stall of the machine (60
then 218 ms at 10,000 msg/s), and a rate can keep up where a lower one did not. A is *within the
tolerance* (10 %) of L, the highest rate plain runs keep up with, when ``0.9 L < A <= 1.1 L``: plain
runs must keep up at A, or else at ``A / 1.1`` (else find-max overstated by more than the tolerance),
and must not at ``A / 0.9`` (else it understated by more than the tolerance). A failed check runs the
ladder on (+10 % or -10 % of A a step) to say by how much. Exit status: 0 every round agreed, 1 a round did not,
2 no measurement.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import BenchError, check_broker
from benchmarks.locust_cli import PUT_GET, ROOT, child_env
from mqusers.findmax.findstep import TAIL_GRACE_S  # the grace find-max's steps give: one rule for both sides

WARMUP_S, RUN_S = 5, 10
#: Plain runs a rate at most: it is kept up with when most of them keep up.
VOTES = 3
RATE_FRACTION = 0.99


@dataclass(frozen=True)
class Plain:
    rate: float
    received: float
    lost: int
    due_p99_ms: float | None

    def keeps_up(self, bound_ms: float) -> bool:
        return (not self.lost and self.received >= RATE_FRACTION * self.rate
                and self.due_p99_ms is not None and self.due_p99_ms <= bound_ms)  # fmt: skip

    def line(self, bound_ms: float) -> str:
        due = "-" if self.due_p99_ms is None else f"{self.due_p99_ms:,.3f}"
        verdict = "keeps up" if self.keeps_up(bound_ms) else "does not"
        return (f"  plain run at {self.rate:9,.0f} msg/s: received {self.received:9,.1f} msg/s, lost {self.lost:,},"
                f" due p99 {due} ms (bound {bound_ms:,.3f}): {verdict}")  # fmt: skip


@dataclass(frozen=True)
class Verdict:
    """The plain runs at one rate: kept up with when most of them keep up."""

    rate: float
    runs: tuple[Plain, ...]

    def keeps_up(self, bound_ms: float) -> bool:
        return 2 * sum(run.keeps_up(bound_ms) for run in self.runs) > len(self.runs)


def find_max(host: str, workdir: Path, extra: list[str]) -> tuple[float, float, dict[str, Any]]:
    """find-max's answer within its latency bound, the bound in ms, and its document."""
    out = workdir / "fm.json"
    command = [sys.executable, "-m", "mqusers.commands.cli", "find-max", "-f", PUT_GET, "--host", host, "-u", "4",
               "--consumers", "2", "--destination", f"/queue/bench.agree.{uuid.uuid4().hex[:6]}", "--json", str(out),
               "--workdir", str(workdir / "steps"), *extra]  # fmt: skip
    print("$ " + " ".join(command), flush=True)
    done = subprocess.run(command, cwd=ROOT, env=child_env(), timeout=2400, check=False)
    if done.returncode != 0 or not out.is_file():
        raise BenchError(f"find-max exited {done.returncode} without an answer")
    document = json.loads(out.read_text())
    within, bound = document.get("within_latency") or {}, document.get("latency_bound") or {}
    if not within.get("rate") or not bound.get("limit_ms"):
        raise BenchError(f"find-max found no rate within a latency bound: {document.get('ended')}")
    return float(within["rate"]), float(bound["limit_ms"]), document


def answer_processes(document: dict[str, Any], answer: float) -> int:
    """The generator processes of find-max's step that held ``answer`` within its bound."""
    held = [s for s in document.get("steps", []) if s.get("rate") == answer and s.get("sustained")
            and s.get("latency_ok") is not False]  # fmt: skip
    return max((int(s.get("processes") or 1) for s in held), default=1)


def plain(host: str, rate: float, workdir: Path, index: int, processes: int = 1) -> Plain:
    """One plain locust run at ``rate`` with ``processes`` generator processes, judged from its own report."""
    report = workdir / f"plain-{index:02d}.json"
    command = [sys.executable, "-m", "locust", "-f", PUT_GET, "--headless", "--host", host, "-u", "4", "-r", "4",
               "-t", f"{WARMUP_S + RUN_S}s", "--only-summary", "--mq-consumers", "2", "--mq-total-rate",
               f"{rate:.3f}", "--mq-warmup", str(WARMUP_S), "--mq-destination",
               f"/queue/bench.agree.plain.{uuid.uuid4().hex[:6]}", "--mq-report-json", str(report)]  # fmt: skip
    command += ["--processes", str(processes)] if processes > 1 else []
    with open(workdir / f"plain-{index:02d}.log", "w") as log:
        subprocess.run(command, cwd=ROOT, env=child_env(), stdout=log, stderr=log, timeout=WARMUP_S + RUN_S + 120)
    if not report.is_file():
        raise BenchError(f"the plain run at {rate:,.0f} msg/s wrote no report (see {workdir})")
    document = json.loads(report.read_text())
    rows = [row for row in document.get("destinations", []) if row.get("sent")]
    dues = [op["latency_ms"]["p99"] for op in document.get("operations", [])
            if op["name"].startswith("receive-due ") and op.get("latency_ms")]  # fmt: skip
    return Plain(rate, sum(map(received_rate, rows)), sum(r["lost"] + r["unreceived"] for r in rows),
                 max(dues) if dues else None)  # fmt: skip


def received_rate(row: dict[str, Any]) -> float:
    """What a destination received a second: over its send span, and over as much of the tail after the last send
    as exceeds ``TAIL_GRACE_S`` (a backlog). First send to last receive (``throughput_msgs``) adds the last
    message's latency to a 10 s window: 8,200 at 8,282 msg/s with every message in 5 ms, 8,994 at 9,110
    (a 130 ms straggler), under the 99 % rule with nothing behind."""
    send_span, tail = float(row["send_span_s"]), max(0.0, float(row["span_s"]) - float(row["send_span_s"]))
    return float(row["received"]) / max(send_span + max(0.0, tail - TAIL_GRACE_S), 1e-9)


def judged(run: Callable[[float], Plain], rate: float, bound_ms: float) -> Verdict:
    """Plain runs at ``rate`` until two agree (at most :data:`VOTES`), each printed as it ends."""
    runs: list[Plain] = []
    while len(runs) < VOTES:
        runs.append(run(rate))
        print(runs[-1].line(bound_ms) + (f" (run {len(runs)} at this rate)" if len(runs) > 1 else ""), flush=True)
        kept = sum(r.keeps_up(bound_ms) for r in runs)
        if kept >= 2 or len(runs) - kept >= 2:
            break
    return Verdict(rate, tuple(runs))


@dataclass
class Pool:
    """Adjacent rates whose plain runs are pooled: their kept-up fraction, ``kept`` of ``runs``."""

    rates: list[float]
    kept: int
    runs: int

    def text(self) -> str:
        span = f"{self.rates[0]:,.0f}" + (f"-{self.rates[-1]:,.0f}" if len(self.rates) > 1 else "")
        return f"{span} {self.kept}/{self.runs}"


def pooled(votes: dict[float, Verdict], bound_ms: float) -> list[Pool]:
    """The kept-up fraction of the plain runs at each rate, made to fall with the rate (pool adjacent violators,
    weighted by runs): a machine does not keep up better at a higher rate, and a rate that kept up where a lower
    one did not is pooled with it rather than read as the limit."""
    pools: list[Pool] = []
    for rate in sorted(votes):
        runs = votes[rate].runs
        pools.append(Pool([rate], sum(r.keeps_up(bound_ms) for r in runs), len(runs)))
        while len(pools) > 1 and pools[-2].kept * pools[-1].runs < pools[-1].kept * pools[-2].runs:
            last = pools.pop()
            pools[-1] = Pool(pools[-1].rates + last.rates, pools[-1].kept + last.kept, pools[-1].runs + last.runs)
    return pools


def agreement(run: Callable[[float], Plain], answer: float, bound_ms: float, tolerance: float) -> tuple[bool, str]:
    """Whether ``answer`` lies within ``tolerance`` of the highest rate plain runs (``run(rate)``) keep up with,
    and the verdict's line: the answer itself first, ``answer / (1 + tolerance)`` only when the answer is not kept
    up with, then ``answer / (1 - tolerance)``; on a disagreement, the ladder on to say by how much. A rate is
    kept up with when most of its runs, pooled to fall with the rate (:func:`pooled`), keep up."""
    votes: dict[float, Verdict] = {}

    def kept(rate: float) -> bool:
        if rate not in votes:
            votes[rate] = judged(run, rate, bound_ms)
        pool = next(p for p in pooled(votes, bound_ms) if rate in p.rates)
        return 2 * pool.kept > pool.runs

    low, high = answer / (1 + tolerance), answer / (1 - tolerance)
    step, last = -0.1, low
    if kept(answer) or kept(low):
        kept(high)
        below = next(r for r in (answer, low) if r in votes and kept(r))  # pooling with ``high`` only raises them
        fractions = "; ".join(p.text() for p in pooled(votes, bound_ms))
        if not kept(high):
            at = f"{answer:,.0f}" if below == answer else f"{low:,.0f} (not at {answer:,.0f})"
            return True, f"AGREE: plain runs keep up at {at} and not at {high:,.0f} msg/s (kept up: {fractions})"
        step, last = 0.1, high
    # By how much: walk on in steps of 10 % of the answer, up to four more rates.
    factor = last / answer
    for _ in range(4):
        factor += step
        if factor <= 0.3:
            break
        last = factor * answer
        if kept(last) != (step > 0):
            break
    said = "understated" if step > 0 else "overstated"
    fractions = "; ".join(p.text() for p in pooled(votes, bound_ms))
    return False, (f"DISAGREE: find-max {said} what plain runs keep up with (last plain runs at {last:,.0f} msg/s;"
                   f" kept up: {fractions})")  # fmt: skip


def round_once(host: str, tolerance: float, workdir: Path, extra: list[str]) -> bool:
    answer, bound_ms, document = find_max(host, workdir, extra)
    processes = answer_processes(document, answer)
    print(f"find-max: {answer:,.0f} msg/s within {document['latency_bound']['text']} ({document['ended']});"
          f" plain runs with its {processes} generator process{'es' if processes > 1 else ''} there")  # fmt: skip
    index = iter(range(1, 100))

    def run(rate: float) -> Plain:
        return plain(host, rate, workdir, next(index), processes)

    agreed, verdict = agreement(run, answer, bound_ms, tolerance)
    print(verdict, flush=True)
    return agreed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.findmax_agreement", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="stomp://127.0.0.1:61613", help="the broker, stomp://HOST:PORT")
    parser.add_argument("--rounds", type=int, default=1, help="searches, each checked by plain runs (default 1)")
    parser.add_argument("--tolerance", type=float, default=10.0, help="percent (default 10)")
    parser.add_argument("--quick", action="store_true", help="find-max with 1 s warm-up, 3 s windows, 6 steps: a check")
    parser.add_argument("--slo", default="", help="find-max's --slo (default: find-max's own default)")
    parser.add_argument("--max-rate", type=float, default=0.0,
                        help="find-max's --max-rate: no step above it (default: none), e.g. to ask whether its "
                             "overload steps above the latency bound's bracket move the bracket")  # fmt: skip
    options = parser.parse_args(argv)
    try:
        check_broker(options.host)
        agreed = []
        for number in range(1, options.rounds + 1):
            print(f"round {number} of {options.rounds}", flush=True)
            with tempfile.TemporaryDirectory(prefix="bench-agree.") as folder:
                extra = ["--warmup", "1", "--window", "3", "--steps", "6"] if options.quick else []
                extra += ["--slo", options.slo] if options.slo else []
                extra += ["--max-rate", f"{options.max_rate:g}"] if options.max_rate else []
                agreed.append(round_once(options.host, options.tolerance / 100.0, Path(folder), extra))
    except (BenchError, subprocess.TimeoutExpired) as error:
        print(f"benchmark failed: {error}", file=sys.stderr)
        return 2
    print(f"rounds agreeing: {sum(agreed)} of {len(agreed)}")
    return 0 if all(agreed) else 1


if __name__ == "__main__":
    sys.exit(main())
