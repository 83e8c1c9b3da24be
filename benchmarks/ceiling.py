"""Where a message's generator CPU goes, part by part, without a broker: the floor under (b).

    python -m benchmarks.ceiling [--messages 200000]

Three measurements in this process (user+sys CPU from ``getrusage``), each printed per message:

- **receive path**: ActiveMQ-shaped MESSAGE frames (13 headers, 1 KB body, 8 per socket read) fed
  through mqusers' own parser, session routing, :class:`~mqusers.stomp.receiver.Receiver` (run id,
  size and CRC-32 checks, the latency), the audit ledger and the recorder, into the book and
  Locust's stats: everything a delivery costs except reading the socket.
- **send path**: ``publish_many`` 64 messages at a time into a connection that drops the bytes,
  with the ledger and the recorder: everything a send costs except the kernel.
- **one read wake-up**: a forked process writes 2,700 bytes (two messages) every 50 µs into a
  socket pair; a gevent greenlet reads them. The CPU per read is what every wake-up of a reader
  greenlet costs (epoll, the hub's switches, the syscalls, the scheduler), whatever it then does.

A consumer that keeps up with a broker wakes once per one or two messages: divide the wake-up
figure by the messages per read of a run to get its share per message.
"""

from __future__ import annotations

import locust  # noqa: F401  (gevent's monkey-patching first)
from locust.env import Environment
from locust.event import Events

import argparse
import os
import resource
import socket
import time
import zlib
from collections.abc import Callable, Mapping

import gevent

from mqusers.audit.ledgers import SentLedger, Subscription
from mqusers.measure.book import Book
from mqusers.measure.recorder import Recorder
from mqusers.options.parsing import parse_broker_url
from mqusers.stomp.client import StompClient
from mqusers.stomp.framing import FrameParser
from mqusers.stomp.receiver import Receiver
from mqusers.stomp.seam import ClientConfig, Listener
from mqusers.stomp.wire import SendFrames, make_body

RUN, PRODUCER, QUEUE = "0123456789ab", "ab12cd34.BenchProducer.0", "/queue/bench.ceiling"


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class NullConnection:
    """Takes every frame and drops it; ``deliver`` plays the broker's side of one socket read."""

    def __init__(self, listener: Listener):
        self.listener, self.in_send, self.sends = listener, False, 0
        self._parser = FrameParser(lambda c, h, b, t: listener.on_frame(c, h, b, t))

    def send(self, data: bytes) -> None:
        self.sends += 1

    def close(self) -> None:
        self.listener.on_disconnected()

    def deliver(self, data: bytes) -> None:
        self._parser.feed(data, time.time_ns())
        self.listener.on_read_done()


class NullTransport:
    connection: NullConnection

    def open(self, config: ClientConfig, headers: Mapping[str, str], listener: Listener) -> NullConnection:
        self.connection = NullConnection(listener)
        listener.on_connected({"server": "ActiveMQ/5.17.2"})
        return self.connection


def connected_client() -> tuple[StompClient, NullTransport, Recorder]:
    env = Environment(events=Events())
    env.create_local_runner()
    recorder = Recorder(env.events.request.fire)
    book = Book()
    recorder.add_consumer(book.add_batches)
    transport = NullTransport()
    config = ClientConfig(parse_broker_url("stomp://127.0.0.1:1"))
    client = StompClient(config, env.events.request.fire, transport=transport, recorder=recorder)
    client.connect()
    return client, transport, recorder


def message_frame(seq: int, body: bytes, crc: int) -> bytes:
    """What ActiveMQ 5.17 delivers for an mqusers SEND: its headers in its order, ids escaped."""
    head = (
        b"MESSAGE\ncontent-length:%d\nexpires:0\ndestination:%s\nsubscription:mq-sub-1\npriority:4\n"
        b"mq-crc32:%d\nmessage-id:ID\\cgenerator-40001-1764700000000-1\\c1\\c1\\c1\\c%d\nmq-size:%d\n"
        b"mq-producer:%s\nmq-sent-ns:%d\nmq-run:%s\nmq-seq:%d\ntimestamp:1764700000000\n\n"
    ) % (len(body), QUEUE.encode(), crc, seq, len(body), PRODUCER.encode(), time.time_ns(), RUN.encode(), seq)
    return head + body + b"\x00"


def receive_path(messages: int) -> float:
    client, transport, recorder = connected_client()
    receiver = Receiver(client, QUEUE, "auto", run_id=RUN)
    receiver.audit = Subscription("k", QUEUE, "queue", False)
    client.route("mq-sub-1", receiver)
    body = make_body(1024)
    crc = zlib.crc32(body)
    reads = [b"".join(message_frame(seq, body, crc) for seq in range(first, first + 8))
             for first in range(1, messages + 1, 8)]  # fmt: skip
    start = cpu_s()
    for data in reads:
        transport.connection.deliver(data)
    recorder.flush()
    spent = cpu_s() - start
    assert receiver.received == len(reads) * 8
    return spent / receiver.received


def send_path(messages: int) -> float:
    client, _, recorder = connected_client()
    frames = SendFrames(QUEUE, make_body(1024), RUN, PRODUCER, {})
    publisher = client.publisher(QUEUE, frames)
    ledger = SentLedger("p").producer(QUEUE, PRODUCER)
    start = cpu_s()
    for first in range(1, messages + 1, 64):
        client.publish_many(publisher, first, 64)
        ledger.record_run(first, 64, time.time_ns())
    recorder.flush()
    return (cpu_s() - start) / (len(range(1, messages + 1, 64)) * 64)


def read_wakeup(reads: int, every_s: float = 50e-6) -> float:
    """CPU per read of a gevent reader that a peer process wakes every ``every_s``."""
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:  # the writer: no gevent involved, a tight schedule
        ours.close()
        payload, due = b"x" * 2700, time.perf_counter()
        for _ in range(reads):
            theirs.send(payload)
            due += every_s
            while time.perf_counter() < due:
                pass
        theirs.close()
        os._exit(0)
    theirs.close()
    count = 0

    def reader() -> None:
        nonlocal count
        while ours.recv(262144):
            count += 1

    start = cpu_s()
    gevent.spawn(reader).join()
    spent = cpu_s() - start
    os.waitpid(pid, 0)
    return spent / max(1, count)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ceiling", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--messages", type=int, default=200_000, help="messages per path (default 200000)")
    parser.add_argument("--reads", type=int, default=30_000, help="reads for the wake-up figure (default 30000)")
    options = parser.parse_args()
    parts: list[tuple[str, Callable[[], float]]] = [
        ("receive path (parse, check, audit, record; 8 frames per read)", lambda: receive_path(options.messages)),
        ("send path (publish_many x64, ledger, record)", lambda: send_path(options.messages)),
        ("one read wake-up of a gevent reader", lambda: read_wakeup(options.reads)),
    ]
    for label, measure in parts:
        print(f"  {label:<64} {measure() * 1e6:6.2f} CPU-µs", flush=True)


if __name__ == "__main__":
    main()
