"""A broker's WebSocket endpoint played by the test over a real local socket (TCP, or TLS): the upgrade
answered (or refused), then STOMP's bytes read from and written in WebSocket messages as the test says.

The server side of the protocol is wsproto's, on :class:`tests.unit.socket_peer.Peer`'s socket; the
messages the client sent are kept apart, so a test can say how its bytes were framed.
"""

from __future__ import annotations

from pathlib import Path

import gevent
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Event,
    Message,
    Ping,
    Pong,
    RejectConnection,
    Request,
    TextMessage,
)

from mqusers.options.parsing import parse_broker_url
from mqusers.stomp.seam import ClientConfig
from tests.unit.socket_peer import Peer


class WsPeer:
    """Accepts one connection and its upgrade request; :meth:`accept` (or :meth:`reject`) answers it."""

    def __init__(self, cert: tuple[Path, Path] | None = None, path: str = "/stomp"):
        self.peer = Peer(cert)
        self.port = self.peer.port
        self.path = path
        self.ws = WSConnection(ConnectionType.SERVER)
        self.request: Request | None = None
        #: Each message the client sent, whole (its binary data), in order.
        self.messages: list[bytes] = []
        self.texts: list[str] = []
        self.pongs: list[bytes] = []
        self.close_code: int | None = None
        self._partial = bytearray()

    def url(self, scheme: str = "ws") -> str:
        return f"{scheme}://127.0.0.1:{self.port}{self.path}"

    def config(self, scheme: str = "ws", **fields: object) -> ClientConfig:
        return ClientConfig(parse_broker_url(self.url(scheme)), timeout=5, **fields)  # type: ignore[arg-type]

    @property
    def received(self) -> bytes:
        """The STOMP byte stream the client sent so far."""
        return b"".join(self.messages)

    def _pump(self, timeout: float) -> bool:
        """One read from the socket into events; False when the client closed."""
        with gevent.Timeout(timeout):
            data = self.peer.conn().recv(65536)
        self.ws.receive_data(data or None)
        for event in self.ws.events():
            self._on(event)
        return bool(data)

    def _on(self, event: Event) -> None:
        if isinstance(event, Request):
            self.request = event
        elif isinstance(event, Message):
            self._partial += event.data if isinstance(event, BytesMessage) else event.data.encode()
            if isinstance(event, TextMessage):
                self.texts.append(event.data)
            if event.message_finished:
                self.messages.append(bytes(self._partial))
                self._partial.clear()
        elif isinstance(event, Pong):
            self.pongs.append(bytes(event.payload))
        elif isinstance(event, CloseConnection) and self.close_code is None:  # not the 1006 of the EOF after it
            self.close_code = event.code

    def requested(self, timeout: float = 5.0) -> Request:
        while self.request is None:
            self._pump(timeout)
        return self.request

    def accept(self, subprotocol: str | None = "v12.stomp") -> None:
        self.requested()
        self.peer.send(self.ws.send(AcceptConnection(subprotocol=subprotocol)))

    def reject(self, status: int) -> None:
        self.requested()
        self.peer.send(self.ws.send(RejectConnection(status_code=status)))

    def read_until(self, wanted: bytes, count: int = 1, timeout: float = 5.0) -> bytes:
        """Read until ``wanted`` occurs ``count`` times in the stream; raise when the client closed."""
        while self.received.count(wanted) < count:
            if not self._pump(timeout):
                raise ConnectionResetError(f"closed after {self.received!r}")
        return self.received

    def wait_closed(self, timeout: float = 5.0) -> None:
        """Read until the client closes its end (its close frame, if any, kept in ``close_code``)."""
        while self._pump(timeout):
            pass

    def send(self, *messages: bytes | str) -> None:
        """Each of ``messages`` as one WebSocket message (bytes binary, str text), in one write."""
        self.peer.send(b"".join(self.ws.send(Message(data=m)) for m in messages))

    def ping(self, payload: bytes) -> None:
        self.peer.send(self.ws.send(Ping(payload=payload)))

    def close_ws(self) -> None:
        """The broker's close frame (1000)."""
        self.peer.send(self.ws.send(CloseConnection(code=1000)))

    def close(self) -> None:
        self.peer.close()
