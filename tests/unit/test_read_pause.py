"""A backlog read in bulk: the reader pauses between reads only while deliveries arrive already late.

The client decides (over the in-memory transport); the transport's reader honours the pause, read
by read, on a socket pair the test writes (each pause recorded, not waited). What the pauses do to
latency and throughput over real TCP is timed by ``python -m benchmarks.read_pause``.
"""

import socket
import time

import gevent
import pytest
from gevent.event import Event

from mqusers.stomp import link
from mqusers.stomp.link import Link
from mqusers.stomp.receiver import RECEIVE_BEHIND_US, Receiver
from mqusers.stomp.seam import Listener
from mqusers.stomp.session import BEHIND_PAUSE_S
from mqusers.stomp.wire import Headers
from tests.unit.fake_client import connected, deliver, environment, message

LATE_NS = (RECEIVE_BEHIND_US + 1000) * 1000


@pytest.mark.parametrize(
    ("ack", "sent_ago_ns", "pause"),
    [("auto", LATE_NS, BEHIND_PAUSE_S), ("auto", 0, 0.0), ("client-individual", LATE_NS, 0.0)],
    ids=["late-auto", "fresh", "late-but-acked"],
)
def test_only_late_deliveries_without_acks_let_the_reader_pause(ack: str, sent_ago_ns: int, pause: float) -> None:
    # With acks the broker waits for ours before it sends more: a pause would throttle it.
    client, connection = connected(environment())
    client.route("s", Receiver(client, "/queue/a", ack, run_id="run"))
    late = message(b"m", time.time_ns() - sent_ago_ns, ack=b"a1")[:2]
    assert deliver(connection, late) == pause
    assert deliver(connection, message(b"m", time.time_ns(), ack=b"a2")[:2]) == 0.0  # caught up: eager again


def test_no_pause_while_a_receipt_is_awaited() -> None:
    client, connection = connected(environment())
    client.route("s", Receiver(client, "/queue/a", "auto", run_id="run"))
    waiting = gevent.spawn(client.frame_with_receipt, "subscribe /queue/b", "SUBSCRIBE", {"destination": "/queue/b"})
    connection.next_frame()  # the SUBSCRIBE is out: its RECEIPT is now timed
    assert deliver(connection, message(b"m", time.time_ns() - LATE_NS)[:2]) == 0.0
    waiting.kill()


class Paused:
    """Stands in for ``gevent`` in :mod:`mqusers.stomp.link`: each pause the reader takes is recorded
    (and not waited); spawning is gevent's own."""

    spawn = staticmethod(gevent.spawn)
    Greenlet = gevent.Greenlet

    def __init__(self) -> None:
        self.pauses: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        gevent.sleep(0)


class Reader:
    """A :class:`Link` reading one end of a socket pair whose other end the test writes."""

    def __init__(self, pause_s: float, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paused = Paused()
        monkeypatch.setattr(link, "gevent", self.paused)
        self.frames: list[int] = []  # each MESSAGE's body length
        self.reads = 0
        self.read = Event()  # set after each read, once the reader asked for its pause
        ours, self.peer = socket.socketpair()

        def on_frame(command: bytes, headers: Headers, body: bytes, received_ns: int) -> bool:
            self.frames.append(len(body))
            return command == b"MESSAGE"

        def on_read_done() -> float:
            self.reads += 1
            self.read.set()
            return pause_s

        listener = Listener(on_frame, lambda headers: None, lambda: None, on_read_done, lambda _: None)
        self.link = Link(ours, listener, (0, 0), max_frame=1 << 20, unended_s=10.0)
        self.link.start()

    def write(self, *bodies: bytes) -> None:
        """MESSAGE frames in one write; returns once the reader has read them and asked its pause."""
        self.read.clear()
        self.peer.sendall(b"".join(b"MESSAGE\ncontent-length:%d\n\n%s\x00" % (len(b), b) for b in bodies))
        assert self.read.wait(timeout=10), "the reader did not read"

    def end(self) -> None:
        self.peer.close()
        assert self.link.reader is not None and self.link.reader.join(timeout=10) is None


def test_the_reader_pauses_as_asked_after_each_small_read(monkeypatch: pytest.MonkeyPatch) -> None:
    reader = Reader(BEHIND_PAUSE_S, monkeypatch)
    for n in range(3):
        reader.write(b"x" * 100, b"y" * (100 + n))  # two frames, one read
    reader.end()
    assert reader.reads == 3 and reader.paused.pauses == [BEHIND_PAUSE_S] * 3
    assert reader.frames == [100, 100, 100, 101, 100, 102]


def test_no_pause_asked_is_no_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    reader = Reader(0.0, monkeypatch)
    reader.write(b"x" * 100)
    reader.write(b"x" * 100)
    reader.end()
    assert reader.reads == 2 and reader.paused.pauses == []


def test_a_big_read_is_not_paused_so_large_messages_are_not_throttled(monkeypatch: pytest.MonkeyPatch) -> None:
    # A pause after every read would cap a reader at a socket buffer per pause (~180 MB/s at 1 ms):
    # a read of 16 KB or more goes on. How long the reads take is benchmarks/read_pause.py's.
    reader = Reader(0.05, monkeypatch)
    reader.write(b"x" * 100)  # small: paused
    reader.write(b"y" * 64 * 1024)  # one read of 64 KB: not paused
    reader.end()
    assert (reader.reads, reader.frames, reader.paused.pauses) == (2, [100, 64 * 1024], [0.05])
