"""A backlog read in bulk: the reader pauses between reads only while deliveries arrive already late.

The client decides (over the in-memory transport); the transport honours the pause over a real TCP
socket, against a writer process whose own clock says when each frame was written.
"""

import statistics
import subprocess
import sys
import time

import gevent
import pytest
from gevent.event import Event

from mqusers import Receiver
from mqusers.options.parsing import parse_broker_url
from mqusers.stomp.connection import ClientConfig, Listener
from mqusers.stomp.receiver import RECEIVE_BEHIND_US
from mqusers.stomp.session import BEHIND_PAUSE_S
from mqusers.stomp.transport import StompTransport
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


#: Writes CONNECTED, then FRAMES MESSAGE frames of SIZE bytes one every GAP_US (0: as fast as it
#: can), each stamped with its write time.
WRITER = """
import socket, sys, time
FRAMES, GAP_US, SIZE = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
server = socket.create_server(("127.0.0.1", 0))
print(server.getsockname()[1], flush=True)
server.settimeout(10)
conn, _ = server.accept()
conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
conn.recv(4096)
conn.sendall(b"CONNECTED\\nversion:1.2\\n\\n\\x00")
due = time.perf_counter()
for _ in range(FRAMES):
    due += GAP_US / 1e6
    while time.perf_counter() < due:
        pass
    conn.sendall(b"MESSAGE\\nwritten-ns:%d\\ncontent-length:%d\\n\\n%s\\x00" % (time.time_ns(), SIZE, b"x" * SIZE))
conn.settimeout(10)
conn.recv(4096)
"""


def read_from_writer(
    pause_s: float, frames: int = 1500, gap_us: int = 100, size: int = 100
) -> tuple[int, list[float], float]:
    """(socket reads, each frame's receive stamp minus its write time in ms, seconds from the first
    frame's receive stamp to the last's) with this pause asked after every read."""
    command = [sys.executable, "-c", WRITER, str(frames), str(gap_us), str(size)]
    writer = subprocess.Popen(command, stdout=subprocess.PIPE)
    try:
        assert writer.stdout is not None
        port = int(writer.stdout.readline())
        delays: list[float] = []
        stamps: list[int] = []
        reads = 0
        answered, everything = Event(), Event()

        def on_frame(command: bytes, headers: Headers, body: bytes, received_ns: int) -> bool:
            if command != b"MESSAGE":
                return False
            delays.append((received_ns - int(headers[b"written-ns"])) / 1e6)
            stamps.append(received_ns)
            if len(delays) == frames:
                everything.set()
            return True

        def on_read_done() -> float:
            nonlocal reads
            reads += 1
            return pause_s

        config = ClientConfig(parse_broker_url(f"stomp://127.0.0.1:{port}"), timeout=5)
        listener = Listener(on_frame, lambda headers: answered.set(), lambda: None, on_read_done, lambda _: None)
        connection = StompTransport().open(config, {}, listener)
        with gevent.Timeout(20):
            answered.wait()
            everything.wait()
        connection.close()
        return reads, delays, (stamps[-1] - stamps[0]) / 1e9
    finally:
        writer.kill()
        writer.wait()


def test_the_transport_pauses_as_asked_and_stamps_stay_within_the_pause() -> None:
    eager_reads, eager, _ = read_from_writer(0.0)
    paused_reads, paused, _ = read_from_writer(BEHIND_PAUSE_S)
    # 1,500 frames over ~150 ms: ~1 read per millisecond when pausing, many more when not.
    assert paused_reads <= 400 and eager_reads >= 3 * paused_reads, (eager_reads, paused_reads)
    # A frame waits at most the pause (plus the timer's slack) in the kernel before it is stamped.
    assert statistics.median(paused) <= 2 * BEHIND_PAUSE_S * 1e3 and max(paused) <= 20, sorted(paused)[-5:]
    assert statistics.median(eager) <= statistics.median(paused)


def test_big_reads_are_not_paused_so_large_messages_are_not_throttled() -> None:
    # A pause after every read would cap a reader at a socket buffer per pause (~180 MB/s at 1 ms
    # measured here with 100 KB messages, against ~2 GB/s eager): a read of 16 KB or more goes on.
    reads, _, span_s = read_from_writer(0.05, frames=200, gap_us=0, size=64 * 1024)
    assert span_s < 0.5, (reads, span_s)  # 12.8 MB: at one 256 KB read per 50 ms pause, over 2 s
