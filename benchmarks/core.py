"""The core benchmark: does mqusers cost less CPU per message than plain stomp.py, and is it fast?

    python -m benchmarks.core --host stomp://127.0.0.1:61613 --messages 100000 --size 1KB

One run, one broker, each measurement in a fresh process and on a fresh queue, interleaved per
round so that machine noise hits all of them alike:

  (a) raw    plain stomp.py 9.0 under gevent: producer + consumer connections, send N, count N;
  (b) mqusers the mqusers producer and consumer Users run by Locust (as a library), same N, size;
  (c) paced  mqusers at a paced rate (default 2,000 msg/s for 10 s): send-to-receive p50/p99;
  (d) cli    the same N through the ``locust`` command a user types (locustfiles/put_get.py,
             --mq-total-messages N): whole process CPU, messages from its --mq-report-json;
  (e) raw paced  (a) at (c)'s rate and duration with TCP_NODELAY: p50/p99 from every sample;
  (f) go     the compiled reference (benchmarks/goref.py): (a)'s N all out, then (c)'s rate and duration;
  (g) startup  (d) with one message: start-up to exit (benchmarks/startup.py), beside ``import locust``;
  (h) sync   a RECEIPT awaited per SEND, mqusers then go (benchmarks/syncsend.py), --sync-messages each.

(a) and (b) report wall msg/s and messages per generator CPU-second, over the measured phase
(user+sys of that child from ``getrusage(RUSAGE_SELF)``) and over the whole process (start-up
included, from the parent's view of the child). Targets: (b)/(a) and (d)/(a) per CPU-second >= 3,
(c) p50 <= 0.5 ms, (c) p99 <= (e) p99 + 1 ms, (g) <= 0.5 CPU-s and (h) >= go's. See benchmarks/README.md.
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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks import goref, startup, syncsend
from benchmarks.common import RANGE, RESULT_PREFIX, BenchError, cache_bytecode, parse_host, parse_size, spread
from benchmarks.locust_cli import run_counted

RATIO_TARGET = 3.0
P50_TARGET_MS = 0.5
#: (c)'s p99 may exceed plain stomp.py's with TCP_NODELAY, measured in the same round, by this much.
P99_MARGIN_MS = 1.0
ROOT = Path(__file__).resolve().parent.parent
LABELS = {
    "raw": "(a) raw stomp.py+gevent",
    "mqusers": "(b) mqusers via Locust",
    "paced": "(c) mqusers paced",
    "cli": "(d) locust command line",
    "raw-paced": "(e) raw stomp.py paced",
    **goref.LABELS,
    **startup.LABELS,
    **syncsend.LABELS,
}
#: --parts letter -> kind, in the order each round runs them ("go" is (f)'s two runs: goref.with_go).
PARTS = {"a": "raw", "b": "mqusers", "c": "paced", "d": "cli", "e": "raw-paced", "f": "go", "g": "startup", "h": "sync"}


def fresh_queue(kind: str) -> str:
    return f"/queue/bench.{kind}.{uuid.uuid4().hex[:12]}"


def child_command(kind: str, options: argparse.Namespace, profile: str = "") -> list[str]:
    host, port = parse_host(options.host)
    common = ["--destination", fresh_queue(kind), "--size", str(options.size_bytes), "--timeout", str(options.timeout)]
    if kind == "mqusers":
        command = ["-m", "benchmarks.mq_locust", "--mode", "mqusers", "--host", options.host]
        extra = ["--profile", profile] if profile else []
        return [sys.executable, *command, "--messages", str(options.messages), "--rate", "0", *common, *extra]
    if kind == "sync":
        return syncsend.child_command(options, fresh_queue(kind))
    if kind == "raw":
        command = ["-m", "benchmarks.raw_stomp", "--broker-host", host, "--broker-port", str(port)]
        return [sys.executable, *command, "--messages", str(options.messages), *common]
    # The paced kinds: (c) and (e) send the same count at the same rate.
    paced = ["--messages", str(round(options.paced_rate * options.paced_seconds)), "--rate", str(options.paced_rate)]
    if kind == "raw-paced":
        command = ["-m", "benchmarks.raw_stomp", "--broker-host", host, "--broker-port", str(port)]
        return [sys.executable, *command, *paced, *common]
    command = ["-m", "benchmarks.mq_locust", "--mode", "paced", "--host", options.host]
    return [sys.executable, *command, *paced, *common]


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
            if kind == "cli":
                n, size = options.messages, options.size_bytes
                return run_counted(options.host, n, size, options.timeout, fresh_queue(kind))
            if kind in startup.LABELS:
                return startup.run(options, fresh_queue(kind))
            if kind == "go-sync":
                queue = fresh_queue(kind)
                return goref.run(kind, options, queue, syncsend.go_command(options, queue))
            if kind in goref.LABELS:
                return goref.run(kind, options, fresh_queue(kind))
            return run_child(child_command(kind, options), options.timeout + 60)
        except BenchError as error:
            if attempt == options.retries:
                raise
            print(f"         {LABELS[kind]} failed ({error}); retrying on a fresh queue", flush=True)
    raise AssertionError("unreachable")


def whole_process(result: dict[str, Any]) -> float:
    """Messages per CPU-second of the whole child process, start-up and shut-down included."""
    return float(result["messages"] / result["process_cpu_s"])


def describe(result: dict[str, Any]) -> str:
    kind = result["kind"]
    per_msg = 1e6 / result["messages"]
    if kind in startup.LABELS:
        return startup.describe(result)
    if kind == "cli":
        return (
            f"{LABELS[kind]:<26} {result['msg_per_s']:>9,.0f} msg/s  {result['msg_per_cpu_s']:>9,.0f} msg/CPU-s"
            f"  whole process: {result['process_cpu_s']:.2f} CPU-s ({result['sys_s']:.2f} sys),"
            f" {result['wall_s']:.2f} s wall; {result['received']:,} delivered, none lost"
        )
    text = (
        f"{LABELS[kind]:<26} {result['msg_per_s']:>9,.0f} msg/s  {result['msg_per_cpu_s']:>9,.0f} msg/CPU-s"
        f"  {result['cpu_s'] * per_msg:5.1f} CPU-µs/msg ({(result['cpu_s'] - result['sys_s']) * per_msg:.1f} user"
        f" + {result['sys_s'] * per_msg:.1f} sys; {result['wall_s']:.2f} s wall,"
        f" whole process {result['process_cpu_s']:.2f} CPU-s = {whole_process(result):,.0f} msg/CPU-s)"
    )
    if kind in ("paced", "raw-paced", "go-paced"):
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
    parser.add_argument("--sync-messages", type=int, default=20_000, help="N for (h) sync sends (default 20000)")
    parser.add_argument("--parts", default="abcdefgh", help="which of a to h to run (default abcdefgh)")
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
    if (
        min(options.messages, options.sync_messages, options.repeat) < 1
        or not set(options.parts) <= set(PARTS)
        or not options.parts
    ):
        parser.error(
            f"--messages, --sync-messages and --repeat must be at least 1; --parts is a subset of {''.join(PARTS)}"
        )
    kinds = [kind for part, kind in PARTS.items() if part in options.parts]
    cache_bytecode()

    print(
        f"mqusers core benchmark: {options.host}, N={options.messages:,} messages of {options.size_bytes:,} B,"
        f" paced {options.paced_rate:,.0f} msg/s for {options.paced_seconds:g} s,"
        f" {options.repeat} round(s) of {', '.join(part for part in PARTS if part in options.parts)}"
        " (fresh process and queue each)",
        flush=True,
    )
    kinds = syncsend.with_go(goref.with_go(kinds), goref.build() if "sync" in kinds else "")
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


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def ratio_line(
    what: str, results: dict[str, list[dict[str, Any]]], num: str, den: str, figure: Callable[[dict[str, Any]], float]
) -> bool | None:
    """Print ``what``'s per-round ratios num/den of ``figure`` against RATIO_TARGET; None when not both ran."""
    if not (results.get(num) and results.get(den)):
        return None
    ratios = [figure(b) / figure(a) for a, b in zip(results[den], results[num], strict=True)]
    ok = statistics.median(ratios) >= RATIO_TARGET
    print(f"  {what:<44} {spread(ratios, '{:.2f}')}   target >= {RATIO_TARGET:g}: {verdict(ok)}")
    return ok


def report(results: dict[str, list[dict[str, Any]]]) -> bool:
    """Print the summary; True when a target was missed."""
    verdicts: list[bool | None] = []
    print(f"\nsummary: median [min{RANGE}max] over rounds")
    for kind in ("raw", "mqusers", "go"):
        if results.get(kind):
            runs = results[kind]
            wall = spread([r["msg_per_s"] for r in runs])
            cpu = spread([r["msg_per_cpu_s"] for r in runs])
            micros = spread([1e6 * r["cpu_s"] / r["messages"] for r in runs], "{:.1f}")
            whole = spread([whole_process(r) for r in runs])
            print(
                f"  {LABELS[kind]:<26} wall {wall} msg/s   {cpu} msg/CPU-s   {micros} CPU-µs/msg"
                f"   whole process {whole} msg/CPU-s"
            )
    if results.get("cli"):
        runs = results["cli"]
        wall, whole = spread([r["msg_per_s"] for r in runs]), spread([whole_process(r) for r in runs])
        print(f"  {LABELS['cli']:<26} wall {wall} msg/s (report)   whole process {whole} msg/CPU-s")

    def measured(result: dict[str, Any]) -> float:
        return float(result["msg_per_cpu_s"])

    verdicts.append(ratio_line("ratio (b)/(a) per CPU-s, measured phase", results, "mqusers", "raw", measured))
    verdicts.append(ratio_line("ratio (b)/(a) per CPU-s, whole process", results, "mqusers", "raw", whole_process))
    verdicts.append(ratio_line("ratio (d)/(a) per CPU-s, whole process (CLI)", results, "cli", "raw", whole_process))
    if results.get("raw") and results.get("mqusers"):
        pairs = zip(results["raw"], results["mqusers"], strict=True)
        wall_ratio = [b["msg_per_s"] / a["msg_per_s"] for a, b in pairs]
        print(f"  {'ratio (b)/(a) wall msg/s':<44} {spread(wall_ratio, '{:.2f}')}")
    if results.get("paced"):
        runs = results["paced"]
        p50 = [r["latency_ms"]["p50"] for r in runs]
        ok = statistics.median(p50) <= P50_TARGET_MS
        verdicts.append(ok)
        print(f"  {LABELS['paced']:<26} p50 {spread(p50, '{:.3f}')} ms   target <= {P50_TARGET_MS:g} ms: {verdict(ok)}")
        print(
            f"  {'':<26} p99 {spread([r['latency_ms']['p99'] for r in runs], '{:.3f}')} ms   at"
            f" {spread([r['msg_per_s'] for r in runs])} msg/s achieved"
        )
    if results.get("raw-paced"):
        runs = results["raw-paced"]
        print(
            f"  {LABELS['raw-paced']:<26} p50 {spread([r['latency_ms']['p50'] for r in runs], '{:.3f}')} ms"
            f"   p99 {spread([r['latency_ms']['p99'] for r in runs], '{:.3f}')} ms   (TCP_NODELAY, every sample)"
        )
    if results.get("paced") and results.get("raw-paced"):
        # Per round: (c) and (e) ran seconds apart, so they saw the same machine.
        pairs = zip(results["paced"], results["raw-paced"], strict=True)
        excess = [c["latency_ms"]["p99"] - e["latency_ms"]["p99"] for c, e in pairs]
        ok = statistics.median(excess) <= P99_MARGIN_MS
        verdicts.append(ok)
        print(
            f"  {'(c) p99 - (e) p99':<26} {spread(excess, '{:+.3f}')} ms   target <= +{P99_MARGIN_MS:g} ms:"
            f" {verdict(ok)}   (per-round differences)"
        )
    for line in goref.report_lines(results):
        print(line)
    lines, ok_startup = startup.report_lines(results)
    sync_lines, sync_verdicts = syncsend.report_lines(results)
    for line in [*lines, *sync_lines]:
        print(line)
    verdicts += [ok_startup, *sync_verdicts]
    return any(v is False for v in verdicts)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
