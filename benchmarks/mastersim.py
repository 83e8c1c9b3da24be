"""The master under benchmarks/master.py: Locust's MasterRunner with mqusers' listeners, judged at the end.

    python -m benchmarks.mastersim --destinations D --truth N --reports K

Built as the ``locust --master`` command builds it (Locust's parser with mqusers' options, ``events.init``
fired so every mqusers listener attaches), bound to a free port it prints (``PORT n``). Synthetic workers
(benchmarks/fleet.py) connect over ZeroMQ and send ``stats`` messages; before each, a ``bench_mark`` carries
its send time, so the delay from a worker's report to the master's merged figures is read after the last
``worker_report`` listener. After ``bench_end`` it prints ``MERGED``, asks the audit for its verdict and prints one
``BENCH-RESULT {json}`` line: the delays, how long the verdict took, and every figure against the truth
(each destination: N sent, N received, nothing lost, duplicated, unreceived or in flight).
"""

from __future__ import annotations

import locust  # noqa: F401  (gevent's monkey-patching first)
from locust import events
from locust.argument_parser import get_parser
from locust.env import Environment

import argparse
import cProfile
import time
from typing import Any

import gevent
from gevent.event import Event

import mqusers  # noqa: F401  (registers the --mq-* options and the init listener)
from benchmarks.common import BenchError, child_main
from benchmarks.fleet import destination
from mqusers import StompConsumerUser, StompProducerUser
from mqusers.measure.names import RECEIVE, SEND, event_name
from mqusers.run.context import context

MARK, END = "bench_mark", "bench_end"
ZERO = ("lost", "duplicated", "after_reconnect", "unreceived", "in_flight", "unconfirmed", "worker_lost", "foreign")


class Producer(StompProducerUser):
    pass


class Consumer(StompConsumerUser):
    pass


def run(options: argparse.Namespace) -> dict[str, Any]:
    parsed = get_parser(default_config_files=[]).parse_args(["--master", "--host", "stomp://127.0.0.1:9", "-u", "2"])
    env = Environment(user_classes=[Producer, Consumer], events=events, parsed_options=parsed, host=parsed.host)
    runner = env.create_master_runner("127.0.0.1", 0)
    events.init.fire(environment=env, runner=runner, web_ui=None)
    ctx = context(env)
    marks: dict[str, float] = {}
    delays: list[float] = []
    ended = Event()

    def on_mark(msg: Any, **_: Any) -> None:
        marks[msg.node_id] = msg.data

    def on_report(client_id: str, data: dict[str, Any], **_: Any) -> None:
        sent = marks.pop(client_id, None)
        if sent is not None:
            delays.append(time.time() - sent)

    runner.register_message(MARK, on_mark)
    runner.register_message(END, lambda msg, **_: ended.set())
    env.events.worker_report.add_listener(on_report)  # last: after Locust's merge and mqusers' shipping
    print(f"PORT {runner.server.port}", flush=True)
    # Each worker's reports come on its own connection: bench_end (on the first's) may overtake the others'.
    deadline = time.monotonic() + options.timeout
    while not (ended.is_set() and len(delays) >= options.reports):
        if time.monotonic() > deadline:
            raise BenchError(f"{len(delays)} of {options.reports} reports merged within {options.timeout:g}s")
        gevent.sleep(0.01)
    print("MERGED", flush=True)  # the parent reads the CPU of the reports here, before the verdict's
    merged_at = time.time()
    verdict = ctx.audit.verdict(time.time_ns(), 0, settled=True)
    verdict_s = time.time() - merged_at
    wrong = []
    for d in range(options.destinations):
        name = destination(d)
        fig = verdict.get(name)
        if fig is None:
            wrong.append(f"{name}: no figures")
            continue
        got = {"sent": fig["sent"], "received": fig["received"], **{k: fig.get(k, 0) for k in ZERO}}
        want = {"sent": options.truth, "received": options.truth, **dict.fromkeys(ZERO, 0)}
        if got != want:
            wrong.append(f"{name}: { ({k: v for k, v in got.items() if v != want[k]}) } (truth {options.truth})")
        for operation in (SEND, RECEIVE):
            entry = env.stats.entries.get((event_name(operation, name), "STOMP"))
            tally = ctx.book.tallies.get(event_name(operation, name))
            counts = (entry.num_requests if entry else 0, tally.count if tally else 0)
            if counts[0] != counts[1] or not counts[0]:
                wrong.append(f"{operation} {name}: Locust counted {counts[0]}, the book {counts[1]}")
    runner.quit()
    delays.sort()
    return {
        "reports": len(delays),
        "delay_p50_s": delays[len(delays) // 2] if delays else None,
        "delay_max_s": delays[-1] if delays else None,
        "verdict_s": verdict_s,
        "exact": not wrong,
        "wrong": wrong[:5],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--destinations", type=int, required=True)
    parser.add_argument("--truth", type=int, required=True, help="messages sent (and received) per destination")
    parser.add_argument("--reports", type=int, required=True, help="worker reports to merge, from every worker")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--profile", metavar="FILE", help="write a cProfile of the master's whole run (pstats)")
    options = parser.parse_args(argv)
    if not options.profile:
        child_main(lambda: run(options))
        return
    profiler = cProfile.Profile()
    try:
        child_main(lambda: profiler.runcall(run, options))
    finally:
        profiler.dump_stats(options.profile)


if __name__ == "__main__":
    main()
