"""STOMP over WebSocket (ws://, wss://): the HTTP upgrade on a dialled socket, then STOMP's bytes in WebSocket messages.

wsproto (sans-IO) frames and unframes on mqusers' own socket, so gevent's cooperative reads and writes,
TLS (:mod:`mqusers.stomp.tls`) and the connect timeout are the plain transport's. :class:`WebSocketStream`
offers :class:`mqusers.stomp.link.Link` what it uses of a socket, so the frame path above is the one
of plain STOMP: each write of encoded frames (:mod:`mqusers.stomp.wire`) goes out as one message per
frame (text, binary when a body is not UTF-8) in one socket write, and what messages carry is handed
to :mod:`mqusers.stomp.framing` as one byte stream (a STOMP frame may span messages, or share one
with others). See ARCHITECTURE.md ("STOMP over WebSocket").
"""

from __future__ import annotations

import contextlib
import socket
import threading
from dataclasses import dataclass

from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Event,
    Ping,
    RejectConnection,
    Request,
    TextMessage,
)
from wsproto.utilities import ProtocolError as WsProtocolError

from mqusers.errors import MqusersError
from mqusers.stomp.framing import ProtocolError

#: Close codes that say the frames were broken (protocol error, unacceptable or invalid data, too big).
_BROKEN = {1002, 1003, 1007, 1009}
#: STOMP 1.2 over WebSocket (the name RabbitMQ, ActiveMQ and Artemis all accept); mqusers speaks 1.2.
SUBPROTOCOLS = ["v12.stomp"]
_HANDSHAKE_READ = 16 * 1024


class UpgradeRefused(MqusersError, OSError):
    """The WebSocket upgrade failed; the message says why in a few words (the transport keeps it per host)."""


def upgrade(sock: socket.socket, host: str, port: int, path: str) -> WebSocketStream:
    """Ask ``sock`` (connected, TLS-wrapped for wss) to become a WebSocket at ``path``; each read is bounded
    by the socket's timeout (the client's connect timeout)."""
    ws = WSConnection(ConnectionType.CLIENT)
    sock.sendall(ws.send(Request(host=f"{host}:{port}", target=path, subprotocols=SUBPROTOCOLS)))
    while True:
        data = sock.recv(_HANDSHAKE_READ)
        if not data:
            raise UpgradeRefused(f"WebSocket: the broker closed the connection instead of upgrading {path}")
        try:
            ws.receive_data(data)
            events = list(ws.events())
        except WsProtocolError as error:
            raise UpgradeRefused(f"WebSocket: no HTTP upgrade at {path} ({error}); is it a WebSocket port?") from None
        for index, event in enumerate(events):
            if isinstance(event, RejectConnection):
                raise UpgradeRefused(f"WebSocket: the broker answered HTTP {event.status_code} to {path}")
            if isinstance(event, AcceptConnection):
                stream = WebSocketStream(sock, ws)
                stream.take(events[index + 1 :])  # what came with the answer
                return stream


@dataclass(frozen=True)
class _Cut:
    written: int
    error: OSError


def split_frames(data: bytes) -> list[bytes]:
    """``data``, frames mqusers encoded (:mod:`mqusers.stomp.wire`), cut into its frames: one message each,
    as ActiveMQ Classic reads only the first frame of a message (a read's ACKs in one message left all
    but the first unacknowledged). A body is content-length long where the header says so, else up to
    its NUL; a heart-beat's EOL is a message of its own."""
    if data.count(b"\x00") == 1 and data.endswith(b"\x00"):
        return [data]  # the per-message path: one frame, its body without a NUL
    frames, start, size = [], 0, len(data)
    while start < size:
        if data[start] in b"\r\n":
            end = start + (2 if data.startswith(b"\r\n", start) else 1)
        else:
            head = data.find(b"\n\n", start)
            if head < 0:
                frames.append(data[start:])
                break
            length = data.find(b"\ncontent-length:", start, head)
            if length >= 0:
                value = length + len(b"\ncontent-length:")
                end = head + 3 + int(data[value : data.index(b"\n", value)])
            else:
                nul = data.find(b"\x00", head + 2)
                end = size if nul < 0 else nul + 1
        frames.append(data[start:end])
        start = end
    return frames


def _message(frame: bytes) -> TextMessage | BytesMessage:
    try:
        # Text: ActiveMQ Classic reads no binary message (it drops them), every broker reads text.
        return TextMessage(data=frame.decode("utf-8"))
    except UnicodeDecodeError:  # bodies that are not UTF-8 (--mq-payload random) can only go binary
        return BytesMessage(data=frame)


class WebSocketStream:
    """One upgraded connection as a byte stream: ``send`` writes a message per frame, ``recv`` returns what
    the messages of one socket read carried (waiting out reads that completed no frame)."""

    def __init__(self, sock: socket.socket, ws: WSConnection):
        self._sock = sock
        self._ws = ws
        self._pending = b""
        #: The broker's close frame arrived (or ours went): reads end once what came before is handed on.
        self._closed = False
        #: Why the frames were broken (wsproto's or the broker's words): :meth:`recv` raises it.
        self._broken: str | None = None
        # The link serializes its own writes; the reader's pongs and close replies come between them.
        self._lock = threading.Lock()
        self._torn = False

    # -- writing -------------------------------------------------------------------------------

    def send(self, data: bytes | memoryview, /) -> int:
        """``data``'s frames, one message each, in one write; returns the bytes of the frames whose
        messages went whole (a message cut short never reaches STOMP), or raises when none did."""
        frames = split_frames(bytes(data))
        try:
            messages = [self._ws.send(_message(frame)) for frame in frames]
        except WsProtocolError:  # a close frame went or came: the connection is going
            raise OSError("the WebSocket is closing") from None
        with self._lock:
            sent = self._write(messages[0] if len(messages) == 1 else b"".join(messages))
        if sent is None:
            return len(data)
        whole, taken = 0, 0
        for frame, message in zip(frames, messages, strict=True):
            if taken + len(message) > sent.written:
                break
            taken += len(message)
            whole += len(frame)
        self._torn = taken < sent.written
        if whole == 0:
            raise sent.error
        return whole  # the link's next write of the rest meets the same error

    def _write(self, buffer: bytes) -> _Cut | None:
        """None when all of ``buffer`` went; else how much did, and why not the rest."""
        if self._torn:
            raise OSError("an interrupted write left a WebSocket frame half-written")
        view, written = memoryview(buffer), 0
        try:
            while written < len(view):
                written += self._sock.send(view[written:])
        except OSError as error:
            return _Cut(written, error)
        except BaseException:
            self._torn = self._torn or written > 0
            raise
        return None

    def _reply(self, event: Event) -> None:
        with self._lock, contextlib.suppress(OSError):
            if self._write(self._ws.send(event)) is not None:
                self._torn = True

    # -- reading -------------------------------------------------------------------------------

    def recv(self, size: int, /) -> bytes:
        while not self._pending:
            if self._broken is not None:
                raise ProtocolError(f"WebSocket: {self._broken}")
            if self._closed:
                return b""
            data = self._sock.recv(size)
            if not data:
                return b""
            try:
                self._ws.receive_data(data)
            except WsProtocolError:  # both close frames went: what follows is not the connection's
                return b""
            self.take(list(self._ws.events()))
        data, self._pending = self._pending, b""
        return data

    def take(self, events: list[Event]) -> None:
        """Keep what ``events`` carried for :meth:`recv`; answer pings and the broker's close."""
        chunks = [self._pending]
        for event in events:
            if isinstance(event, BytesMessage):
                chunks.append(bytes(event.data))
            elif isinstance(event, TextMessage):  # RabbitMQ's default: UTF-8 text, as STOMP's own bytes
                chunks.append(event.data.encode("utf-8"))
            elif isinstance(event, Ping):
                self._reply(event.response())
            elif isinstance(event, CloseConnection):  # the broker's, or wsproto's on frames it cannot parse
                if not self._closed:
                    self._reply(event.response())
                self._closed = True
                if event.code in _BROKEN:
                    self._broken = f"closed with code {int(event.code)}: {event.reason or 'no reason given'}"
        self._pending = b"".join(chunks)

    # -- closing -------------------------------------------------------------------------------

    def getsockopt(self, level: int, option: int, buflen: int, /) -> bytes:
        return self._sock.getsockopt(level, option, buflen)

    def shutdown(self, how: int, /) -> None:
        """A close frame first when no write is under way (a blocked one is why the link closes), then the socket's."""
        if not self._closed and self._lock.acquire(blocking=False):
            try:
                self._closed = True
                self._sock.settimeout(0)  # never wait on a broker that stopped reading
                with contextlib.suppress(OSError, WsProtocolError):
                    self._write(self._ws.send(CloseConnection(code=1000)))
            finally:
                self._lock.release()
        self._sock.shutdown(how)

    def close(self) -> None:
        self._sock.close()
