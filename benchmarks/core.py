"""The core benchmark: does mqusers cost less CPU per message than plain stomp.py, and is it fast?

    python -m benchmarks.core --host stomp://127.0.0.1:61613 --messages 100000 --size 1KB

One run, one broker, each measurement in a fresh process and on a fresh queue, interleaved per
round so that machine noise hits all of them alike:

  (a) raw    plain stomp.py 9.0 under gevent: producer + consumer connections, send N, count N;
  (b) mqusers the mqusers producer and consumer Users run by Locust (as a library), same N, size;
  (c) paced  mqusers at a paced rate (default 2,000 msg/s for 10 s): send-to-receive p50/p99.

(a) and (b) report wall msg/s and messages per generator CPU-second (user+sys of that child
process over the measured phase only, from ``getrusage(RUSAGE_SELF)``). Targets: (b)/(a) per
CPU-second >= 3, (c) p50 <= 0.5 ms. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import RESULT_PREFIX, BenchError, parse_host, parse_size

RATIO_TARGET = 3.0
P50_TARGET_MS = 0.5
ROOT = Path(__file__).resolve().parent.parent
RANGE = "\u2013"  # en dash, as in "median [min–max]"  # noqa: RUF003
LABELS = {"raw": "(a) raw stomp.py+gevent", "mqusers": "(b) mqusers via Locust", "paced": "(c) mqusers paced"}


def fresh_queue(kind: str) -> str:
    return f"/queue/bench.{kind}.{uuid.uuid4().hex[:12]}"


def child_command(kind: str, options: argparse.Namespace, profile: str = "") -> list[str]:
    host, port = parse_host(options.host)
    common = ["--destination", fresh_queue(kind), "--size", str(options.size_bytes), "--timeout", str(options.timeout)]
    if kind == "raw":
        command = ["-m", "benchmarks.raw_stomp", "--broker-host", host, "--broker-port", str(port)]
        return [sys.executable, *command, "--messages", str(options.messages), *common]
    if kind == "mqusers":
        command = ["-m", "benchmarks.mq_locust", "--mode", "mqusers", "--host", options.host]
        extra = ["--profile", profile] if profile else []
        return [sys.executable, *command, "--messages", str(options.messages), "--rate", "0", *common, *extra]
    paced_messages = round(options.paced_rate * options.paced_seconds)
    command = ["-m", "benchmarks.mq_locust", "--mode", "paced", "--host", options.host]
    return [sys.executable, *command, "--messages", str(paced_messages), "--rate", str(options.paced_rate), *common]


def run_child(command: Sequence[str], timeout: float) -> dict[str, Any]:
    """Run one measurement process; its result plus the whole process's CPU (startup included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BenchError(f"{command[2]} did not finish within {timeout:g}s and was killed") from None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if done.returncode != 0 or not lines:
        detail = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}, no output"])[-1]
        if len(done.stderr) > len(detail) + 1:
            with tempfile.NamedTemporaryFile("w", prefix="mqusers-bench-", suffix=".log", delete=False) as log:
                log.write(f"$ {' '.join(command)}\n{done.stdout}\n{done.stderr}")
            detail += f" (full stderr: {log.name})"
        raise BenchError(f"{command[2]}: {detail}")
    result: dict[str, Any] = json.loads(lines[-1][len(RESULT_PREFIX) :])
    result["process_cpu_s"] = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return result


def run_with_retries(kind: str, options: argparse.Namespace) -> dict[str, Any]:
    """The broker is shared (and may be restarted by others): retry a failed measurement afresh."""
    for attempt in range(options.retries + 1):
        try:
            return run_child(child_command(kind, options), options.timeout + 60)
        except BenchError as error:
            if attempt == options.retries:
                raise
            print(f"         {LABELS[kind]} failed ({error}); retrying on a fresh queue", flush=True)
    raise AssertionError("unreachable")


def spread(values: Sequence[float], fmt: str = "{:,.0f}") -> str:
    """median [min–max]"""  # noqa: RUF002  (the en dash is the report's range sign)
    low, high = fmt.format(min(values)), fmt.format(max(values))
    return f"{fmt.format(statistics.median(values))} [{low}{RANGE}{high}]"


def describe(result: dict[str, Any]) -> str:
    kind = result["kind"]
    per_msg = 1e6 / result["messages"]
    text = (
        f"{LABELS[kind]:<26} {result['msg_per_s']:>9,.0f} msg/s  {result['msg_per_cpu_s']:>9,.0f} msg/CPU-s"
        f"  {result['cpu_s'] * per_msg:5.1f} CPU-µs/msg ({(result['cpu_s'] - result['sys_s']) * per_msg:.1f} user"
        f" + {result['sys_s'] * per_msg:.1f} sys; {result['wall_s']:.2f} s wall,"
        f" whole process {result['process_cpu_s']:.2f} CPU-s)"
    )
    if kind == "paced":
        latency = result["latency_ms"]
        text = (
            f"{LABELS[kind]:<26} {result['msg_per_s']:>9,.0f} msg/s  p50 {latency['p50']:.3f} ms"
            f"  p90 {latency['p90']:.3f}  p99 {latency['p99']:.3f}  p99.9 {latency['p999']:.3f}"
            f"  max {latency['max']:.3f} ms  ({result['cpu_s'] / result['wall_s']:.0%} of a CPU)"
        )
    return text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.core", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--host", default="stomp://127.0.0.1:61613", help="the broker, stomp://HOST:PORT")
    parser.add_argument("--messages", type=int, default=100_000, help="N for (a) and (b) (default 100000)")
    parser.add_argument("--size", default="1KB", help="body size: 100, 1KB, 10KB... (default 1KB)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of a, b, c (default 3)")
    parser.add_argument("--paced-rate", type=float, default=2000.0, help="(c) msg/s (default 2000)")
    parser.add_argument("--paced-seconds", type=float, default=10.0, help="(c) duration (default 10)")
    parser.add_argument("--parts", default="abc", help="which of a, b, c to run (default abc)")
    parser.add_argument("--timeout", type=float, default=120.0, help="deadline per measurement, s (default 120)")
    parser.add_argument("--retries", type=int, default=1, help="reruns of a failed measurement (default 1)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--json", default="", help="also write every result to this file")
    options = parser.parse_args(argv)
    try:
        options.size_bytes = parse_size(options.size)
        parse_host(options.host)
    except ValueError as error:
        parser.error(str(error))
    if options.messages < 1 or options.repeat < 1 or not set(options.parts) <= set("abc") or not options.parts:
        parser.error("--messages and --repeat must be at least 1; --parts is a subset of abc")
    kinds = [kind for part, kind in zip("abc", ("raw", "mqusers", "paced"), strict=True) if part in options.parts]

    print(
        f"mqusers core benchmark: {options.host}, N={options.messages:,} messages of {options.size_bytes:,} B,"
        f" paced {options.paced_rate:,.0f} msg/s for {options.paced_seconds:g} s,"
        f" {options.repeat} round(s) of {', '.join(k for k in 'abc' if k in options.parts)}"
        " (fresh process and queue each)",
        flush=True,
    )
    results: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
    try:
        for round_no in range(1, options.repeat + 1):
            for kind in kinds:
                result = run_with_retries(kind, options)
                results[kind].append(result)
                print(f"round {round_no}  {describe(result)}", flush=True)
    except BenchError as error:
        print(f"benchmark failed: {error}", file=sys.stderr)
        return 2

    missed = report(results)
    if options.json:
        Path(options.json).write_text(json.dumps(results, indent=2))
    return 1 if missed and options.strict else 0


def report(results: dict[str, list[dict[str, Any]]]) -> bool:
    """Print the summary; True when a target was missed."""
    missed = False
    print(f"\nsummary: median [min{RANGE}max] over rounds")
    for kind in ("raw", "mqusers"):
        if results.get(kind):
            runs = results[kind]
            wall = spread([r["msg_per_s"] for r in runs])
            cpu = spread([r["msg_per_cpu_s"] for r in runs])
            micros = spread([1e6 * r["cpu_s"] / r["messages"] for r in runs], "{:.1f}")
            print(f"  {LABELS[kind]:<26} wall {wall} msg/s   {cpu} msg/CPU-s   {micros} CPU-µs/msg")
    if results.get("raw") and results.get("mqusers"):
        pairs = list(zip(results["raw"], results["mqusers"], strict=True))
        cpu_ratio = [b["msg_per_cpu_s"] / a["msg_per_cpu_s"] for a, b in pairs]
        wall_ratio = [b["msg_per_s"] / a["msg_per_s"] for a, b in pairs]
        ok = statistics.median(cpu_ratio) >= RATIO_TARGET
        missed |= not ok
        print(
            f"  ratio (b)/(a) per CPU-s  {spread(cpu_ratio, '{:.2f}')}   target >= {RATIO_TARGET:g}:"
            f" {'met' if ok else 'MISSED'}   (per-round ratios)"
        )
        print(f"  ratio (b)/(a) wall msg/s {spread(wall_ratio, '{:.2f}')}")
    if results.get("paced"):
        runs = results["paced"]
        p50 = [r["latency_ms"]["p50"] for r in runs]
        ok = statistics.median(p50) <= P50_TARGET_MS
        missed |= not ok
        print(
            f"  {LABELS['paced']:<26} p50 {spread(p50, '{:.3f}')} ms   target <= {P50_TARGET_MS:g} ms:"
            f" {'met' if ok else 'MISSED'}"
        )
        print(
            f"  {'':<26} p99 {spread([r['latency_ms']['p99'] for r in runs], '{:.3f}')} ms   at"
            f" {spread([r['msg_per_s'] for r in runs])} msg/s achieved"
        )
    return missed


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
