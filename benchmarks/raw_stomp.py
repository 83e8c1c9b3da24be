"""(a) The baseline: plain stomp.py 9.0 under gevent, one producer and one consumer connection.

Run by :mod:`benchmarks.core` in its own process; prints one ``BENCH-RESULT {json}`` line.
stomp.py is used as its documentation shows: ``Connection12``, a listener counting ``on_message``,
``send()`` in a loop, default options (auto-decode, no TCP_NODELAY).
"""

from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402
import threading  # noqa: E402  (patched: a gevent Event)
from typing import Any  # noqa: E402

import stomp  # noqa: E402

from benchmarks.common import BenchError, Deadline, Meter, child_main, throughput_result  # noqa: E402

_BODY_ALPHABET = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


class Counter(stomp.ConnectionListener):  # type: ignore[misc]
    def __init__(self, expected: int):
        self.expected = expected
        self.count = 0
        self.done = threading.Event()
        self.receipts: dict[str, threading.Event] = {}
        self.errors: list[str] = []

    def on_message(self, frame: Any) -> None:
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


def run(options: argparse.Namespace) -> dict[str, Any]:
    host, port, n = options.broker_host, options.broker_port, options.messages
    deadline = Deadline(options.timeout, f"raw stomp.py, {n} messages")
    body = bytes(_BODY_ALPHABET[i % len(_BODY_ALPHABET)] for i in range(options.size))

    consumer = stomp.Connection12([(host, port)])
    counter = Counter(n)
    consumer.set_listener("count", counter)
    producer = stomp.Connection12([(host, port)])
    try:
        consumer.connect(wait=True)
        subscribed = counter.receipts["bench-sub"] = threading.Event()
        consumer.subscribe(options.destination, id="1", ack="auto", receipt="bench-sub")
        if not subscribed.wait(timeout=max(0.0, deadline.left())):
            raise BenchError(f"no RECEIPT for SUBSCRIBE within {options.timeout:g}s")
        producer.connect(wait=True)

        meter = Meter()
        meter.start()
        for i in range(n):
            producer.send(options.destination, body)
            if i % 1000 == 0:
                deadline.check(f"sent {i}")
        if not counter.done.wait(timeout=max(0.0, deadline.left())):
            raise BenchError(f"consumer got {counter.count} of {n} messages before the deadline ({options.timeout:g}s)")
        meter.stop()
        if counter.errors:
            raise BenchError(f"after {counter.count} of {n} received: {counter.errors[0]}")
        return throughput_result("raw", n, meter, received=counter.count)
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
    options = parser.parse_args()
    child_main(lambda: run(options))


if __name__ == "__main__":
    main()
