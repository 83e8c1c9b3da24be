"""An in-memory transport for unit tests: a broker played by the test.

``StompClient(config, fire, transport=MemoryTransport())`` connects at once (the transport answers
CONNECT with ``connected``); the test then reads what the client sent from the connection and feeds
frames back (RECEIPT, MESSAGE, ERROR) or drops it, exactly as a broker's bytes would arrive.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from gevent.event import Event
from gevent.queue import Queue

from mqusers.stomp.framing import FrameParser, parse_headers
from mqusers.stomp.seam import ClientConfig, Listener, Unreachable
from mqusers.stomp.wire import Headers

CONNECTED = b"CONNECTED\nversion:1.2\nserver:ActiveMQ/6.1.4\n\n\x00"

Frame = tuple[bytes, Headers, bytes]


def parse(data: bytes) -> Frame:
    """One encoded frame as (command, headers, body)."""
    block, _, rest = data.partition(b"\n\n")
    command, headers = parse_headers(block)
    return command, headers, rest[:-1]


class MemoryConnection:
    """Records every frame the client sends; ``feed`` and ``drop`` play the broker's side."""

    def __init__(self, listener: Listener, headers: Mapping[str, str]):
        self.listener = listener
        #: The CONNECT frame's extra headers (e.g. client-id).
        self.connect_headers = dict(headers)
        self.sent: list[bytes] = []
        self.in_send = False
        self.sends = 0
        self.accepted = 0
        self.closed = False
        self._unsent: Queue[bytes] = Queue()
        self._stalled = False
        self.partitioned = False
        self._accept = 0
        self._ended = Event()
        self._parser = FrameParser(self._dispatch)

    # -- the client's side (the Connection protocol) -------------------------------------------

    def send(self, data: bytes) -> None:
        if self._ended.is_set():
            raise ConnectionResetError("connection closed")
        self.in_send = True
        self.sends += 1
        self.accepted = 0
        try:
            if self._stalled:  # a broker that stopped reading: the send blocks until the connection ends
                self.accepted, self._accept = min(self._accept, len(data)), 0
                self._ended.wait()
                raise ConnectionResetError("connection closed")
            self.sent.append(data)
            self._unsent.put(data)
        finally:
            self.in_send = False

    def peer_unanswered(self) -> bool | None:
        """A stalled broker here still acknowledges (its kernel would); :meth:`partition` says it does not."""
        return self.partitioned

    def partition(self) -> None:
        """The broker's host stops answering: what is sent from now on goes unacknowledged."""
        self.partitioned = True
        self._stalled = True

    def close(self) -> None:
        self.closed = True
        self._end()

    # -- the broker's side ---------------------------------------------------------------------

    def feed(self, data: bytes) -> float:
        """Bytes from the broker: one or more frames, handled as the reader greenlet would; returns
        the pause the client asks of its reader before the next read."""
        self._parser.feed(data, time.time_ns())
        return self.listener.on_read_done()

    def drop(self) -> None:
        """The network or the broker ends the connection."""
        self._end()

    def stall(self, accept: int = 0) -> None:
        """Stop reading: every later send blocks (producer flow control, a frozen broker), the next
        one after the kernel took its first ``accept`` bytes."""
        self._stalled = True
        self._accept = accept

    def next_frame(self, timeout: float = 2.0) -> Frame:
        """The next frame the client sent, waiting for it."""
        return parse(self._unsent.get(timeout=timeout))

    def answer_receipt(self, extra: bytes = b"") -> Frame:
        """Wait for the client's next frame, send its RECEIPT, then ``extra`` in the same read."""
        frame = self.next_frame()
        self.feed(b"RECEIPT\nreceipt-id:%s\n\n\x00%s" % (frame[1][b"receipt"], extra))
        return frame

    def _end(self) -> None:
        if not self._ended.is_set():
            self._ended.set()
            self.listener.on_disconnected()

    def _dispatch(self, command: bytes, headers: Headers, body: bytes, received_ns: int) -> None:
        # As mqusers.stomp.link does: the client first, then CONNECTED to the session.
        if not self.listener.on_frame(command, headers, body, received_ns) and command == b"CONNECTED":
            self.listener.on_connected({k.decode(): v.decode() for k, v in headers.items()})


class MemoryTransport:
    """Opens :class:`MemoryConnection`\\ s. ``connected`` answers CONNECT (None: never answered);
    ``unreachable`` makes every open fail with that reason."""

    def __init__(self, connected: bytes | None = CONNECTED, unreachable: str | None = None):
        self.answer = connected
        self.unreachable = unreachable
        self.connections: list[MemoryConnection] = []

    @property
    def connection(self) -> MemoryConnection:
        """The latest connection."""
        return self.connections[-1]

    def open(self, config: ClientConfig, headers: Mapping[str, str], listener: Listener) -> MemoryConnection:
        if self.unreachable is not None:
            raise Unreachable(self.unreachable)
        connection = MemoryConnection(listener, headers)
        self.connections.append(connection)
        if self.answer is not None:
            connection.feed(self.answer)
        return connection
