"""stomp.py as the independent reference client: a connection, a thread-safe inbox of its frames, a thief."""

from __future__ import annotations

import threading
import time
import zlib
from typing import Any

import stomp

from tests.integration.broker_stats import wait_for
from tests.integration.brokers import Broker


class Inbox(stomp.ConnectionListener):  # type: ignore[misc]
    """Thread-safe collector of MESSAGE frames."""

    def __init__(self) -> None:
        self.frames: list[Any] = []
        self.receipts: set[str] = set()
        self._lock = threading.Lock()

    def on_message(self, frame: Any) -> None:
        with self._lock:
            self.frames.append(frame)

    def on_receipt(self, frame: Any) -> None:
        self.receipts.add(frame.headers["receipt-id"])

    def __len__(self) -> int:
        with self._lock:
            return len(self.frames)


def connect(port: int, inbox: Inbox | None = None, rabbit: bool = False) -> stomp.Connection12:
    # RabbitMQ reads the host header as the vhost; stomp.py sends the address otherwise.
    conn = stomp.Connection12([("127.0.0.1", port)], heartbeats=(0, 0), vhost="/" if rabbit else None)
    if inbox is not None:
        conn.set_listener("inbox", inbox)
    if rabbit:
        conn.connect("guest", "guest", wait=True)
    else:
        conn.connect(wait=True)
    return conn


def publish_outside(broker: Broker, destination: str, count: int, *, stamped: bool) -> None:
    """Persistent messages from plain stomp.py, not mqusers: an independent producer.

    ``stamped`` gives them mqusers headers of another run ("outside"); otherwise they carry none.
    The last one waits for its RECEIPT, so the broker holds them all on return.
    """
    connection = stomp.Connection12([("127.0.0.1", broker.port)], vhost="/")
    connection.connect(wait=True)  # both local brokers let an anonymous loopback client in
    for seq in range(count):
        body = b"x" * 100 if stamped else f"foreign {seq}".encode()
        headers = {"persistent": "true", **broker.routing("SEND", destination)}
        if stamped:
            headers.update({"mq-run": "outside", "mq-producer": "outside", "mq-seq": str(seq),
                            "mq-sent-ns": str(time.time_ns()), "mq-size": "100",
                            "mq-crc32": str(zlib.crc32(body))})  # fmt: skip
        connection.send(destination, body, headers=headers, receipt=f"r{seq}" if seq == count - 1 else None)
    connection.disconnect(receipt="bye")


def read_left(broker: Broker, queue: str, count: int, timeout: float = 30.0) -> list[Any]:
    """The ``count`` messages a run left on ``queue``, bodies as bytes (binary ones included), by plain stomp.py."""
    connection = stomp.Connection12([("127.0.0.1", broker.port)], vhost="/", auto_decode=False)
    inbox = Inbox()
    connection.set_listener("inbox", inbox)
    connection.connect(wait=True)
    connection.subscribe(queue, id="left", ack="auto", headers=broker.routing("SUBSCRIBE", queue))
    try:
        wait_for(lambda: len(inbox) >= count, timeout)
    finally:
        connection.disconnect()
    assert len(inbox) == count, f"{len(inbox)} of {count} messages read back from {queue}"
    return inbox.frames


class Thief(stomp.ConnectionListener):  # type: ignore[misc]
    """A competing consumer outside mqusers: acknowledges exactly ``limit`` messages, then leaves."""

    def __init__(self, connection: stomp.Connection12, limit: int):
        self.connection, self.limit, self.stolen = connection, limit, 0
        self.done = threading.Event()

    def on_message(self, frame) -> None:  # type: ignore[no-untyped-def]
        if self.stolen < self.limit:
            self.connection.ack(frame.headers["ack"])
            self.stolen += 1
            if self.stolen == self.limit:
                self.done.set()


def read_dead_letters(broker: Broker, dead_letter_queue: str, run_id: str, timeout: float = 20.0) -> list[Any]:
    """Every message of run ``run_id`` on the broker's dead-letter queue, read (and removed) by plain stomp.py.

    The queue is the broker's one for every destination: other runs' dead letters are read and left out. To know
    that all were read, a marker is sent to the queue last and read back: one consumer reads a queue in order.
    """
    connection = stomp.Connection12([("127.0.0.1", broker.port)], vhost="/", heartbeats=(0, 0))
    inbox = Inbox()
    connection.set_listener("inbox", inbox)
    connection.connect(wait=True)
    dlq = dead_letter_queue
    connection.subscribe(dlq, id="dlq", ack="auto", headers=broker.routing("SUBSCRIBE", dlq))
    marker = f"end of {run_id}"
    connection.send(dlq, marker, headers={"persistent": "true", **broker.routing("SEND", dlq)})
    try:
        ended = wait_for(lambda: any(frame.body == marker for frame in list(inbox.frames)), timeout)
    finally:
        connection.disconnect()
    assert ended, f"the marker sent to {dead_letter_queue} did not come back within {timeout} s"
    return [frame for frame in inbox.frames if frame.headers.get("mq-run") == run_id]
