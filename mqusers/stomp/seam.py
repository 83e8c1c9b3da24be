"""The seam between :class:`mqusers.stomp.client.StompClient` and the bytes: what a transport must offer.

In the spirit of httpx's ``transport=``: the client decides what to send and what the answers mean;
a :class:`Transport` opens a :class:`Connection` that moves frames. The default is
:class:`mqusers.stomp.transport.StompTransport` (mqusers' own sockets, :mod:`mqusers.stomp.link`);
tests plug in an in-memory one.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from mqusers.errors import MqusersError
from mqusers.options.parsing import MAX_FRAME_DEFAULT, BrokerAddress
from mqusers.stomp.wire import Headers

#: ``on_frame(command, headers, body, received_ns)`` returns True when it consumed the frame.
FrameTaker = Callable[[bytes, Headers, bytes, int], bool]


@dataclass(frozen=True)
class ClientConfig:
    address: BrokerAddress
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    vhost: str = "/"
    heartbeats: tuple[int, int] = (0, 0)
    timeout: float = 10.0
    dialect: str = "auto"
    #: Stable identity for durable subscriptions (CONNECT ``client-id``), else None.
    client_id: str | None = None
    #: CA bundle to verify a stomp+ssl broker; None uses the system's trusted CAs.
    ca_file: str | None = None
    #: A client certificate (PEM) for brokers that ask for one, and its key (None: in the same file).
    cert_file: str | None = None
    key_file: str | None = None
    #: The largest frame read from the broker (``--mq-max-frame``).
    max_frame: int = MAX_FRAME_DEFAULT

    def __post_init__(self) -> None:
        if self.address.websocket:
            # Loaded with the config, not inside the first timed connect (stomp/transport.py imports it there):
            # wsproto and h11 are a fifth of mqusers' import time, and only ws:// needs them.
            importlib.import_module("mqusers.stomp.websocket")


@dataclass(frozen=True)
class Listener:
    """What a connection reports, from its reader, to the client that opened it."""

    #: Every frame from the broker, first; frames it does not take (CONNECTED...) the transport handles.
    on_frame: FrameTaker
    #: The CONNECTED frame's headers: the session is up.
    on_connected: Callable[[Mapping[str, str]], None]
    #: The connection ended, whoever ended it (the broker, the network or :meth:`Connection.close`).
    on_disconnected: Callable[[], None]
    #: The frames of one read from the socket have all gone to ``on_frame``; returns the seconds the
    #: reader may wait before its next read (0: at once).
    on_read_done: Callable[[], float]
    #: What the broker sent is not STOMP (the message says what); the connection is then dropped.
    on_protocol_error: Callable[[str], None]


class Unreachable(MqusersError):
    """No host of the broker address answered; the message says why, in a few words."""


class Connection(Protocol):
    """One open connection. ``in_send`` and ``sends`` let the health monitor see a blocked send."""

    @property
    def in_send(self) -> bool: ...

    @property
    def sends(self) -> int: ...

    def peer_unanswered(self) -> bool | None:
        """True while the broker's host acknowledges nothing sent (a partition, a dead host); None: unknown."""

    @property
    def accepted(self) -> int:
        """Bytes of a write that failed or was interrupted that the kernel took before: they may still
        reach the broker."""

    def send(self, data: bytes) -> None:
        """Write encoded frames; raise :class:`OSError` when the connection is gone, or when an earlier
        write ended mid-frame."""

    def close(self) -> None:
        """Close at once, without DISCONNECT; ``on_disconnected`` follows."""


class Transport(Protocol):
    def open(self, config: ClientConfig, headers: Mapping[str, str], listener: Listener) -> Connection:
        """Connect and send CONNECT with ``headers`` (besides login, passcode, host and heart-beat).

        Return without waiting for CONNECTED: it (or an ERROR) reaches ``listener``. Raise
        :class:`Unreachable` when no host accepts the connection.
        """
