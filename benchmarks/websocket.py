"""STOMP over WebSocket against plain STOMP on the same broker, in one run: messages per CPU-second and latency.

    python -m benchmarks.websocket --tcp stomp://127.0.0.1:61614 --ws ws://127.0.0.1:15674/ws

Per round, four child processes, each on its own fresh queue, interleaved (tcp, ws, tcp paced, ws
paced): mqusers' producer and consumer Users run by Locust as a library (``benchmarks/mq_locust.py``,
core's (b) and (c)), unpaced for N messages (CPU of the measured phase, counts checked exactly), then
paced for the send-to-receive latency (the book's µs HdrHistogram). Printed: each figure's median
[min-max] over rounds and the per-round ratios ws/tcp (msg per CPU-s) and differences ws - tcp (p50, p99).
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.common import BenchError, parse_size, spread
from benchmarks.core import describe, run_child

KINDS = ("tcp", "ws", "tcp-paced", "ws-paced")


def command(kind: str, options: argparse.Namespace) -> list[str]:
    host = options.ws if kind.startswith("ws") else options.tcp
    paced = kind.endswith("paced")
    count = round(options.paced_rate * options.paced_seconds) if paced else options.messages
    return [
        sys.executable, "-m", "benchmarks.mq_locust", "--mode", "paced" if paced else "mqusers", "--host", host,
        "--destination", f"/queue/bench.{kind}.{uuid.uuid4().hex[:12]}", "--messages", str(count),
        "--rate", str(options.paced_rate if paced else 0), "--size", str(options.size_bytes),
        "--timeout", str(options.timeout),
    ]  # fmt: skip


def measure(kind: str, options: argparse.Namespace) -> dict[str, Any]:
    for attempt in range(options.retries + 1):
        try:
            result = run_child(command(kind, options), options.timeout + 60)
            result["kind"] = "paced" if kind.endswith("paced") else "mqusers"  # describe()'s labels
            return result
        except BenchError as error:
            if attempt == options.retries:
                raise
            print(f"         {kind} failed ({error}); retrying on a fresh queue", flush=True)
    raise AssertionError("unreachable")


def per_round(
    what: str,
    pair: tuple[list[dict[str, Any]], list[dict[str, Any]]],
    figure: Callable[[dict[str, Any]], float],
    ratio: bool,
) -> None:
    """``what``, ws against tcp in each round (they ran seconds apart), summarised over the rounds."""
    tcp, ws = pair
    values = [figure(w) / figure(t) if ratio else figure(w) - figure(t) for t, w in zip(tcp, ws, strict=True)]
    print(f"  {what:<36} {spread(values, '{:.2f}' if ratio else '{:+.3f}')}")


def report(results: dict[str, list[dict[str, Any]]]) -> None:
    print("summary: median [min-max] over rounds")
    for kind in ("tcp", "ws"):
        rows = results[kind]
        cpu_us = [1e6 * r["cpu_s"] / r["messages"] for r in rows]
        print(f"  {kind:<9} unpaced  {spread([r['msg_per_cpu_s'] for r in rows])} msg/CPU-s"
              f"  {spread(cpu_us, '{:.1f}')} CPU-µs/msg  {spread([r['msg_per_s'] for r in rows])} msg/s")  # fmt: skip
    for kind in ("tcp-paced", "ws-paced"):
        latency = [r["latency_ms"] for r in results[kind]]
        print(f"  {kind:<9} p50 {spread([x['p50'] for x in latency], '{:.3f}')} ms"
              f"  p99 {spread([x['p99'] for x in latency], '{:.3f}')} ms"
              f"  at {spread([r['msg_per_s'] for r in results[kind]])} msg/s")  # fmt: skip
    unpaced, paced = (results["tcp"], results["ws"]), (results["tcp-paced"], results["ws-paced"])
    per_round("ratio ws/tcp msg per CPU-s", unpaced, lambda r: r["msg_per_cpu_s"], ratio=True)
    per_round("ratio ws/tcp wall msg/s", unpaced, lambda r: r["msg_per_s"], ratio=True)
    per_round("paced p50 ws - tcp (ms)", paced, lambda r: r["latency_ms"]["p50"], ratio=False)
    per_round("paced p99 ws - tcp (ms)", paced, lambda r: r["latency_ms"]["p99"], ratio=False)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.websocket", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--tcp", required=True, help="the broker over plain STOMP, stomp://HOST:PORT")
    parser.add_argument("--ws", required=True, help="the same broker over WebSocket, ws://HOST:PORT/PATH")
    parser.add_argument("--messages", type=int, default=50_000, help="N unpaced (default 50000)")
    parser.add_argument("--size", default="1KB", help="body size (default 1KB)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--paced-rate", type=float, default=2000.0, help="paced msg/s (default 2000)")
    parser.add_argument("--paced-seconds", type=float, default=10.0, help="paced duration (default 10)")
    parser.add_argument("--timeout", type=float, default=120.0, help="deadline per measurement, s (default 120)")
    parser.add_argument("--retries", type=int, default=1, help="reruns of a failed measurement (default 1)")
    options = parser.parse_args(argv)
    try:
        options.size_bytes = parse_size(options.size)
    except ValueError as error:
        parser.error(str(error))
    if options.messages < 1 or options.repeat < 1:
        parser.error("--messages and --repeat must be at least 1")
    print(f"mqusers WebSocket benchmark: {options.tcp} against {options.ws}, N={options.messages:,} of "
          f"{options.size_bytes:,} B, paced {options.paced_rate:,.0f} msg/s for {options.paced_seconds:g} s, "
          f"{options.repeat} round(s) of {', '.join(KINDS)} (fresh process and queue each)", flush=True)  # fmt: skip
    results: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
    try:
        for round_no in range(1, options.repeat + 1):
            for kind in KINDS:
                result = measure(kind, options)
                results[kind].append(result)
                print(f"round {round_no}  {kind:<9} {describe(result)}", flush=True)
    except BenchError as error:
        print(f"benchmark failed: {error}", file=sys.stderr)
        return 2
    report(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
