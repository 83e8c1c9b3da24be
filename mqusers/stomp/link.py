"""One open STOMP socket: frames written as given, a reader greenlet cutting what arrives, heart-beats, close.

The per-message path: pre-encoded frames (:mod:`mqusers.stomp.wire`) go straight to the socket, and
what arrives is cut by :class:`mqusers.stomp.framing.FrameParser` and offered to the listener's
``on_frame`` first. Of the frames it leaves, CONNECTED starts the negotiated heart-beats and tells
the listener; an ERROR before CONNECTED (the broker refusing the connection, which the listener
has already seen) closes the socket. :class:`Link` is a :class:`mqusers.stomp.seam.Connection`.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import Protocol

import gevent

from mqusers.stomp.framing import FrameParser, ProtocolError
from mqusers.stomp.heartbeats import BEAT, HeartBeats, negotiate
from mqusers.stomp.seam import Listener
from mqusers.stomp.tcpinfo import unanswered
from mqusers.stomp.wire import Headers

_RECV_BYTES = 256 * 1024
#: A read this big goes on at once whatever the client asks: a pause per read would cap large
#: messages at a socket buffer per pause (~180 MB/s), and their wake-ups cost little per byte.
_PAUSE_BELOW_BYTES = 16 * 1024


class Stream(Protocol):
    """What a link uses of its socket: a connected (TLS-wrapped) socket, or a
    :class:`mqusers.stomp.websocket.WebSocketStream` on one."""

    def send(self, data: bytes | memoryview, /) -> int: ...
    def recv(self, size: int, /) -> bytes: ...
    def getsockopt(self, level: int, option: int, buflen: int, /) -> bytes: ...
    def shutdown(self, how: int, /) -> None: ...
    def close(self) -> None: ...


class Link:
    """``sock`` is connected (TLS-wrapped, upgraded to a WebSocket) and has sent CONNECT asking
    ``heartbeats``; :meth:`start` spawns the reader. ``on_disconnected`` follows once, whoever ends the connection."""

    def __init__(self, sock: Stream, listener: Listener, heartbeats: tuple[int, int], max_frame: int, unended_s: float):
        self._sock = sock
        #: A frame begun and then left without another byte this long is a protocol error, not a wait forever.
        self._unended_s = unended_s
        self._listener = listener
        self._asked = heartbeats
        self._parser = FrameParser(self._dispatch, max_frame)
        # A plain lock: gevent's sendall asks the kernel for SO_SNDBUF each call; one send() mostly suffices.
        self._send_lock = threading.Lock()
        self._connected = False
        self._beats: HeartBeats | None = None
        self._reader: gevent.Greenlet | None = None
        #: When the last bytes arrived (monotonic): the heart-beat watcher's clock.
        self.last_read = time.monotonic()
        #: Read by the health monitor: a send in progress whose count does not move is blocked.
        self.in_send = False
        self.sends = 0
        #: Bytes of the current (or the last failed) write the kernel took.
        self.accepted = 0
        #: A write ended mid-frame: nothing more may be written on this connection.
        self.torn = False

    def start(self) -> None:
        self._reader = gevent.spawn(self._read)

    @property
    def reader(self) -> gevent.Greenlet | None:
        """The reader greenlet: it has ended once the connection is over."""
        return self._reader

    # -- writing -------------------------------------------------------------------------------

    def send(self, data: bytes) -> None:
        with self._send_lock:
            self.in_send = True
            self.sends += 1
            self.accepted = 0
            try:
                if self.torn:
                    raise OSError("an interrupted write left a frame half-written")
                self.accepted = self._sock.send(data)
                if self.accepted < len(data):
                    rest = memoryview(data)
                    while self.accepted < len(rest):  # counted here: a failure must say how much went
                        self.accepted += self._sock.send(rest[self.accepted :])
            except BaseException:
                # What the kernel took still reaches the broker (closing sends it before the FIN); a
                # frame cut short must not be followed by another, which the broker would read as its rest.
                self.torn = self.torn or 0 < self.accepted < len(data)
                raise
            finally:
                self.in_send = False

    def peer_unanswered(self) -> bool | None:
        """The broker's host leaves what was sent unacknowledged (:func:`mqusers.stomp.tcpinfo.unanswered`)."""
        return unanswered(self._sock)

    def _beat(self) -> None:
        # While a frame is being written no beat is needed, and waiting behind a send the broker
        # stopped reading would only pile up: the watcher ends that send by closing.
        if not self._send_lock.locked():
            with self._send_lock:
                self._sock.send(BEAT)

    # -- closing -------------------------------------------------------------------------------

    def close(self) -> None:
        """Close at once, without DISCONNECT: the reader greenlet then ends and reports the drop."""
        beats, self._beats = self._beats, None
        if beats is not None:
            beats.stop()
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._sock.close()

    # -- the reader greenlet -------------------------------------------------------------------

    def _read(self) -> None:
        sock, parser, listener = self._sock, self._parser, self._listener
        try:
            while True:
                data: bytes | None = None
                try:
                    if parser.pending:  # a frame begun: its rest must come, not be waited for for ever
                        with gevent.Timeout(self._unended_s, False):  # this read only, never a send
                            data = sock.recv(_RECV_BYTES)
                        if data is None:
                            listener.on_protocol_error(str(parser.unended(self._unended_s)))
                            return
                    else:
                        data = sock.recv(_RECV_BYTES)
                except ProtocolError as error:  # a WebSocket's frames broken (stomp/websocket.py)
                    listener.on_protocol_error(str(error))
                    return
                except (OSError, ValueError):  # ValueError: a TLS socket shut down by close()
                    return
                if not data:
                    return
                self.last_read = time.monotonic()
                # One clock read per read, not per frame: what was read together arrived together.
                try:
                    parser.feed(data, time.time_ns())
                except ProtocolError as error:
                    # Nothing after bytes that are not STOMP can be trusted: report, then drop.
                    listener.on_protocol_error(str(error))
                    return
                pause = listener.on_read_done()
                if pause and len(data) < _PAUSE_BELOW_BYTES:
                    gevent.sleep(pause)
        finally:
            self.close()
            listener.on_disconnected()

    def _dispatch(self, command: bytes, headers: Headers, body: bytes, received_ns: int) -> None:
        if self._listener.on_frame(command, headers, body, received_ns):
            return
        if command == b"CONNECTED" and not self._connected:
            self._connected = True
            intervals = negotiate(self._asked, headers.get(b"heart-beat"))
            if intervals != (0, 0):  # a broker silent for longer than agreed is gone: close
                self._beats = HeartBeats(intervals, self._beat, lambda: self.last_read, self.close)
            # CONNECTED's values are not escaped (STOMP 1.2).
            self._listener.on_connected({k.decode("utf-8", "replace"): v.decode("utf-8", "replace")
                                         for k, v in headers.items()})  # fmt: skip
        elif command == b"ERROR" and not self._connected:
            self.close()  # the broker refused CONNECT (the listener has its message) and closes too
