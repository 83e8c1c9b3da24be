"""Does a single-process mqusers run's memory stay flat? RSS growth of a real ``locust`` run.

    python -m benchmarks.memory --host stomp://127.0.0.1:61613 [--minutes 10] [--rate 1000]

Runs the command a user types -- ``locust -f locustfiles/queue_balance.py --headless -u 6 -r 6
-t ... --mq-total-rate RATE`` on a fresh queue, one process, this checkout's mqusers first on
PYTHONPATH -- and reads its VmRSS from /proc every few seconds. Prints RSS at 1 minute and at the
end of the load, the growth in between, the messages delivered (from the run's
``--mq-report-json``) and PASS/FAIL against the target: growth < 5 % after the first minute.
Exit status: 0 measured, 1 target missed with ``--strict``, 2 no measurement (broker down, run failed).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from benchmarks.common import BenchError, check_broker
from benchmarks.locust_cli import MB, ROOT, RssSamples, checkout, locust_argv, report_row, run_process


def run(options: argparse.Namespace, workdir: Path) -> tuple[RssSamples, dict[str, Any], str]:
    """The locust run, its RSS samples and its report row."""
    seconds = round(options.minutes * 60)
    destination = f"/queue/bench.memory.{uuid.uuid4().hex[:12]}"
    report = workdir / "report.json"
    load = ["-t", f"{seconds}s", "--mq-total-rate", f"{options.rate:g}"]
    command = locust_argv(options.locustfile, options.host, options.users, destination, report, load)
    print("$ " + " ".join(command), flush=True)
    samples = RssSamples(seconds)
    limit = seconds + max(60.0, 0.1 * seconds)
    done = run_process(command, workdir / "locust.log", limit, options.interval, samples)
    _, row = report_row(report, destination, done)
    return samples, row, f"locust exit status {done.returncode}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.memory", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--host", default="stomp://127.0.0.1:61613", help="the broker, stomp://HOST:PORT")
    parser.add_argument("--minutes", type=float, default=10.0, help="load duration, > 1 (default 10)")
    parser.add_argument("--rate", type=float, default=1000.0, help="total msg/s, --mq-total-rate (default 1000)")
    parser.add_argument("--locustfile", default="locustfiles/queue_balance.py", help="a producer+consumer scenario")
    parser.add_argument("--users", type=int, default=6, help="-u and -r (default 6: 3 consumers, 3 producers)")
    parser.add_argument("--interval", type=float, default=5.0, help="RSS sample period, s (default 5)")
    parser.add_argument("--target", type=float, default=5.0, help="max growth after minute 1, %% (default 5)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when the target is missed")
    options = parser.parse_args(argv)
    if options.minutes <= 1 or options.rate <= 0 or options.users < 2 or options.interval <= 0:
        parser.error("--minutes must be > 1, --rate and --interval > 0, --users >= 2")
    print(
        f"mqusers memory benchmark: {options.host}, {options.locustfile}, {options.users} users, one process,"
        f" {options.rate:,.0f} msg/s for {options.minutes:g} min; mqusers {ROOT} @ {checkout()}",
        flush=True,
    )
    try:
        check_broker(options.host)
        with tempfile.TemporaryDirectory(prefix="bench-memory.") as workdir:
            samples, row, status = run(options, Path(workdir))
    except (BenchError, ValueError) as error:
        print(f"benchmark failed: {error}", file=sys.stderr)
        return 2
    growth = samples.growth(60)
    if growth is None:
        print("benchmark failed: no RSS sample after the first minute (locust ended early?)", file=sys.stderr)
        return 2
    rate_ok = row["receive_rate_msgs"] >= 0.95 * options.rate
    print(f"RSS at {growth.first_s:.0f} s            {growth.first_bytes / MB:9.1f} MB")
    peak = samples.peak_bytes / MB
    print(f"RSS at {growth.last_s:.0f} s (end)     {growth.last_bytes / MB:9.1f} MB   peak {peak:.1f} MB")
    print(
        f"growth after minute 1  {growth.percent:+9.2f} %    ({growth.mb_per_min:+.2f} MB/min fitted over"
        f" {growth.samples} samples)"
    )
    print(f"delivered              {row['received']:9,} messages ({row['sent']:,} sent)  {status}")
    print(f"delivered rate         {row['receive_rate_msgs']:9,.1f} msg/s (asked {options.rate:,.0f})")
    print(f"errors {row['errors']}, lost {row['lost']}, duplicated {row['duplicated']}")
    passed = growth.percent < options.target and rate_ok
    why = "" if rate_ok else f"; the run delivered < 95 % of {options.rate:,.0f} msg/s, so it is not the asked load"
    verdict = "PASS" if passed else "FAIL"
    print(f"{verdict}: RSS growth after minute 1 {growth.percent:+.2f} % (target < {options.target:g} %){why}")
    return 1 if options.strict and not passed else 0


if __name__ == "__main__":
    sys.exit(main())
