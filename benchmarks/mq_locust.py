"""(b), (c) and (h): mqusers' producer and consumer Users run by Locust as a library.

Run by :mod:`benchmarks.core` in its own process; prints one ``BENCH-RESULT {json}`` line.

The Locust setup is the CLI's: options come from Locust's own parser (with the ``--mq-*`` group
mqusers registers on ``init_command_line_parser``), ``events.init`` fires so mqusers' listeners
attach, and a local runner spawns one consumer and one producer (``fixed_count = 1`` each).

Ordering: the producer's ``on_start`` connects, reports ready, then blocks on ``go``. The
controller sets ``go`` only once the consumer's SUBSCRIBE has been confirmed by the broker's
RECEIPT (``StompClient.subscribe`` waits for it) and the producer is connected, so no message can
be sent before the subscription exists, whatever order Locust spawns the Users in. The measured
phase runs from ``go`` until the mqusers book counts ``receive`` = N.
"""

from __future__ import annotations

import locust  # noqa: F401  (gevent's monkey-patching first)
from locust import events
from locust.argument_parser import get_parser
from locust.env import Environment
from locust.exception import StopUser

import argparse
import cProfile
import logging
import sys
from typing import Any

import gevent
import gevent.util
from gevent.event import Event

import mqusers  # noqa: F401  (registers the --mq-* options and the init listener)
from benchmarks.common import BenchError, Deadline, Meter, child_main, throughput_result
from mqusers import StompConsumerUser, StompProducerUser
from mqusers.run.context import context

#: Completion poll period: adds at most this much to the wall time, ~50 wake-ups/s of CPU.
_POLL_S = 0.02


#: (h) sync sends: each SEND asks a RECEIPT and the producer waits for it before the next (one in flight).
SYNC_OPTIONS = ("--mq-receipts", "true", "--mq-in-flight", "1")


def build_environment(host: str, extra: tuple[str, ...] = ()) -> Environment:
    # No config files: a stray locust.conf or [tool.locust] must not change the benchmark.
    # -u 2 as run() starts: mqusers refuses a headless -u 1 (one consumer, no producer) at init.
    parsed = get_parser(default_config_files=[]).parse_args(["--headless", "--host", host, "-u", "2", *extra])
    return Environment(user_classes=[], events=events, parsed_options=parsed, host=host)


def run(options: argparse.Namespace) -> dict[str, Any]:
    n, destination = options.messages, options.destination
    deadline = Deadline(options.timeout, f"mqusers {options.mode}, {n} messages")
    consumer_ready, producer_ready, go = Event(), Event(), Event()
    consumers: list[StompConsumerUser] = []

    class BenchConsumer(StompConsumerUser):
        fixed_count = 1
        message_size = options.size

        def on_connected(self) -> None:
            super().on_connected()
            consumers.append(self)
            consumer_ready.set()

    class BenchProducer(StompProducerUser):
        fixed_count = 1
        message_size = options.size
        rate = options.rate
        max_messages = n

        def on_start(self) -> None:
            super().on_start()
            if not self.client.connected:
                raise StopUser()  # the connect event carries the reason; the controller times out
            producer_ready.set()
            if not go.wait(timeout=max(0.0, deadline.left())):
                raise StopUser()

    BenchConsumer.destination = BenchProducer.destination = destination

    env = build_environment(options.host, SYNC_OPTIONS if options.mode == "sync" else ())
    env.user_classes = [BenchConsumer, BenchProducer]
    runner = env.create_local_runner()
    events.init.fire(environment=env, runner=runner, web_ui=None)
    ctx = context(env)
    profiler = Profiler(options.profiler, options.profile) if options.profile else None
    receive_name, send_name = f"receive {destination}", f"send {destination}"
    try:
        runner.start(2, spawn_rate=100)
        for what, ready in (("consumer subscribed", consumer_ready), ("producer connected", producer_ready)):
            if not ready.wait(timeout=max(0.0, deadline.left())):
                # Where every greenlet is stuck, for the parent's saved stderr.
                sys.stderr.write("\n".join(gevent.util.format_run_info()) + "\n")
                raise BenchError(f"{what}: not within {options.timeout:g}s; errors: {_failures(env)}")

        meter = Meter()
        if profiler is not None:
            profiler.start()
        meter.start()
        go.set()
        received, total = 0, env.stats.total
        while received < n:
            # Coarse on purpose: this loop's wake-ups are CPU inside the measured phase.
            gevent.sleep(_POLL_S)
            received = consumers[0].receiver.received  # the book and Locust's stats follow in bulk
            if total.num_failures:
                # A dropped connection loses non-persistent messages: the count would never reach N.
                raise BenchError(f"a STOMP operation failed after {received} of {n} received: {_failures(env)}")
            if deadline.left() < 0:
                deadline.check(f"received {received} of {n}; errors: {_failures(env)}")
        ctx.recorder.flush()  # the last fraction of a second's bulk update belongs to the phase
        meter.stop()
        if profiler is not None:
            profiler.stop()

        book = ctx.book.tallies
        receive, send = book[receive_name], book.get(send_name)
        entry = env.stats.entries.get((receive_name, "STOMP"))
        checks = {
            "book receive": receive.count,
            "book send": send.count if send else 0,
            "locust stats receive": entry.num_requests if entry else 0,
        }
        wrong = {k: v for k, v in checks.items() if v != n}
        if wrong or receive.failures or (entry and entry.num_failures):
            raise BenchError(f"counts differ from N={n}: {checks}; failures: {_failures(env)}")
        extra: dict[str, Any] = {"received": receive.count, "stats_receive": checks["locust stats receive"]}
        extra["latency_ms"] = receive.latency_ms()
        if (receipt := book.get(f"receipt {destination}")) is not None:
            extra["receipt_ms"] = receipt.latency_ms()  # (h): the SEND-to-RECEIPT round trip each send waited
        extra["negative_latencies"] = receive.negative
        return throughput_result(options.mode, n, meter, **extra)
    finally:
        with gevent.Timeout(15, False):
            runner.quit()


class Profiler:
    """cProfile (deterministic; ``.prof`` for pstats) or pyinstrument (sampling; text) over the measured phase."""

    def __init__(self, kind: str, path: str):
        self.kind, self.path = kind, path
        if kind == "pyinstrument":
            import pyinstrument

            self._profiler: Any = pyinstrument.Profiler(interval=0.0005, async_mode="disabled")
        else:
            self._profiler = cProfile.Profile()

    def start(self) -> None:
        if self.kind == "pyinstrument":
            self._profiler.start()
        else:
            self._profiler.enable()

    def stop(self) -> None:
        if self.kind == "pyinstrument":
            self._profiler.stop()
            with open(self.path, "w", encoding="utf-8") as handle:
                handle.write(self._profiler.output_text(unicode=True, show_all=False))
        else:
            self._profiler.disable()
            self._profiler.dump_stats(self.path)


def _failures(env: Environment) -> str:
    found = [f"{e.name}: {e.error}" for e in env.stats.errors.values()]
    return "; ".join(found[:3]) or "none"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mode", choices=("mqusers", "paced", "sync"), default="mqusers")
    parser.add_argument("--host", required=True)
    parser.add_argument("--destination", required=True)
    parser.add_argument("--messages", type=int, required=True)
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--rate", type=float, default=0.0, help="producer msg/s, 0 = as fast as possible")
    parser.add_argument("--timeout", type=float, required=True)
    parser.add_argument("--profile", default="", help="write a profile of the measured phase to this file")
    parser.add_argument("--profiler", choices=("cprofile", "pyinstrument"), default="cprofile")
    options = parser.parse_args()
    # Locust logs spawning at INFO; the parent shows only what goes wrong.
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    child_main(lambda: run(options))


if __name__ == "__main__":
    main()
