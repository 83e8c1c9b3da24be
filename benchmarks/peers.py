"""The Java peers in one run: mqusers over STOMP beside the tools users would pick instead, same broker, same load.

    python -m benchmarks.peers            # or: make bench-peers (starts and stops the brokers)

On the local Artemis (`python -m services start artemis`): mqusers over STOMP and `artemis perf
client` (the distribution's own, core protocol). On the local ActiveMQ Classic 6 (`activemq6`):
mqusers over STOMP and Classic's `producer` / `consumer` commands (activemq-console, OpenWire).
The workload is the same for all: one queue, 1 KiB bodies, non-persistent, one producer and one
consumer, first paced at 10,000 msg/s for 10 s, then all-out for 100,000 messages; every run
bounded by its count and a deadline (killed there), each on a fresh queue in a fresh process.

Per tool: msg/s received, messages per generator CPU-second (the tool's whole processes, JVM or
Python start-up included, from the kernel's rusage), p50/p99 send-to-receive where the tool
reports it (Classic's commands report none), and each as a ratio to mqusers' on the same broker.
Goals (issue 24): mqusers at least as many messages per CPU-second as each peer, and its p50
within 0.1 ms of the peer's at 10,000 msg/s.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import java_peers
from benchmarks.common import BenchError, check_broker, parse_size
from benchmarks.core import child_command, run_child

BROKERS = {"artemis": "artemis perf client (core)", "activemq6": "activemq producer/consumer (OpenWire)"}
P50_MARGIN_MS = 0.1
HEADER = (
    "broker",
    "load",
    "tool",
    "msg/s",
    "msg/CPU-s",
    "p50 ms",
    "p99 ms",
    "x msg/s",
    "x msg/CPU-s",
    "x p50",
    "x p99",
)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.peers", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--brokers", default="artemis,activemq6", help="comma-separated: artemis, activemq6")
    parser.add_argument("--rate", type=int, default=10_000, help="the paced load's msg/s (default 10000)")
    parser.add_argument("--seconds", type=int, default=10, help="the paced load's duration (default 10)")
    parser.add_argument("--messages", type=int, default=100_000, help="the all-out load's count (default 100000)")
    parser.add_argument("--peer-seconds", type=int, default=10, help="perf client's all-out duration (default 10)")
    parser.add_argument("--size", default="1KB", help="body size (default 1KB = 1024 B)")
    parser.add_argument("--timeout", type=float, default=120.0, help="deadline per run, s (default 120)")
    parser.add_argument("--json", default="", help="also write every result to this file")
    options = parser.parse_args(argv)
    options.broker_list = [name.strip() for name in options.brokers.split(",") if name.strip()]
    unknown = sorted(set(options.broker_list) - set(BROKERS))
    if unknown or not options.broker_list:
        parser.error(f"--brokers: {', '.join(unknown) or 'none given'}; known: {', '.join(BROKERS)}")
    try:
        options.size_bytes = parse_size(options.size)
    except ValueError as error:
        parser.error(str(error))
    if min(options.rate, options.seconds, options.messages, options.peer_seconds) < 1 or options.timeout <= 0:
        parser.error("--rate, --seconds, --messages, --peer-seconds and --timeout must be positive")
    return options


def mqusers_run(options: argparse.Namespace, stomp_port: int, paced: bool) -> dict[str, Any]:
    """benchmarks/core.py's (b) and (c) children: mqusers' producer and consumer Users under Locust."""
    host = f"stomp://127.0.0.1:{stomp_port}"
    child = argparse.Namespace(
        host=host, size_bytes=options.size_bytes, timeout=options.timeout, messages=options.messages,
        paced_rate=options.rate, paced_seconds=options.seconds,
    )  # fmt: skip
    result = run_child(child_command("paced" if paced else "mqusers", child), options.timeout + 60)
    return {
        "messages": result["messages"],
        "msg_per_s": result["msg_per_s"],
        "cpu_s": result["process_cpu_s"],
        "latency_ms": {"p50": result["latency_ms"]["p50"], "p99": result["latency_ms"]["p99"]},
        "setting": f"--mq-rate {options.rate}" if paced else "--mq-rate 0",
    }


def peer_run(broker: str, options: argparse.Namespace, ports: dict[str, int], paced: bool) -> dict[str, Any]:
    queue = f"bench.peers.{uuid.uuid4().hex[:12]}"
    messages = options.rate * options.seconds if paced else options.messages
    with tempfile.TemporaryDirectory(prefix="mqusers-peers-") as folder:
        workdir = Path(folder)
        try:
            if broker == "artemis":
                rate, seconds = (options.rate, options.seconds) if paced else (0, options.peer_seconds)
                return java_peers.run_artemis(
                    ports["core"], queue, seconds, options.size_bytes, rate, workdir, options.timeout
                )
            return java_peers.run_classic(
                ports["openwire"], queue, messages, options.size_bytes, paced, workdir, options.timeout
            )
        except BenchError:
            kept = Path(tempfile.mkdtemp(prefix="mqusers-peers-failed-"))
            for log in workdir.iterdir():
                log.rename(kept / log.name)
            raise


def mqusers_row(rows: list[dict[str, Any]], row: dict[str, Any]) -> dict[str, Any]:
    """mqusers' row of the same broker and load: what ``row``'s ratios divide by."""
    return next(r for r in rows if (r["broker"], r["load"], r["tool"]) == (row["broker"], row["load"], "mqusers"))


def ratio(value: float | None, base: float | None) -> str:
    return f"{value / base:.2f}" if value is not None and base else "n/a"


def table(rows: list[dict[str, Any]]) -> list[str]:
    """The printed table: each row's figures and, beside them, its ratio to mqusers' row of the same broker and load."""
    cells = [HEADER]
    for row in rows:
        base = next(
            r for r in rows if r["broker"] == row["broker"] and r["load"] == row["load"] and r["tool"] == "mqusers"
        )
        latency, base_latency = row["latency_ms"] or {}, base["latency_ms"] or {}
        per_cpu, base_per_cpu = row["messages"] / row["cpu_s"], base["messages"] / base["cpu_s"]
        cells.append((
            row["broker"], row["load"], row["tool"], f"{row['msg_per_s']:,.0f}", f"{per_cpu:,.0f}",
            f"{latency['p50']:.3f}" if latency else "n/a", f"{latency['p99']:.3f}" if latency else "n/a",
            ratio(row["msg_per_s"], base["msg_per_s"]), ratio(per_cpu, base_per_cpu),
            ratio(latency.get("p50"), base_latency.get("p50")), ratio(latency.get("p99"), base_latency.get("p99")),
        ))  # fmt: skip
    widths = [max(len(line[i]) for line in cells) for i in range(len(HEADER))]
    lines = []
    for line in cells:
        text = [
            cell.ljust(width) if i < 3 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))
        ]
        lines.append("  ".join(text).rstrip())
    return lines


def goals(rows: list[dict[str, Any]], paced_load: str) -> list[str]:
    """Issue 24's two goals, per peer: msg/CPU-s at least the peer's; p50 within 0.1 ms at the paced load."""
    found = []
    for row in rows:
        if row["tool"] == "mqusers":
            continue
        base, where = mqusers_row(rows, row), f"{row['broker']} {row['load']}"
        ok = base["messages"] / base["cpu_s"] >= row["messages"] / row["cpu_s"]
        found.append(f"{where}: mqusers msg/CPU-s >= {row['tool']}'s: {'met' if ok else 'MISSED'}")
        if row["load"] != paced_load:
            continue
        if row["latency_ms"] is None:
            found.append(f"{where}: p50 within {P50_MARGIN_MS} ms: n/a, {row['tool']} reports no latency")
        else:
            gap = base["latency_ms"]["p50"] - row["latency_ms"]["p50"]
            verdict = "met" if gap <= P50_MARGIN_MS else "MISSED"
            found.append(f"{where}: mqusers p50 within {P50_MARGIN_MS} ms of the peer's: {verdict} ({gap:+.3f} ms)")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(argv)
    import services  # after parsing: --help and refusals need no service state

    ports = {name: services.ports(name) for name in options.broker_list}
    try:
        for name in options.broker_list:
            check_broker(f"stomp://127.0.0.1:{ports[name]['stomp']}")
    except BenchError as error:
        print(f"peers: {error}", file=sys.stderr)
        return 2
    paced_load, all_out = f"{options.rate:,}/s x {options.seconds}s", f"all-out x {options.messages:,}"
    print(f"peers: {', '.join(options.broker_list)}; one queue, {options.size_bytes} B, non-persistent;"
          f" paced {paced_load}, then {all_out}", flush=True)  # fmt: skip
    rows: list[dict[str, Any]] = []
    try:
        for name in options.broker_list:
            for load, paced in ((paced_load, True), (all_out, False)):
                for tool in ("mqusers", BROKERS[name]):
                    if tool == "mqusers":
                        result = mqusers_run(options, ports[name]["stomp"], paced)
                    else:
                        result = peer_run(name, options, ports[name], paced)
                    rows.append({"broker": name, "load": load, "tool": tool, **result})
                    print(f"  {name} {load} {tool}: {result['msg_per_s']:,.0f} msg/s ({result['setting']})", flush=True)
    except BenchError as error:
        print(f"peers: {error}", file=sys.stderr)
        return 2
    print("\n" + "\n".join(table(rows)))
    print("\nx = the tool's figure / mqusers' on the same broker and load; msg/CPU-s counts the whole processes.")
    print("\n".join(goals(rows, paced_load)))
    if options.json:
        Path(options.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
