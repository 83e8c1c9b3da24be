"""(a) and (e): plain stomp.py (the dev extra's range) under gevent, one producer and one consumer connection.

Run by :mod:`benchmarks.core` in its own process; prints one ``BENCH-RESULT {json}`` line.
stomp.py is used as its documentation shows: ``Connection12``, a listener counting ``on_message``,
``send()`` in a loop, default options (auto-decode).

(a) unpaced (``--rate 0``): default socket options (no TCP_NODELAY), send N as fast as possible.
(e) paced (``--rate R``): TCP_NODELAY on both sockets (as mqusers sets it, so latency compares like
with like), message i sent at t0 + i/R, its ``time.time_ns()`` in a header; latency is taken first
thing in ``on_message`` and p50/p99 come from every sample (nearest rank), not a histogram.
"""

from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402
import math  # noqa: E402
import socket  # noqa: E402
import threading  # noqa: E402  (patched: a gevent Event)
import time  # noqa: E402  (patched: sleep yields to the receiver greenlet)
from typing import Any  # noqa: E402

import stomp  # noqa: E402

from benchmarks.common import BenchError, Deadline, Meter, child_main, throughput_result  # noqa: E402

_BODY_ALPHABET = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
#: (e): the producer's time.time_ns() at send.
SENT_HEADER = "bench-sent-ns"


class Counter(stomp.ConnectionListener):  # type: ignore[misc]
    def __init__(self, expected: int, timed: bool = False):
        self.expected = expected
        self.count = 0
        self.done = threading.Event()
        self.receipts: dict[str, threading.Event] = {}
        self.errors: list[str] = []
        #: (e): send-to-on_message latency of every message, ns.
        self.latencies_ns: list[int] | None = [] if timed else None

    def on_message(self, frame: Any) -> None:
        if self.latencies_ns is not None:
            self.latencies_ns.append(time.time_ns() - int(frame.headers[SENT_HEADER]))
        self.count += 1
        if self.count >= self.expected:
            self.done.set()

    def on_receipt(self, frame: Any) -> None:
        event = self.receipts.get(frame.headers.get("receipt-id", ""))
        if event is not None:
            event.set()

    def on_error(self, frame: Any) -> None:
        self.errors.append(frame.headers.get("message", "ERROR"))

    def on_disconnected(self) -> None:
        self.errors.append("consumer connection lost")
        self.done.set()  # fail now rather than at the deadline


def nodelay(connection: stomp.Connection12) -> None:
    connection.transport.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def percentiles_ms(samples_ns: list[int]) -> dict[str, float]:
    """Nearest-rank percentiles over every sample."""
    ordered = sorted(samples_ns)

    def rank(q: float) -> float:
        return ordered[max(0, math.ceil(q * len(ordered)) - 1)] / 1e6

    return {"p50": rank(0.5), "p90": rank(0.9), "p99": rank(0.99), "p999": rank(0.999), "max": ordered[-1] / 1e6}


def run(options: argparse.Namespace) -> dict[str, Any]:
    host, port, n, rate = options.broker_host, options.broker_port, options.messages, options.rate
    paced = rate > 0
    deadline = Deadline(options.timeout, f"raw stomp.py{' paced' if paced else ''}, {n} messages")
    body = bytes(_BODY_ALPHABET[i % len(_BODY_ALPHABET)] for i in range(options.size))

    consumer = stomp.Connection12([(host, port)])
    counter = Counter(n, timed=paced)
    consumer.set_listener("count", counter)
    producer = stomp.Connection12([(host, port)])
    try:
        consumer.connect(wait=True)
        subscribed = counter.receipts["bench-sub"] = threading.Event()
        consumer.subscribe(options.destination, id="1", ack="auto", receipt="bench-sub")
        if not subscribed.wait(timeout=max(0.0, deadline.left())):
            raise BenchError(f"no RECEIPT for SUBSCRIBE within {options.timeout:g}s")
        producer.connect(wait=True)
        if paced:
            nodelay(consumer)
            nodelay(producer)

        meter = Meter()
        meter.start()
        t0 = time.perf_counter()
        for i in range(n):
            if paced:
                due = t0 + i / rate - time.perf_counter()
                if due > 0:
                    time.sleep(due)
                producer.send(options.destination, body, headers={SENT_HEADER: str(time.time_ns())})
            else:
                producer.send(options.destination, body)
            if i % 1000 == 0:
                deadline.check(f"sent {i}")
        if not counter.done.wait(timeout=max(0.0, deadline.left())):
            raise BenchError(f"consumer got {counter.count} of {n} messages before the deadline ({options.timeout:g}s)")
        meter.stop()
        if counter.errors:
            raise BenchError(f"after {counter.count} of {n} received: {counter.errors[0]}")
        if counter.latencies_ns is None:
            return throughput_result("raw", n, meter, received=counter.count)
        latency = percentiles_ms(counter.latencies_ns)
        return throughput_result("raw-paced", n, meter, received=counter.count, latency_ms=latency)
    except stomp.exception.StompException as error:
        raise BenchError(f"stomp.py: {type(error).__name__} {error}; {counter.count} of {n} received") from None
    finally:
        for connection in (producer, consumer):
            if connection.is_connected():
                connection.disconnect()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--broker-host", required=True)
    parser.add_argument("--broker-port", type=int, required=True)
    parser.add_argument("--destination", required=True)
    parser.add_argument("--messages", type=int, required=True)
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--timeout", type=float, required=True)
    parser.add_argument("--rate", type=float, default=0.0, help="msg/s on a fixed schedule, TCP_NODELAY; 0 = (a)")
    options = parser.parse_args()
    child_main(lambda: run(options))


if __name__ == "__main__":
    main()
