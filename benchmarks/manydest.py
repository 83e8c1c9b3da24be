"""Many destinations: what a destination costs in memory, and a connection, in one ``locust`` process.

    python -m benchmarks.manydest --host stomp://127.0.0.1:61613 [--destinations 10000] [--messages 50000]

Three runs of the command a user types, each ``locustfiles/put_get.py`` in one process on a fresh
pattern of queues (``--mq-destination /queue/bench.manydest.<uuid>.{0..N-1}``), the same messages
(``--mq-total-messages``) at the same rate (``--mq-total-rate``), this checkout first on
``PYTHONPATH``: the reference (``--reference`` destinations, ``--users`` users), the same users on
``--destinations`` destinations, and twice the users on the reference's destinations. Each prints
its peak RSS (the largest of VmHWM sampled from /proc and the child's ``ru_maxrss``), CPU, the
delivered rate and the audit's loss from its ``--mq-report-json``, and how long the consumers took
to subscribe (the report's ``subscribe`` count and mean). Then the ratios against the reference:
RSS per extra destination and per extra connection (one per user). Exit status: 0 measured, 2 a
run failed or lost messages (a figure of a broken run is no figure).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import BenchError, check_broker
from benchmarks.locust_cli import MB, PUT_GET, ROOT, checkout, locust_argv, proc_status_kb, report_row, run_process


@dataclass(frozen=True)
class Run:
    destinations: int
    users: int
    peak_bytes: int
    cpu_s: float
    wall_s: float
    received: int
    rate: float
    lost: int
    subscribes: int
    subscribe_mean_ms: float


def run(options: argparse.Namespace, workdir: Path, destinations: int, users: int) -> Run:
    """One locust run on ``destinations`` queues with ``users`` users (half of them consumers)."""
    pattern = f"/queue/bench.manydest.{uuid.uuid4().hex[:10]}.{{0..{destinations - 1}}}"
    report = workdir / f"report-{destinations}-{users}.json"
    load = ["-t", f"{options.deadline}s", "--mq-consumers", str(users // 2), "--mq-total-messages",
            str(options.messages), "--mq-total-rate", f"{options.rate:g}"]  # fmt: skip
    command = locust_argv(PUT_GET, options.host, users, pattern, report, load)
    print("$ " + " ".join(command), flush=True)
    hwm = [0]

    def sample(pid: int, _elapsed: float) -> None:
        hwm[0] = max(hwm[0], (proc_status_kb(pid, "VmHWM") or 0) * 1024)

    done = run_process(command, workdir / f"locust-{destinations}-{users}.log", options.deadline + 120, 0.2, sample)
    document, row = report_row(report, pattern, done)
    if done.returncode != 0 or row["received"] != options.messages or row["lost"] or row["errors"]:
        raise BenchError(f"locust exit {done.returncode}: received {row['received']:,} of {options.messages:,}, "
                         f"lost {row['lost']}, errors {row['errors']}; see {done.log}")  # fmt: skip
    subscribe = _operation(document, f"subscribe {pattern}")
    return Run(destinations, users, max(hwm[0], done.peak_rss_bytes), done.cpu_s, done.wall_s, row["received"],
               row["receive_rate_msgs"], row["lost"], subscribe["count"],
               subscribe["latency_ms"].get("mean", 0.0))  # fmt: skip


def _operation(document: dict[str, Any], name: str) -> dict[str, Any]:
    found = [op for op in document["operations"] if op["name"] == name]
    return found[0] if found else {"count": 0, "latency_ms": {}}


def describe(r: Run) -> str:
    return (f"{r.destinations:>7,} destinations  {r.users:>3} users  peak RSS {r.peak_bytes / MB:7.1f} MB  "
            f"CPU {r.cpu_s:5.1f} s  wall {r.wall_s:5.1f} s  delivered {r.received:,} at {r.rate:,.0f} msg/s  "
            f"lost {r.lost}  {r.subscribes:,} subscribes, mean {r.subscribe_mean_ms:.2f} ms")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.manydest", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--host", default="stomp://127.0.0.1:61613", help="the broker, stomp://HOST:PORT")
    parser.add_argument("--destinations", type=int, default=10_000, help="destinations measured (default 10,000)")
    parser.add_argument("--reference", type=int, default=100, help="the reference's destinations (default 100)")
    parser.add_argument("--users", type=int, default=8, help="users, half consumers (default 8)")
    parser.add_argument("--messages", type=int, default=50_000, help="--mq-total-messages per run (default 50,000)")
    parser.add_argument("--rate", type=float, default=2_000, help="--mq-total-rate, msg/s (default 2,000)")
    parser.add_argument("--deadline", type=int, default=180, help="-t of each run, s (default 180)")
    options = parser.parse_args(argv)
    if options.reference < 1 or options.destinations <= options.reference or options.users < 2:
        parser.error("--destinations must be above --reference (>= 1); --users at least 2")
    print(f"mqusers many-destinations benchmark: {options.host}, put_get.py, one process, {options.messages:,} "
          f"messages at {options.rate:,.0f} msg/s per run; mqusers {ROOT} @ {checkout()}", flush=True)  # fmt: skip
    try:
        check_broker(options.host)
        with tempfile.TemporaryDirectory(prefix="bench-manydest.") as workdir:
            runs = []
            for destinations, users in ((options.reference, options.users), (options.destinations, options.users),
                                        (options.reference, 2 * options.users)):  # fmt: skip
                runs.append(run(options, Path(workdir), destinations, users))
                print("  " + describe(runs[-1]), flush=True)
    except (BenchError, ValueError) as error:
        print(f"benchmark failed: {error}", file=sys.stderr)
        return 2
    reference, many, more = runs
    per_destination = (many.peak_bytes - reference.peak_bytes) / (many.destinations - reference.destinations)
    per_connection = (more.peak_bytes - reference.peak_bytes) / (more.users - reference.users)
    print(f"RSS per destination  {per_destination / 1024:8.1f} KiB  ({many.destinations:,} vs "
          f"{reference.destinations:,} destinations, {options.users} users)")  # fmt: skip
    print(f"RSS per connection   {per_connection / 1024:8.1f} KiB  ({more.users} vs {reference.users} users, "
          f"{reference.destinations:,} destinations)")  # fmt: skip
    print(f"ratio {many.destinations:,} / {reference.destinations:,} destinations: peak RSS "
          f"{many.peak_bytes / reference.peak_bytes:.2f}x, delivered msg/s {many.rate / reference.rate:.2f}x, "
          f"CPU {many.cpu_s / reference.cpu_s:.2f}x")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
