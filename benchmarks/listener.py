"""What the InfluxDB listener costs the generator: messages per CPU-second with it on and off.

    python -m benchmarks.listener --host stomp://127.0.0.1:61613 [--influx-url http://127.0.0.1:8428]

Each measurement is :mod:`benchmarks.mq_locust` (mqusers' producer and consumer Users run by
Locust, measured phase only, fresh process and queue) with or without an
:class:`~mqusers.sinks.listener.InfluxSink` attached at init, interleaved per round so machine
noise hits both alike. Two loads: paced (default 2,000 msg/s for 10 s, the core benchmark's rate)
and unpaced. With ``--influx-url`` the listener really writes there (VictoriaMetrics or InfluxDB
2.x); without, it encodes every point and hands it to a sender that only counts, which isolates
the listener's own CPU from the HTTP client's.

Prints, per load, the median msg/s and msg per generator CPU-second off and on, and the per-round
ratio on / off of the latter (1.0 = free). At the unpaced rate the generator is CPU-bound, so its
throughput is its msg per CPU-second: the change there is judged against the issue's target,
<= 5 % (``--strict``: exit 1 when missed). The wall msg/s change is printed beside it, but the
broker shares the machine's CPUs, so it is not what is judged.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from benchmarks.common import RESULT_PREFIX, BenchError, spread

ROOT = Path(__file__).resolve().parent.parent
#: Largest throughput change the listener may cause at the unpaced rate, percent.
CHANGE_TARGET_PCT = 5.0


def child(options: argparse.Namespace) -> None:
    """One measurement: mq_locust's run, with the listener attached at init when asked."""
    import locust  # noqa: F401  (gevent's patching before influxdb-client and sockets)
    from locust import events

    from benchmarks import mq_locust
    from benchmarks.common import child_main
    from mqusers.run.context import context
    from mqusers.sinks.listener import InfluxSink
    from mqusers.sinks.sinkoptions import InfluxSettings

    sent: list[int] = [0]

    def counting_send(body: str) -> None:
        sent[0] += body.count("\n") + 1

    def on_init(environment: Any, **_: Any) -> None:
        settings = InfluxSettings(url=options.influx_url or "http://unused.invalid", interval=options.interval)
        sink = InfluxSink(
            environment, context(environment), settings, send=None if options.influx_url else counting_send
        )
        sink.start()

    if options.listener == "on":
        events.init.add_listener(on_init)
    run_options = argparse.Namespace(
        mode="paced" if options.rate else "mqusers",
        host=options.host,
        destination=options.destination,
        messages=options.messages,
        size=options.size,
        rate=options.rate,
        timeout=options.timeout,
        profile="",
        profiler="cprofile",
    )
    child_main(lambda: mq_locust.run(run_options))


def measure(options: argparse.Namespace, listener: str, messages: int, rate: float) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.listener", "--child", "--listener", listener, "--host", options.host]
    command += ["--destination", f"/queue/bench.listener.{uuid.uuid4().hex[:12]}", "--messages", str(messages)]
    command += ["--rate", str(rate), "--size", str(options.size), "--timeout", str(options.timeout)]
    command += ["--interval", str(options.interval)]
    if options.influx_url:
        command += ["--influx-url", options.influx_url]
    done = subprocess.run(command, capture_output=True, text=True, timeout=options.timeout + 60, cwd=ROOT, check=False)
    for line in done.stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            result: dict[str, Any] = json.loads(line[len(RESULT_PREFIX) :])
            return result
    raise BenchError(f"listener {listener}: no result (exit {done.returncode}): {done.stderr.strip()[-500:]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", required=True, help="stomp://HOST:PORT")
    parser.add_argument("--influx-url", default="", help="write for real to this store (default: count only)")
    parser.add_argument("--interval", type=float, default=1.0, help="listener interval, seconds")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--paced-rate", type=float, default=2000.0, help="msg/s of the paced load")
    parser.add_argument("--paced-seconds", type=float, default=10.0)
    parser.add_argument("--unpaced-messages", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=1024, help="body bytes")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--strict", action="store_true", help="exit 1 when the unpaced target is missed")
    # Child mode (one measurement), used by the parent.
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--listener", choices=("on", "off"), default="off", help=argparse.SUPPRESS)
    parser.add_argument("--destination", default="", help=argparse.SUPPRESS)
    parser.add_argument("--messages", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--rate", type=float, default=0.0, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.child:
        child(options)
        return 0
    loads = {
        "paced": (round(options.paced_rate * options.paced_seconds), options.paced_rate),
        "unpaced": (options.unpaced_messages, 0.0),
    }
    store = options.influx_url or "none (points counted)"
    print(f"listener overhead: {options.rounds} rounds, {options.size} B bodies, store: {store}")
    print(f"{'load':<8} {'listener':<8} {'msg/s':>10} {'msg/CPU-s':>10}")
    missed = False
    try:
        for load, (messages, rate) in loads.items():
            results: dict[str, list[dict[str, Any]]] = {"off": [], "on": []}
            for _ in range(options.rounds):
                for listener in ("off", "on"):
                    results[listener].append(measure(options, listener, messages, rate))
            for listener, runs in results.items():
                wall = statistics.median(r["msg_per_s"] for r in runs)
                cpu = statistics.median(r["msg_per_cpu_s"] for r in runs)
                print(f"{load:<8} {listener:<8} {wall:>10.0f} {cpu:>10.0f}")
            # Per round: on and off ran seconds apart, so they saw the same machine.
            pairs = list(zip(results["off"], results["on"], strict=True))
            cpu_ratio = [on["msg_per_cpu_s"] / off["msg_per_cpu_s"] for off, on in pairs]
            wall_change = [100.0 * (on["msg_per_s"] / off["msg_per_s"] - 1) for off, on in pairs]
            print(f"{load:<8} ratio on/off of msg per CPU-second: {spread(cpu_ratio, '{:.3f}')}")
            if load == "unpaced":
                change = [100.0 * (ratio - 1) for ratio in cpu_ratio]
                ok = abs(statistics.median(change)) <= CHANGE_TARGET_PCT
                missed |= not ok
                print(
                    f"{load:<8} listener on vs off: throughput (msg per CPU-s) {spread(change, '{:+.1f}')} %"
                    f"   target within {CHANGE_TARGET_PCT:g} %: {'met' if ok else 'MISSED'}"
                    f"   (wall msg/s {spread(wall_change, '{:+.1f}')} %)"
                )
    except BenchError as error:
        print(f"benchmark failed: {error}", file=sys.stderr)
        return 3
    return 1 if missed and options.strict else 0


if __name__ == "__main__":
    sys.exit(main())
