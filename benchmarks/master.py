"""What the master costs per worker and per message it merges, by simulation: one master, up to 200 workers.

    python -m benchmarks.master [--workers 10,50,100,200] [--rates 100000,500000,1000000,2000000] [--reports 4]

Each cell of the table is a fresh master (benchmarks/mastersim.py: Locust's MasterRunner with every
mqusers listener) fed by W synthetic workers (benchmarks/fleet.py) over ZeroMQ, as real workers feed it:
each sends a ``stats`` report every 3 s (staggered over the interval), heart-beats every second, R msg/s
in all over D queues with P producers and C competing consumers per worker each (their ledgers as
fragmented as competing consumers make them: ``--run 1``). The reports are built and encoded before the
master starts, so this process costs the master nothing but the sending. Printed per cell: the master's
CPU over the reports (user + sys from /proc, % of one core: above 100 it cannot keep up), its peak RSS,
the delay from a worker's report to the master's merged figures (median and worst), how long the final
verdict took (after the reports: not in the CPU figure), the bytes per report round, and whether the
audit came out exact against the truth.

Targets (issue 34): at 100 workers and 1,000,000 msg/s, under 50 % of one core and 1 GB, the audit exact.
Exit status: 0 measured, 1 a target missed with ``--strict``, 2 a measurement failed.
"""

from __future__ import annotations

import locust  # noqa: F401  (gevent's monkey-patching first)
from locust import __version__
from locust.rpc import Message
from locust.rpc.zmqrpc import Client

import argparse
import json
import os
import select
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gevent

from benchmarks.common import RESULT_PREFIX, BenchError
from benchmarks.fleet import Shape, reports, tag
from benchmarks.locust_cli import child_env, proc_status_kb
from benchmarks.mastersim import END, MARK

TARGET_WORKERS, TARGET_RATE, TARGET_CPU, TARGET_RSS_MB = 100, 1_000_000, 50.0, 1024.0
TICK_HZ = os.sysconf("SC_CLK_TCK")


@dataclass
class Cell:
    shape: Shape
    cpu_percent: float
    rss_mb: float
    round_mb: float
    result: dict[str, Any]

    @property
    def exact(self) -> bool:
        return bool(self.result.get("exact"))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK_HZ  # utime, stime


def build(shape: Shape, count: int) -> list[list[bytes]]:
    """Every report, encoded as the worker's Locust would send it: [report][worker]."""
    rounds: list[list[bytes]] = [[] for _ in range(count)]
    for report, worker, data in reports(shape, count, int(time.time())):
        rounds[report].append(Message("stats", data, tag(worker)).serialize())
    return rounds


def measure(shape: Shape, count: int, timeout: float, profile: str | None = None) -> Cell:
    rounds = build(shape, count)
    truth = shape.sent(count)
    with tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.mastersim", "--destinations", str(shape.destinations),
             "--truth", str(truth), "--reports", str(count * shape.workers), "--timeout", str(timeout),
             *(["--profile", profile] if profile else [])],
            stdout=subprocess.PIPE, stderr=err, text=True, env=child_env(),
        )  # fmt: skip
        try:
            assert child.stdout is not None
            line = child.stdout.readline()
            if not line.startswith("PORT "):
                err.seek(0)
                raise BenchError(f"the master did not start: {line.strip()} {err.read()[-2000:]}")
            port = int(line.split()[1])
            result = _feed(shape, rounds, port, child)
            cpu = result.pop("cpu_s")
            out = child.stdout.read()
            if child.wait(timeout=timeout) != 0:
                err.seek(0)
                raise BenchError(f"the master exited {child.returncode}: {err.read()[-2000:]}")
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
    answer = next((json.loads(x[len(RESULT_PREFIX) :]) for x in out.splitlines() if x.startswith(RESULT_PREFIX)), {})
    simulated = count * shape.interval_s
    round_mb = sum(len(m) for r in rounds for m in r) / count / 1e6
    return Cell(shape, 100.0 * cpu / simulated, result["rss_mb"], round_mb, {**answer, **result})


def _feed(shape: Shape, rounds: list[list[bytes]], port: int, child: subprocess.Popen[str]) -> dict[str, Any]:
    """Connect the workers, send every round on its schedule, then ``bench_end``; the master's CPU meanwhile."""
    clients = [Client("127.0.0.1", port, tag(w)) for w in range(shape.workers)]
    for w, client in enumerate(clients):
        client.send(Message("client_ready", __version__, tag(w)))

    def beat() -> None:
        while True:
            for w, client in enumerate(clients):
                client.send(Message("heartbeat", {"state": "running", "current_cpu_usage": 50.0,
                                                  "current_memory_usage": 100 << 20}, tag(w)))  # fmt: skip
            gevent.sleep(1.0)

    beats = gevent.spawn(beat)
    gevent.sleep(1.0)  # every client_ready handled before the first report
    cpu0, start = cpu_seconds(child.pid), time.monotonic()
    for k, messages in enumerate(rounds):
        for w, (client, message) in enumerate(zip(clients, messages, strict=True)):
            due = start + (k + w / shape.workers) * shape.interval_s
            gevent.sleep(max(0.0, due - time.monotonic()))
            client.send(Message(MARK, time.time(), tag(w)))
            client.socket.send(message)
    clients[0].send(Message(END, None, tag(0)))
    cpu = rss = 0.0
    while child.poll() is None:  # the master prints MERGED once it has merged every report
        cpu, rss = cpu_seconds(child.pid), proc_status_kb(child.pid, "VmHWM") or rss
        if _answered(child):
            break
        gevent.sleep(0.05)
    assert child.stdout is not None
    if child.stdout.readline().strip() != "MERGED":
        raise BenchError(f"the master exited {child.wait()} before it had merged every report")
    beats.kill()
    for client in clients:
        client.close(linger=0)
    return {"cpu_s": cpu - cpu0, "rss_mb": rss / 1024}


def _answered(child: subprocess.Popen[str]) -> bool:
    """The master printed its result (it merged every report and judged): peek without consuming."""
    assert child.stdout is not None
    return bool(select.select([child.stdout], [], [], 0)[0])


def table(cells: list[Cell]) -> str:
    head = (f"{'workers':>7} {'msg/s':>10} {'master CPU':>10} {'peak RSS':>9} {'delay p50':>9} {'delay max':>9} "
            f"{'verdict':>8} {'MB/round':>8}  audit")  # fmt: skip
    lines = [head]
    for c in cells:
        r = c.result
        lines.append(
            f"{c.shape.workers:>7,} {c.shape.rate:>10,} {c.cpu_percent:>9.0f}% {c.rss_mb:>6.0f} MB "
            f"{_s(r.get('delay_p50_s'))} {_s(r.get('delay_max_s'))} {_s(r.get('verdict_s'), 8)} {c.round_mb:>8.1f}  "
            + ("exact" if c.exact else "WRONG " + "; ".join(r.get("wrong", []))[:200])
        )
    return "\n".join(lines)


def _s(value: float | None, width: int = 9) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width - 2}.2f} s"


def _ints(text: str) -> list[int]:
    return [int(float(x)) for x in text.split(",") if x]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=_ints, default=[10, 50, 100, 200])
    parser.add_argument("--rates", type=_ints, default=[100_000, 500_000, 1_000_000, 2_000_000])
    parser.add_argument("--destinations", type=int, default=4)
    parser.add_argument("--producers", type=int, default=2, help="per worker and destination")
    parser.add_argument("--consumers", type=int, default=2, help="per worker and destination")
    parser.add_argument("--run", type=int, default=1, help="consecutive seqs the broker hands one consumer")
    parser.add_argument("--reports", type=int, default=4, help="report rounds (3 s each)")
    parser.add_argument("--timeout", type=float, default=300.0, help="per cell, for the master's answer")
    parser.add_argument("--profile", metavar="PREFIX", help="cProfile each master to PREFIX.<workers>.<rate>")
    parser.add_argument("--strict", action="store_true", help="exit 1 when the target cell misses a target")
    options = parser.parse_args(argv)
    cells = []
    try:
        for workers in options.workers:
            for rate in options.rates:
                shape = Shape(
                    workers, rate, options.destinations, options.producers, options.consumers, run=options.run
                )
                profile = f"{options.profile}.{workers}.{rate}" if options.profile else None
                cell = measure(shape, options.reports, options.timeout, profile)
                cells.append(cell)
                print(table([cell]).splitlines()[1], flush=True)
    except BenchError as error:
        print(f"benchmarks.master: {error}", file=sys.stderr)
        return 2
    print("\n" + table(cells))
    target = [c for c in cells if (c.shape.workers, c.shape.rate) == (TARGET_WORKERS, TARGET_RATE)]
    missed = [c for c in target if not (c.exact and c.cpu_percent < TARGET_CPU and c.rss_mb < TARGET_RSS_MB)]
    for c in target:
        verdict = "FAIL" if c in missed else "PASS"
        audit = "exact" if c.exact else "WRONG"
        cpu, rss = f"CPU {c.cpu_percent:.0f}% (< {TARGET_CPU:.0f}%)", f"RSS {c.rss_mb:.0f} MB (< {TARGET_RSS_MB:.0f})"
        print(f"target: {TARGET_WORKERS} workers at {TARGET_RATE:,} msg/s: {cpu}, {rss}, audit {audit}: {verdict}")
    return 1 if options.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
