"""A misbehaving STOMP broker for integration tests: one scripted behaviour per peer.

``HostilePeer(behaviour)`` listens on 127.0.0.1 on a free port, in threads of this (test) process.
Every connection gets CONNECTED for its CONNECT; then the behaviour decides what else it gets:

- ``oversized``: a MESSAGE declaring ``content-length:2000000000``, its body streamed in 1 MiB
  chunks for as long as the client reads (at most :data:`STREAM_CHUNKS`).
- ``garbage``: bytes that are no STOMP frame, right after CONNECTED.
- ``no-nul``: RECEIPTs as asked; after the first SUBSCRIBE's RECEIPT, a MESSAGE whose
  content-length is followed by a byte that is not its NUL.
- ``long-header``: a MESSAGE whose header line goes on for 5 MB, right after CONNECTED.
- ``unended``: RECEIPTs as asked until the first SUBSCRIBE's; then the start of a MESSAGE without
  content-length whose NUL never comes, and nothing more.
- ``silent``: reads everything, answers nothing after CONNECTED but DISCONNECT's RECEIPT: a
  SUBSCRIBE is never confirmed, no MESSAGE comes.

It counts the connections it accepted (``connections``) so a test can see a client retrying, and
the SEND frames it read (``sends``).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

BEHAVIOURS = ("oversized", "garbage", "no-nul", "long-header", "unended", "silent")
CONNECTED = b"CONNECTED\nversion:1.2\nserver:HostilePeer/1.0\nheart-beat:0,0\n\n\x00"
#: The 1 MiB chunks an ``oversized`` peer streams at most (a client that never stops reading ends).
STREAM_CHUNKS = 256
GARBAGE = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 this is not STOMP \xff\xfe\n\n\x00"


def _frames(sock: socket.socket) -> Iterator[bytes]:
    """The client's frames, each up to its NUL (mqusers' bodies are printable: no NUL inside)."""
    pending = b""
    while True:
        try:
            data = sock.recv(256 * 1024)
        except OSError:
            return
        if not data:
            return
        pending += data
        *frames, pending = pending.split(b"\x00")
        for frame in frames:
            if frame.strip(b"\r\n"):
                yield frame.lstrip(b"\r\n")


def _receipt(frame: bytes) -> bytes | None:
    head = frame.split(b"\n\n", 1)[0]
    for line in head.split(b"\n")[1:]:
        if line.startswith(b"receipt:"):
            return line[len(b"receipt:") :]
    return None


class HostilePeer:
    def __init__(self, behaviour: str):
        assert behaviour in BEHAVIOURS, behaviour
        self.behaviour = behaviour
        self.connections = 0
        self.sends = 0
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self.url = f"stomp://127.0.0.1:{self.port}"
        self._closing = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._closing.set()
        with contextlib.suppress(OSError):
            self._server.close()

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                sock, _ = self._server.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        with contextlib.suppress(OSError), sock:
            frames = _frames(sock)
            if not next(frames, b"").startswith((b"CONNECT", b"STOMP")):
                return
            sock.sendall(CONNECTED)
            if self.behaviour == "oversized":
                self._stream(sock)
            elif self.behaviour == "garbage":
                sock.sendall(GARBAGE)
            elif self.behaviour == "long-header":
                sock.sendall(b"MESSAGE\nsubscription:mq-sub-1\nx-long:" + b"v" * 5_000_000)
            quiet = self.behaviour == "silent"
            for frame in frames:  # until the client closes
                self.sends += frame.startswith(b"SEND")
                receipt = _receipt(frame)
                if receipt is None or (quiet and not (self.behaviour == "silent" and frame.startswith(b"DISCONNECT"))):
                    continue
                sock.sendall(b"RECEIPT\nreceipt-id:%s\n\n\x00" % receipt)
                if self.behaviour == "no-nul" and frame.startswith(b"SUBSCRIBE"):
                    sock.sendall(b"MESSAGE\nsubscription:mq-sub-1\ncontent-length:5\n\nhelloX\n\n")
                if self.behaviour == "unended" and frame.startswith(b"SUBSCRIBE"):
                    sock.sendall(b"MESSAGE\nsubscription:mq-sub-1\ndestination:/topic/x\n\nhello, and then")
                    quiet = True

    def _stream(self, sock: socket.socket) -> None:
        sock.sendall(b"MESSAGE\nsubscription:mq-sub-1\ndestination:/topic/x\ncontent-length:2000000000\n\n")
        chunk = b"z" * (1024 * 1024)
        for _ in range(STREAM_CHUNKS):
            if self._closing.is_set():
                return
            sock.sendall(chunk)
