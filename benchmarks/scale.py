"""Does mqusers scale? Two processes against one, and 1,000 consumer Users in one process.

    python -m benchmarks.scale --host stomp://127.0.0.1:61613 [--messages 100000] [--repeat 2]

(i)  processes: the ``locust`` command a user types (locustfiles/put_get.py, -u 4, --mq-consumers 2,
     --mq-rate 0, --mq-total-messages N) once as one process and once with ``--processes 2``,
     interleaved per round, each on a fresh queue. Delivered msg/s is the report's receive rate
     (first send to last receive); the ratio 2 processes / 1 process is computed per round.
     Target >= 1.8 where the broker is not the limit: so each run also prints the broker's CPU
     (from /proc/<pid>/stat, the pid from ``services``) and how idle the machine was.
(ii) consumers: ``locust ... -u 1001 --mq-consumers 1000 --mq-rate 100 -t HOLD`` in one process;
     its peak RSS (the kernel's VmHWM, sampled from /proc while it runs and read from its
     rusage at exit). Target <= 300 MB.

Every run is bounded (a fixed count or -t, plus a kill deadline) and checked against its
``--mq-report-json``: exactly what was sent was received, nothing lost. Exit status: 0 measured,
1 a target missed with ``--strict``, 2 a measurement failed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import services
from benchmarks.common import BenchError, check_broker, parse_host, parse_size, spread
from benchmarks.locust_cli import MB, PUT_GET, check_complete, locust_argv, proc_status_kb, report_row, run_process

SCALE_TARGET = 1.8
RSS_TARGET_MB = 300.0
#: Above this share of one core, the broker is probably what limits (i), not the generator.
BROKER_BUSY = 0.8
#: Below this idle share, the machine's CPUs are the limit.
MACHINE_IDLE = 0.1
TICKS = os.sysconf("SC_CLK_TCK")


def broker_pid(url: str) -> tuple[int | None, str]:
    """The pid of the ``services`` broker listening on ``url``'s port, or None and why not."""
    _, port = parse_host(url)
    for name in services.SERVICES:
        if services.ports(name).get("stomp") == port and services.is_running(name):
            return services.pid(name), name
    where = services.state_dir()
    return None, f"no broker run by services (state {where}) listens on {port}; set MQUSERS_SERVICES_DIR"


def process_cpu_s(pid: int | None) -> float | None:
    """utime + stime of ``pid`` (all its threads: a JVM's too), from /proc/<pid>/stat."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS  # fields 14 and 15 of stat(5), counted after comm


def machine_cpu_s() -> tuple[float, float]:
    """(busy, idle) CPU-seconds of the whole machine so far, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return (sum(values[:8]) - idle) / TICKS, idle / TICKS


@dataclass
class Load:
    """The broker's and the machine's CPU between two instants."""

    seconds: float
    broker_cpu_s: float | None  # None: the broker's pid is unknown or it went away
    machine_busy_s: float
    machine_idle_s: float

    @property
    def broker_share(self) -> float | None:
        """The broker's CPU as a share of one core."""
        return None if self.broker_cpu_s is None else self.broker_cpu_s / self.seconds

    @property
    def idle(self) -> float:
        return self.machine_idle_s / max(1e-9, self.machine_busy_s + self.machine_idle_s)


@dataclass
class Sample:
    at: float  # time.time(), as the report's started/stopped
    broker_cpu_s: float | None
    machine_busy_s: float
    machine_idle_s: float

    @classmethod
    def now(cls, pid: int | None) -> Sample:
        return cls(time.time(), process_cpu_s(pid), *machine_cpu_s())

    def until(self, later: Sample) -> Load:
        broker = None
        if self.broker_cpu_s is not None and later.broker_cpu_s is not None:
            broker = later.broker_cpu_s - self.broker_cpu_s
        busy, idle = later.machine_busy_s - self.machine_busy_s, later.machine_idle_s - self.machine_idle_s
        return Load(later.at - self.at, broker, busy, idle)


def window_of_test(samples: list[Sample], document: dict[str, Any]) -> Load:
    """The load between Locust's test start and stop (not its start-up): the samples nearest inside."""
    inside = [s for s in samples if document["started"] <= s.at <= document["stopped"]]
    first, last = (inside[0], inside[-1]) if len(inside) >= 2 else (samples[0], samples[-1])
    return first.until(last)


@dataclass
class Run:
    """One locust run of (i) or (ii)."""

    row: dict[str, Any]
    document: dict[str, Any]
    wall_s: float
    cpu_s: float  # the generator: locust and its workers
    peak_rss_bytes: int
    hwm_bytes: int  # largest VmHWM sampled while it ran
    load: Load  # over the test, from Locust's start to its stop


def run_locust(
    options: argparse.Namespace, kind: str, users: int, load: Sequence[str], limit_s: float, expected: int | None
) -> Run:
    """One locust run on a fresh queue; ``expected`` messages delivered (None: whatever was sent)."""
    destination = f"/queue/bench.scale.{kind}.{uuid.uuid4().hex[:12]}"
    workdir = Path(tempfile.mkdtemp(prefix=f"mqusers-bench-scale-{kind}-"))
    report = workdir / "report.json"
    command = locust_argv(PUT_GET, options.host, users, destination, report, load)
    hwm = [0]
    samples = [Sample.now(options.broker_pid)]

    def sample(pid: int, _elapsed: float) -> None:
        hwm[0] = max(hwm[0], (proc_status_kb(pid, "VmHWM") or 0) * 1024)
        samples.append(Sample.now(options.broker_pid))

    done = run_process(command, workdir / "locust.log", limit_s, 0.1, sample)
    samples.append(Sample.now(options.broker_pid))
    document, row = report_row(report, destination, done)
    check_complete(row, row["sent"] if expected is None else expected, done)
    shutil.rmtree(workdir)  # kept when the run failed: the error names its log
    return Run(
        row=row,
        document=document,
        wall_s=done.wall_s,
        cpu_s=done.cpu_s,
        peak_rss_bytes=done.peak_rss_bytes,
        hwm_bytes=hwm[0],
        load=window_of_test(samples, document),
    )


def describe_cpu(run: Run) -> str:
    """The generator's CPU; the broker's and the machine's over the test (Locust's start to stop)."""
    load, share = run.load, run.load.broker_share
    broker = "broker CPU unknown" if share is None else f"broker {share:.0%} of a core"
    return (
        f"generator {run.cpu_s:.2f} CPU-s with start-up; over the {load.seconds:.1f} s test: {broker},"
        f" machine {load.idle:.0%} idle"
    )


def limited(run: Run) -> bool:
    """The broker or the machine, not the generator, was probably the limit of this run."""
    share = run.load.broker_share
    return (share is not None and share >= BROKER_BUSY) or run.load.idle < MACHINE_IDLE


def processes_part(options: argparse.Namespace) -> bool:
    """(i); True when the target was met."""
    n = options.messages
    load = ["--mq-consumers", str(options.consumers), "--mq-rate", "0", "--mq-total-messages", str(n)]
    load += ["--mq-size", str(options.size_bytes)]
    runs: dict[int, list[Run]] = {1: [], 2: []}
    for round_no in range(1, options.repeat + 1):
        for processes in (1, 2):
            extra = ["--processes", str(processes)] if processes > 1 else []
            run = run_locust(options, f"p{processes}", options.users, [*load, *extra], options.timeout, n)
            runs[processes].append(run)
            print(
                f"round {round_no}  {processes} process{'es' if processes > 1 else ''}"
                f"  {run.row['receive_rate_msgs']:>9,.0f} msg/s delivered  {n / run.cpu_s:>9,.0f} msg/CPU-s"
                f"  ({run.wall_s:.1f} s wall; {describe_cpu(run)})",
                flush=True,
            )
    ratios = [
        two.row["receive_rate_msgs"] / one.row["receive_rate_msgs"] for one, two in zip(runs[1], runs[2], strict=True)
    ]
    ok = bool(statistics.median(ratios) >= SCALE_TARGET)
    print(f"  ratio 2 processes / 1 process, delivered msg/s  {spread(ratios, '{:.2f}')}", end="")
    print(f"   target >= {SCALE_TARGET:g}: {'met' if ok else 'MISSED'}")
    bound = [run for run in runs[2] if limited(run)]
    if bound:
        print(
            f"  note: in {len(bound)} of {len(runs[2])} two-process runs the broker used >= {BROKER_BUSY:.0%} of a"
            f" core or the machine was < {MACHINE_IDLE:.0%} idle ({os.cpu_count()} CPUs; the broker's CPU includes"
            " any other client's): there the broker or the machine is the limit, not the generator, and the ratio"
            " does not judge the target"
        )
    return ok


def consumers_part(options: argparse.Namespace) -> bool:
    """(ii); True when the target was met."""
    users, seconds = options.consumer_users + 1, options.hold
    load = ["-r", str(options.spawn_rate), "-t", f"{seconds}s", "--mq-consumers", str(options.consumer_users)]
    load += ["--mq-rate", f"{options.consumer_rate:g}", "--mq-size", str(options.size_bytes)]
    # -r here overrides locust_argv's (-r = -u): a thousand connections at once would be a SYN flood.
    run = run_locust(options, "consumers", users, load, seconds + 30 + 90, None)
    subscribed = sum(op["count"] for op in run.document["operations"] if op["name"].startswith("subscribe "))
    peak_mb = max(run.peak_rss_bytes, run.hwm_bytes) / MB
    ok = peak_mb <= RSS_TARGET_MB and subscribed == options.consumer_users
    print(
        f"{options.consumer_users:,} consumer Users + 1 producer at {options.consumer_rate:g} msg/s, one process,"
        f" {seconds} s: {subscribed:,} subscribed, {run.row['received']:,} of {run.row['sent']:,} delivered,"
        f" none lost; generator {run.cpu_s:.1f} CPU-s in {run.wall_s:.1f} s"
    )
    print(f"  peak RSS (VmHWM)  {peak_mb:,.1f} MB   target <= {RSS_TARGET_MB:g} MB: {'met' if ok else 'MISSED'}")
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.scale", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--host", default="stomp://127.0.0.1:61613", help="the broker, stomp://HOST:PORT")
    parser.add_argument("--parts", default="12", help="1: processes, 2: 1,000 consumers (default 12)")
    parser.add_argument("--messages", type=int, default=100_000, help="(i) N per run (default 100000)")
    parser.add_argument("--size", default="1KB", help="body size (default 1KB)")
    parser.add_argument("--users", type=int, default=4, help="(i) -u, the same for both (default 4)")
    parser.add_argument("--consumers", type=int, default=2, help="(i) --mq-consumers of those (default 2)")
    parser.add_argument("--repeat", type=int, default=2, help="(i) rounds of 1 and 2 processes (default 2)")
    parser.add_argument("--timeout", type=float, default=180.0, help="(i) kill a run after this, s (default 180)")
    parser.add_argument("--consumer-users", type=int, default=1000, help="(ii) consumer Users (default 1000)")
    parser.add_argument("--consumer-rate", type=float, default=100.0, help="(ii) the producer's msg/s (default 100)")
    parser.add_argument("--spawn-rate", type=float, default=200.0, help="(ii) -r, users/s (default 200)")
    parser.add_argument("--hold", type=int, default=30, help="(ii) -t, seconds (default 30)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    options = parser.parse_args(argv)
    try:
        options.size_bytes = parse_size(options.size)
        parse_host(options.host)
    except ValueError as error:
        parser.error(str(error))
    if not options.parts or not set(options.parts) <= set("12") or min(options.messages, options.repeat) < 1:
        parser.error("--parts is a subset of 12; --messages and --repeat must be at least 1")
    if options.consumers >= options.users or options.hold < 5:
        parser.error("--consumers must leave a producer among --users; --hold is at least 5 s")
    options.broker_pid, broker = broker_pid(options.host)
    broker = broker if options.broker_pid is None else f"{broker} pid {options.broker_pid}"
    print(f"mqusers scale benchmark: {options.host} ({broker}), {os.cpu_count()} CPUs, {PUT_GET}", flush=True)
    met = []
    try:
        check_broker(options.host)
        if "1" in options.parts:
            print(
                f"(i) -u {options.users} --mq-consumers {options.consumers}, N={options.messages:,} of"
                f" {options.size_bytes:,} B unpaced, {options.repeat} round(s) of 1 and 2 processes",
                flush=True,
            )
            met.append(processes_part(options))
        if "2" in options.parts:
            print("(ii)", end=" ", flush=True)
            met.append(consumers_part(options))
    except BenchError as error:
        print(f"benchmark failed: {error}", file=sys.stderr)
        return 2
    return 1 if options.strict and not all(met) else 0


if __name__ == "__main__":
    sys.exit(main())
