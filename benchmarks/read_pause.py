"""Does the reader's pause read a backlog in bulk, and leave large messages alone? Timed, no broker.

    python -m benchmarks.read_pause [--frames 1500] [--strict]

A writer process sends CONNECTED, then MESSAGE frames each stamped with its own write time, over a
real TCP socket to mqusers' transport (:class:`~mqusers.stomp.transport.StompTransport`), whose
listener asks for a pause after every read. Each figure is printed against its reference measured
in the same run, the same frames read eagerly (no pause):

- **small frames** (100 B every 100 µs), pausing ``BEHIND_PAUSE_S`` (1 ms): eager reads / paused
  reads (target >= 3: the pause batches the backlog) and the paused median write-to-stamp delay
  (target <= 2 pauses; its max <= 20 ms) beside the eager one;
- **large frames** (64 KB back to back), asking a 50 ms pause: paused span / eager span, first
  frame's stamp to the last's (target < 5: a read of 16 KB or more is not paused; a pause per read
  would take 2 s or more for these 12.8 MB).

What the transport does with a pause (one sleep after a small read, none after a big one) is
unit-tested without a clock in tests/unit/test_read_pause.py. Exit status: 0 measured, 1 a target
missed with ``--strict``, 2 the measurement failed.
"""

from __future__ import annotations

import locust  # noqa: F401  (gevent's monkey-patching first)

import argparse
import statistics
import subprocess
import sys
from dataclasses import dataclass

import gevent
from gevent.event import Event

from mqusers.options.parsing import parse_broker_url
from mqusers.stomp.seam import ClientConfig, Listener
from mqusers.stomp.session import BEHIND_PAUSE_S
from mqusers.stomp.transport import StompTransport
from mqusers.stomp.wire import Headers

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


@dataclass(frozen=True)
class Reading:
    reads: int
    delays_ms: list[float]  # each frame's receive stamp minus its write time
    span_s: float  # the first frame's receive stamp to the last's


def read_from_writer(pause_s: float, frames: int, gap_us: int, size: int) -> Reading:
    """The writer's frames read by the transport, with this pause asked after every read."""
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
        with gevent.Timeout(60):
            answered.wait()
            everything.wait()
        connection.close()
        return Reading(reads, delays, (stamps[-1] - stamps[0]) / 1e9)
    finally:
        writer.kill()
        writer.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.read_pause", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--frames", type=int, default=1500, help="small frames per reading (default 1500)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    options = parser.parse_args(argv)
    try:
        eager = read_from_writer(0.0, options.frames, 100, 100)
        paused = read_from_writer(BEHIND_PAUSE_S, options.frames, 100, 100)
        big_eager = read_from_writer(0.0, 200, 0, 64 * 1024)
        big_paused = read_from_writer(0.05, 200, 0, 64 * 1024)
    except (OSError, ValueError, gevent.Timeout) as error:
        print(f"benchmark failed: {error!r}", file=sys.stderr)
        return 2
    batching = eager.reads / paused.reads
    median_ms, max_ms = statistics.median(paused.delays_ms), max(paused.delays_ms)
    slowdown = big_paused.span_s / big_eager.span_s
    checks = [
        (f"small frames: {eager.reads:,} reads eager / {paused.reads:,} paused = {batching:.1f}",
         batching >= 3, ">= 3"),
        (f"  paused delay median {median_ms:.3f} ms (eager {statistics.median(eager.delays_ms):.3f} ms)",
         median_ms <= 2 * BEHIND_PAUSE_S * 1e3, f"<= {2 * BEHIND_PAUSE_S * 1e3:g} ms"),
        (f"  paused delay max {max_ms:.3f} ms", max_ms <= 20, "<= 20 ms"),
        (f"large frames: span paused {big_paused.span_s:.3f} s / eager {big_eager.span_s:.3f} s = {slowdown:.1f}",
         slowdown < 5, "< 5"),
    ]  # fmt: skip
    for text, ok, target in checks:
        print(f"{text:<78} {'PASS' if ok else 'FAIL'} ({target})")
    return 1 if options.strict and not all(ok for _, ok, _ in checks) else 0


if __name__ == "__main__":
    sys.exit(main())
