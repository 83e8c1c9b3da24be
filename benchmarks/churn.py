"""What does connection churn cost the generator? 2,000 web-script clients against long-lived ones.

    python -m benchmarks.churn --host stomp://127.0.0.1:61613 [--users 2000] [--seconds 30] [--pause 1]

Two runs of the ``locust`` command a user types (locustfiles/churn.py, its 2 churning consumers, the
rest scripts), each on a fresh queue, bounded by -t and a kill deadline:

(churn)   every script connects, sends 1 message, DISCONNECTs with a receipt, waits ``--pause`` s, again;
(steady)  the same scripts on one connection each, paced at 1 / ``--pause`` msg/s (``--mq-rate``): the
          same messages without the churn, the reference.

Printed per run: connections/s, connect and disconnect p50/p99 (the report's µs histograms), messages
received/s, the generator's CPU (the child's rusage: start-up, spawn, drain and report included) per
message and its peak RSS, the open files at start and end and the audit; then churn/steady ratios.
Fails (exit 2) unless each run's audit is exact (nothing lost or duplicated, received = sent) and the
generator's open files returned to their start. Exit status: 0 measured, 2 a measurement failed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from benchmarks.common import BenchError, check_broker
from benchmarks.locust_cli import MB, locust_argv, run_process

CHURN = "locustfiles/churn.py"


def run(host: str, users: int, seconds: int, pause: float, steady: bool, folder: Path) -> dict[str, Any]:
    """One locust run; its figures from the report, its CPU and peak RSS from its rusage."""
    queue = f"/queue/bench.churn.{uuid.uuid4().hex[:8]}"
    report = folder / f"{'steady' if steady else 'churn'}.json"
    extra = ["-t", f"{seconds}s", "--mq-churn-pause", f"{pause:g}", "--mq-drain-idle", "2"]
    if steady:
        extra += ["--mq-per-connection", str(10**6), "--mq-prefetch", "100", "--mq-rate", f"{1 / pause:g}"]
    command = locust_argv(CHURN, host, users, queue, report, ["-r", str(min(users, 500)), *extra])
    process = run_process(command, folder / f"{report.stem}.log", limit_s=seconds + 180)
    if not report.exists():
        raise BenchError(f"locust wrote no report (exit {process.returncode}); see {process.log}")
    document = json.loads(report.read_text())
    [row] = [r for r in document["destinations"] if r["destination"] == queue]
    audit = {key: row[key] for key in ("lost", "duplicated", "unreceived", "unconfirmed")}
    connections = document["connections"]
    if any(audit.values()) or row["received"] != row["sent"] or not row["sent"]:
        raise BenchError(f"the audit is not exact: sent {row['sent']}, received {row['received']}, {audit}")
    if connections["open_files_end"] != connections["open_files_start"]:
        raise BenchError(f"open files {connections['open_files_start']} at the start, {connections['open_files_end']} "
                         "at the end: the generator leaked")  # fmt: skip
    ops = {op["name"].split(" ")[0]: op for op in document["operations"]}
    span = document["stopped"] - document["started"]
    return {
        "connections_per_s": connections["opened"] / span,
        "connects": connections["opened"],
        "connect_failed": connections["failed"],
        "connect_ms": (ops["connect"]["latency_ms"].get("p50"), ops["connect"]["latency_ms"].get("p99")),
        "disconnect_ms": tuple(ops.get("disconnect", {}).get("latency_ms", {}).get(k) for k in ("p50", "p99")),
        "received": row["received"],
        "received_per_s": row["received"] / span,
        "cpu_s": process.cpu_s,
        "cpu_us_per_message": process.cpu_s / row["received"] * 1e6,
        "cpu_percent": 100.0 * process.cpu_s / process.wall_s,
        "peak_rss_mb": process.peak_rss_bytes / MB,
        "open_files": (connections["open_files_start"], connections["open_files_end"]),
        "verdict": document["generator"]["verdict"],
    }


def show(name: str, f: dict[str, Any]) -> str:
    def ms(pair: tuple[float | None, float | None]) -> str:
        return "/".join("-" if v is None else f"{v:,.2f}" for v in pair)

    return (f"{name:7} {f['connections_per_s']:9,.1f} {f['connect_failed']:6,} {ms(f['connect_ms']):>13} "
            f"{ms(f['disconnect_ms']):>13} {f['received_per_s']:8,.1f} {f['cpu_percent']:6,.0f} "
            f"{f['cpu_us_per_message']:9,.0f} {f['peak_rss_mb']:8,.1f} {f['open_files'][0]:>5}->{f['open_files'][1]:<5}"
            f" {f['verdict']}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", required=True)
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--pause", type=float, default=1.0, help="seconds between a script's connections")
    args = parser.parse_args(argv)
    try:
        check_broker(args.host)
        with tempfile.TemporaryDirectory(prefix="bench-churn-") as tmp:
            churn = run(args.host, args.users, args.seconds, args.pause, False, Path(tmp))
            steady = run(args.host, args.users, args.seconds, args.pause, True, Path(tmp))
    except BenchError as error:
        print(f"benchmarks.churn: {error}", file=sys.stderr)
        return 2
    print(f"{args.users:,} users (2 churning consumers), {args.seconds} s, a script's pause {args.pause:g} s")
    print("run       conn/s failed  connect p50/p99 ms  disc p50/p99 ms  recv/s  CPU %  CPU-us/msg  RSS MB  files")
    print(show("churn", churn))
    print(show("steady", steady))
    print(f"churn/steady: CPU per message {churn['cpu_us_per_message'] / steady['cpu_us_per_message']:.2f}x, "
          f"peak RSS {churn['peak_rss_mb'] / steady['peak_rss_mb']:.2f}x, "
          f"received/s {churn['received_per_s'] / steady['received_per_s']:.2f}x")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
