"""A TCP relay that delays every byte by a fixed time each way: a long link where the kernel has no netem.

    python -I delayline.py LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT DELAY_MS LIFETIME_S

Each accepted connection gets one to the target; what either side sends reaches the other
``DELAY_MS`` after it was read, in order, as a propagation delay would (no bandwidth limit, no
loss). It prints ``listening`` once it accepts, and exits by itself after ``LIFETIME_S`` s, so a
forgotten relay never outlives its test. Run inside a network namespace (netns.Network.popen), it
puts the delay between that "host" and another: a worker's Locust connects to the relay on its own
loopback, the relay to the master. One-way delay d makes a round trip of 2d.
"""

from __future__ import annotations

import collections
import socket
import sys
import threading
import time

CHUNK = 65536


class Direction:
    """Bytes read from ``source`` and written to ``sink`` ``delay`` s later; EOF passes on the same way."""

    def __init__(self, source: socket.socket, sink: socket.socket, delay: float):
        self.source, self.sink, self.delay = source, sink, delay
        self.pending: collections.deque[tuple[float, bytes]] = collections.deque()
        self.ready = threading.Condition()

    def start(self) -> None:
        threading.Thread(target=self.read, daemon=True).start()
        threading.Thread(target=self.write, daemon=True).start()

    def read(self) -> None:
        while True:
            try:
                data = self.source.recv(CHUNK)
            except OSError:
                data = b""
            with self.ready:
                self.pending.append((time.monotonic() + self.delay, data))
                self.ready.notify()
            if not data:
                return

    def write(self) -> None:
        while True:
            with self.ready:
                while not self.pending:
                    self.ready.wait()
                due, data = self.pending.popleft()
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            try:
                if not data:
                    self.sink.shutdown(socket.SHUT_WR)
                    return
                self.sink.sendall(data)
            except OSError:
                self.source.close()  # the far side is gone: so is this direction's near side
                return


#: How long a connection waits for the target to listen: what its client already sent waits in the socket.
UPSTREAM_WAIT_S = 30.0


def relay(client: socket.socket, target: tuple[str, int], delay: float) -> None:
    # Accepted before the target listens (a worker started beside its master): keep trying, so no byte the
    # client already sent is lost with a closed connection (ZeroMQ does not resend what it wrote).
    deadline = time.monotonic() + UPSTREAM_WAIT_S
    while True:
        try:
            upstream = socket.create_connection(target, timeout=10)
            break
        except OSError:
            if time.monotonic() >= deadline:
                client.close()
                return
            time.sleep(0.05)
    upstream.settimeout(None)
    for sock in (client, upstream):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    Direction(client, upstream, delay).start()
    Direction(upstream, client, delay).start()


def main(argv: list[str]) -> int:
    listen_host, listen_port, target_host, target_port, delay_ms, lifetime_s = argv
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((listen_host, int(listen_port)))
    server.listen(64)
    print("listening", flush=True)
    deadline = time.monotonic() + float(lifetime_s)
    target, delay = (target_host, int(target_port)), float(delay_ms) / 1000
    while (left := deadline - time.monotonic()) > 0:
        server.settimeout(left)
        try:
            client, _ = server.accept()
        except TimeoutError:
            break
        threading.Thread(target=relay, args=(client, target, delay), daemon=True).start()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
