"""The ``locust`` command a user types, run as one measured child process tree.

Shared by :mod:`benchmarks.core` (parts d and g), :mod:`benchmarks.scale`, :mod:`benchmarks.memory` and
:mod:`benchmarks.soak`: the command line, this checkout's mqusers first on ``PYTHONPATH``, a hard
deadline, the tree's CPU and peak RSS, its RSS sampled while it runs, and the ``--mq-report-json``
row of the run's queue. Imports nothing that patches sockets: the parent stays a plain process.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import BenchError

ROOT = Path(__file__).resolve().parent.parent
#: The two-class producer + consumer scenario (``Getter``/``Putter``, auto ack): (b)'s shape.
PUT_GET = "locustfiles/put_get.py"
MB = 1024 * 1024


def locust_argv(
    locustfile: str, host: str, users: int, destination: str, report: Path, extra: Sequence[str] = ()
) -> list[str]:
    """``locust -f FILE --headless ...`` with the venv's ``locust`` script (the one beside this Python)."""
    locust = Path(sys.executable).with_name("locust")
    command = [str(locust), "-f", locustfile, "--headless", "--host", host, "-u", str(users), "-r", str(users)]
    return [*command, "--only-summary", "--mq-destination", destination, "--mq-report-json", str(report), *extra]


def checkout() -> str:
    """This checkout's commit, ``+dirty`` when mqusers/ has uncommitted changes."""
    git = ["git", "-C", str(ROOT)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    dirty = subprocess.run([*git, "status", "--porcelain", "mqusers"], capture_output=True, text=True, check=False)
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def child_env() -> dict[str, str]:
    # The locust script puts the locustfile's folder on sys.path, not the project root: without this,
    # a worktree would measure the editable install's mqusers instead of its own.
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


def proc_status_kb(pid: int, field: str) -> int | None:
    """``VmRSS``, ``VmHWM``... of ``pid`` in KiB from /proc; None once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


@dataclass(frozen=True)
class Growth:
    """RSS from a first sample (after a warm-up) to the last one, and the least-squares slope between."""

    first_s: float
    first_bytes: int
    last_s: float
    last_bytes: int
    percent: float
    mb_per_min: float
    samples: int


class RssSamples:
    """``sample`` for :func:`run_process`: the child's VmRSS while its load runs, a line per minute."""

    def __init__(self, load_s: float):
        #: Samples after the load (the drain, the report) are not the steady state: left out.
        self.load_s = load_s
        self.samples: list[tuple[float, int]] = []  # (seconds since launch, bytes)
        self._next_minute = 1

    def __call__(self, pid: int, elapsed: float) -> None:
        rss = proc_status_kb(pid, "VmRSS")
        if rss is None or elapsed > self.load_s:
            return
        self.samples.append((elapsed, rss * 1024))
        if elapsed >= 60 * self._next_minute:
            print(f"  {self._next_minute:>3} min  RSS {rss * 1024 / MB:7.1f} MB", flush=True)
            self._next_minute += 1

    @property
    def peak_bytes(self) -> int:
        return max((rss for _, rss in self.samples), default=0)

    def growth(self, after_s: float) -> Growth | None:
        """From the first sample at or after ``after_s`` to the last; None without one."""
        after = [(t, rss) for t, rss in self.samples if t >= after_s]
        if not after:
            return None
        (t1, rss1), (t_end, rss_end) = after[0], after[-1]
        slope = 0.0
        if len(after) > 1:
            slope = statistics.linear_regression([t for t, _ in after], [r for _, r in after]).slope * 60 / MB
        return Growth(t1, rss1, t_end, rss_end, 100.0 * (rss_end - rss1) / rss1, slope, len(after))


@dataclass
class ProcessRun:
    returncode: int
    wall_s: float
    #: user+sys of the process and of every descendant it waited for (Locust's --processes workers):
    #: the share it adds to the parent's RUSAGE_CHILDREN.
    cpu_s: float
    sys_s: float
    #: ru_maxrss: the kernel's VmHWM of the largest single process of the tree, at its exit.
    peak_rss_bytes: int
    log: Path

    def tail(self, lines: int = 15) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def run_process(
    command: Sequence[str],
    log: Path,
    limit_s: float,
    interval_s: float = 0.05,
    sample: Callable[[int, float], None] | None = None,
) -> ProcessRun:
    """Run ``command`` (output to ``log``), calling ``sample(pid, elapsed)`` every ``interval_s``.

    Killed, with a :class:`BenchError`, when it runs longer than ``limit_s``. ``os.wait4`` reaps it
    so the CPU and peak RSS are this child's own, whatever else the parent ran before.
    """
    with log.open("w") as out:
        start = time.monotonic()
        child = subprocess.Popen(command, cwd=ROOT, env=child_env(), stdout=out, stderr=subprocess.STDOUT)
        pid = 0
        try:
            while True:
                pid, status, usage = os.wait4(child.pid, os.WNOHANG)
                elapsed = time.monotonic() - start
                if pid:
                    break
                if elapsed > limit_s:
                    raise BenchError(f"{Path(command[0]).name} ran over {limit_s:.0f}s and was killed; see {log}")
                if sample is not None:
                    sample(child.pid, elapsed)
                time.sleep(interval_s)
        finally:
            if not pid:
                child.kill()
                os.wait4(child.pid, 0)
            child.returncode = -1  # reaped here: Popen must not wait for it again
    return ProcessRun(
        returncode=os.waitstatus_to_exitcode(status),
        wall_s=elapsed,
        cpu_s=usage.ru_utime + usage.ru_stime,
        sys_s=usage.ru_stime,
        peak_rss_bytes=usage.ru_maxrss * 1024,  # KiB on Linux
        log=log,
    )


def report_row(report: Path, destination: str, run: ProcessRun) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run's ``--mq-report-json`` document and its row for ``destination``."""
    if not report.exists():
        raise BenchError(f"locust exited {run.returncode} without a report; its last lines:\n{run.tail()}")
    document: dict[str, Any] = json.loads(report.read_text())
    rows = [row for row in document["destinations"] if row["destination"] == destination]
    if not rows:
        raise BenchError(f"the report has no row for {destination}; locust's last lines:\n{run.tail()}")
    return document, rows[0]


def check_complete(row: dict[str, Any], expected: int, run: ProcessRun) -> None:
    """A fixed-count run delivered exactly ``expected`` with nothing lost, duplicated or failed."""
    faults = {key: row[key] for key in ("errors", "lost", "duplicated", "unreceived") if row.get(key)}
    if run.returncode != 0 or row["sent"] != expected or row["received"] != expected or faults:
        raise BenchError(
            f"locust exit {run.returncode}: sent {row['sent']:,}, received {row['received']:,} of {expected:,};"
            f" {faults or 'no faults'}; see {run.log}"
        )


def run_counted(host: str, messages: int, size_bytes: int, timeout: float, destination: str) -> dict[str, Any]:
    """``locust -f locustfiles/put_get.py ... --mq-total-messages N``, one producer, one consumer.

    Its own end of a fixed count stops it (no -t); the whole process's CPU is all there is to
    measure, and the report must show exactly N sent and received with nothing lost.
    """
    workdir = Path(tempfile.mkdtemp(prefix="mqusers-bench-cli-"))
    report = workdir / "report.json"
    load = ["--mq-consumers", "1", "--mq-rate", "0", "--mq-total-messages", str(messages), "--mq-size", str(size_bytes)]
    run = run_process(locust_argv(PUT_GET, host, 2, destination, report, load), workdir / "locust.log", timeout + 60)
    document, row = report_row(report, destination, run)
    check_complete(row, messages, run)
    shutil.rmtree(workdir)  # kept when the run failed: the error names its log
    return {
        "kind": "cli",
        "messages": messages,
        "wall_s": run.wall_s,
        "process_cpu_s": run.cpu_s,
        "sys_s": run.sys_s,
        "msg_per_s": row["receive_rate_msgs"],
        "msg_per_cpu_s": messages / run.cpu_s,
        "received": row["received"],
        "ended_by": document.get("ended_by"),
        "generator_verdict": document.get("generator", {}).get("verdict"),
    }
