"""Like with like in the grids (``mqusers matrix``, ``cluster-compare``): warm-up, steady runs, interleaved repeats.

Per broker configuration every cell first runs once for ``--warmup-seconds``, left out of every figure (a
cold JVM's JIT, a store's first files, a durable subscription's first pages); its rate only sizes the
measured runs. Each measured run leaves out its first ``--steady-after`` s (``--mq-warmup``), then lasts
the longer of ``--seconds`` and the time ``--messages`` take at its warm-up's rate. The repeats go
round-robin over the cells, each repeat starting one cell later, so a drift of the machine falls on every
cell alike. A cell is the median of its runs' steady throughput (receives per second over each run's
intervals after its ``--mq-warmup``) with :mod:`mqusers.stats`' 95 % interval and the runs' spread; two
cells of a row whose difference :func:`mqusers.stats.bootstrap.difference` cannot tell from noise are
marked.
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from mqusers.commands.locustchild import Interrupted, StepFailed, Stop, run_locust
from mqusers.measure.names import RECEIVE, event_name
from mqusers.options.parsing import OptionError
from mqusers.report.htmlgrids import NOISE
from mqusers.stats.bootstrap import SAME, difference, estimate
from mqusers.stats.evidence import TOO_FEW
from mqusers.stats.figures import THROUGHPUT, headline
from mqusers.stats.samples import Run, RunFileError, run_from_document

K = TypeVar("K", bound=Hashable)

#: What a cell's runs are compared on: the receives at the table's destination, one name for every cell.
OPERATION = RECEIVE
#: A run may overrun its count or -t by the drain (at most --mq-drain-max) and its start-up.
RUN_SLACK_S = 120.0


@dataclass(frozen=True)
class Steady:
    """How each cell is measured: its warm-up run, its runs' length and how many there are."""

    warmup_seconds: float
    steady_after: float
    seconds: float
    messages: int
    repeats: int

    def run_seconds(self, warmup_rate: float | None) -> int:
        """A measured run's ``-t``: its left-out start, then ``--seconds`` or the time ``--messages`` take if longer."""
        needed = self.messages / warmup_rate if warmup_rate else 0.0
        return math.ceil(self.steady_after + max(self.seconds, needed))

    def warmup_args(self) -> list[str]:
        return ["-t", f"{math.ceil(self.warmup_seconds)}s"]

    def run_args(self, warmup_rate: float | None) -> list[str]:
        left_out = ["--mq-warmup", f"{self.steady_after:g}"] if self.steady_after else []
        return ["-t", f"{self.run_seconds(warmup_rate)}s", *left_out]

    def legend(self) -> str:
        """What the table's figures are, said under it (console, page)."""
        return (
            f"msg/s: each cell's median of {self.repeats} run(s), its 95 % interval in brackets (docs/matrix.md); "
            f"each run's first {self.steady_after:g} s left out (--mq-warmup), then at least {self.seconds:g} s, "
            f"longer where {self.messages:,} messages took longer in the cell's warm-up. "
            f"{NOISE}: two cells whose difference is not told apart from noise. "
            f"Warm-up: each cell ran {self.warmup_seconds:g} s first on each configuration, left out."
        )

    def document(self) -> dict[str, Any]:
        return {"warmup_seconds": self.warmup_seconds, "steady_after": self.steady_after, "seconds": self.seconds,
                "messages": self.messages, "repeats": self.repeats, "legend": self.legend()}  # fmt: skip


def add_options(parser: argparse.ArgumentParser, messages: int) -> None:
    """The grids' shared options (``--messages`` too: its default is each grid's)."""
    parser.add_argument("--messages", type=int, default=messages,
                        help=f"messages each measured run carries at least (default {messages:,})")  # fmt: skip
    parser.add_argument("--seconds", type=float, default=20.0, help="each measured run's steady part at least (20)")
    parser.add_argument("--steady-after", type=float, default=3.0,
                        help="seconds at each run's start left out (--mq-warmup; default 3)")  # fmt: skip
    parser.add_argument("--repeats", type=int, default=3, help="measured runs per cell, interleaved (default 3)")
    parser.add_argument("--warmup-seconds", type=float, default=10.0,
                        help="each cell's warm-up run per configuration, left out (default 10)")  # fmt: skip


def steady(args: argparse.Namespace) -> Steady:
    """The options read; :class:`OptionError` names the first bad one."""
    if args.messages < 1 or args.repeats < 1:
        raise OptionError("--messages and --repeats: at least 1")
    if not (args.seconds > 0 and args.warmup_seconds > 0 and args.steady_after >= 0):
        raise OptionError("--seconds and --warmup-seconds positive, --steady-after 0 or more")
    return Steady(args.warmup_seconds, args.steady_after, args.seconds, args.messages, args.repeats)


def interleaved(cells: Sequence[K], repeats: int) -> list[tuple[int, K]]:
    """``(repeat, cell)`` in running order: each repeat runs every cell once, starting one cell later than the last."""
    return [(r, cells[(r - 1 + i) % len(cells)]) for r in range(1, repeats + 1) for i in range(len(cells))]


def attempt(title: str, command: list[str], report: Path, seconds: float, stop: Stop) -> dict[str, Any] | None:
    """One run, bounded, its title and how it went printed; its report, or None when it wrote none or was stopped
    (``stop.requested`` then says so: the grid ends there and reports what it measured)."""
    started = time.monotonic()
    print(f"{title} ...", end=" ", flush=True)
    try:
        finished = run_locust(command, report, seconds + RUN_SLACK_S, stop=stop)
    except StepFailed as error:
        print(f"failed: {error}")
        return None
    except Interrupted:
        print("interrupted")
        return None
    rows = finished.document.get("destinations") or []
    rate = rows[0].get("receive_rate_msgs") if len(rows) == 1 else None  # request-reply: its replies' queues too
    took = f"done in {time.monotonic() - started:.1f} s (exit {finished.code})"
    print(took + (f", {rate:,.0f} msg/s" if rate else ""))
    return finished.document


def steady_run(document: Mapping[str, Any], destination: str, name: str) -> Run:
    """The run's receives at ``destination`` after its warm-up, as :data:`OPERATION`; :class:`RunFileError` if none."""
    samples = run_from_document(document, name).operations.get(event_name(RECEIVE, destination))
    if samples is None:
        raise RunFileError(f"{name}: no receive at {destination} after its warm-up")
    return Run(name, "", {OPERATION: samples})


def counted_run(document: Mapping[str, Any], destination: str, name: str) -> Run | None:
    """:func:`steady_run`, or None (said: "not counted" and why) when the run has no steady receives."""
    try:
        return steady_run(document, destination, name)
    except RunFileError as error:
        print(f"  not counted: {error}")
        return None


def throughput(run: Run) -> float:
    """A run's steady throughput: its receives over its intervals' seconds."""
    return headline(run.operations[OPERATION])[THROUGHPUT]


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def summary(runs: list[Run]) -> dict[str, Any]:
    """A cell: the median of its runs' throughput, its 95 % interval and spread (``msgs`` None without a run)."""
    if not runs:
        return {"msgs": None, "msgs_interval": None, "msgs_spread": None, "repeats": 0}
    found = estimate(runs, OPERATION, THROUGHPUT)
    return {"msgs": _finite(found.point), "msgs_interval": [_finite(found.low), _finite(found.high)],
            "msgs_spread": list(found.spread), "repeats": found.runs}  # fmt: skip


def indistinct(cells: Mapping[K, list[Run]]) -> list[tuple[K, K]]:
    """The pairs of a row's cells (with runs) whose throughput differs by no more than noise (or whose runs are too
    short to tell), in the row's order."""
    measured = [key for key, runs in cells.items() if runs]
    return [(a, b) for a, b in itertools.combinations(measured, 2)
            if difference(cells[a], cells[b], OPERATION, THROUGHPUT).verdict in (SAME, TOO_FEW)]  # fmt: skip


def cell_text(cell: Mapping[str, Any]) -> str:
    """``10,172 (9,800-10,400)``: the median and its interval; ``-`` without a run."""
    point, interval = cell.get("msgs"), cell.get("msgs_interval") or [None, None]
    if point is None:
        return "-"
    low, high = interval
    return f"{point:,.0f}" + (f" ({low:,.0f}-{high:,.0f})" if low is not None and high is not None else "")


def noise_text(pairs: Sequence[Sequence[str]], titles: Mapping[str, str]) -> str:
    """``non-persistent ≈ persistent; ...`` for a row's pairs, ``-`` when every difference is real."""
    return "; ".join(f"{titles[a]} {NOISE} {titles[b]}" for a, b in pairs) or "-"
