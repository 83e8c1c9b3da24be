"""stomp.py's connection with a lean frame path underneath.

stomp.py keeps doing what it does well: connecting to a failover list, TLS, CONNECT negotiation,
heart-beats and DISCONNECT. Frames on the per-message path skip it: SEND/ACK frames are
pre-encoded by :mod:`mqusers.stomp.wire` and written straight to the socket, and incoming frames are
split by :class:`mqusers.stomp.wire.FrameParser` and offered to ``on_frame`` first. Under gevent,
stomp.py's regex header parser and listener dispatch cost more CPU than the rest of a message's
life together, which would make the generator the bottleneck. Frames ``on_frame`` does not take
(CONNECTED, other RECEIPTs, ERROR) go through stomp.py's own processing unchanged.

:class:`StompTransport` is the client's default :class:`mqusers.stomp.connection.Transport`: the
connection it opens is the :class:`LeanTransport` itself, so a message's send is one call.

The hook overrides ``BaseTransport.__read_frames``, a private method: stomp.py is pinned to 9.0.x
in ``pyproject.toml`` and the integration tests run this path against real brokers.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import gevent
import stomp
from stomp import exception as stomp_exception
from stomp.protocol import Protocol12
from stomp.transport import Transport
from stomp.utils import Frame

from mqusers.stomp.connection import ClientConfig, FrameTaker, Listener, Unreachable
from mqusers.stomp.wire import FrameParser, Headers, ProtocolError

# The client reports connection failures itself, in one line; stomp.py would add a warning per attempt.
logging.getLogger("stomp.py").setLevel(logging.ERROR)

_RECV_BYTES = 256 * 1024
#: A read this big goes on at once whatever the client asks: a pause per read would cap large
#: messages at a socket buffer per pause (~180 MB/s), and their wake-ups cost little per byte.
_PAUSE_BELOW_BYTES = 16 * 1024
#: What stomp.py writes as a heart-beat.
_HEARTBEAT = b"\n"
#: Silence, in receive heart-beat intervals, before the connection counts as dead. ActiveMQ beats
#: only after a whole interval without writing, so 1-2 intervals pass between its frames (1.94 s
#: seen at 1,000 ms): stomp.py's 1.5 dropped idle consumers half the time.
_BEAT_GRACE = 2.5


def _text(value: bytes) -> str:
    return value.decode("utf-8", "replace")


class LeanTransport(Transport):  # type: ignore[misc]
    def __init__(
        self,
        *args: Any,
        on_frame: FrameTaker,
        on_read_done: Callable[[], float],
        on_protocol_error: Callable[[str], None],
        max_frame: int,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        self.on_frame = on_frame
        self.on_read_done = on_read_done
        self.on_protocol_error = on_protocol_error
        self.max_frame = max_frame
        self._parser = FrameParser(self._dispatch, max_frame)
        self._send_lock = threading.Lock()
        #: Read by the health monitor: a send in progress whose count does not move is blocked.
        self.in_send = False
        self.sends = 0
        #: Bytes of the current (or the last failed) write the kernel took.
        self.accepted = 0
        #: A write ended mid-frame: nothing more may be written on this connection.
        self.torn = False
        #: Heart-beats from the broker were asked for: every read must tell stomp.py's monitor.
        self.beats_in = False

    def attempt_connection(self) -> None:
        super().attempt_connection()
        self.torn = False
        sock = self.socket
        if not self.blocking:  # type: ignore[has-type]
            # stomp.py drives TLS sockets non-blocking through selectors and a pipe-backed queue, which
            # fails under gevent ("PollableQueue ... is not registered"); gevent's TLS sockets block
            # cooperatively, so they take the same path as plain ones.
            self.sel.close()
            self.blocking = True
            sock.setblocking(True)
        # stomp.py's timeout should bound the TCP connect only; the receive loop never times out.
        sock.settimeout(None)
        # Nagle's algorithm holds small frames for up to 40 ms: latency figures would measure it.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._parser = FrameParser(self._dispatch, self.max_frame)

    def send(self, encoded_frame: bytes) -> None:
        sock = self.socket
        if sock is None:
            raise ConnectionError("not connected")
        if encoded_frame == _HEARTBEAT and self._send_lock.locked():
            # A frame is being written: no beat is needed, and waiting behind a send the broker stopped
            # reading would keep stomp.py's heart-beat loop from noticing the silence and closing the
            # socket, the one thing that ends that send. Here, not in an override of transmit: stomp.py's
            # on_send bookkeeping must still run, or its heart-beat loop spins without sleeping.
            return
        # A plain lock: stomp.py's BoundedSemaphore yields to gevent's hub on every release, and
        # gevent's sendall asks the kernel for SO_SNDBUF each call; one send() mostly suffices.
        with self._send_lock:
            self.in_send = True
            self.sends += 1
            self.accepted = 0
            try:
                if self.torn:
                    raise OSError("an interrupted write left a frame half-written")
                self.accepted = sock.send(encoded_frame)
                if self.accepted < len(encoded_frame):
                    rest = memoryview(encoded_frame)
                    while self.accepted < len(rest):  # counted here: a failure must say how much went
                        self.accepted += sock.send(rest[self.accepted :])
            except BaseException:
                # What the kernel took still reaches the broker (closing sends it before the FIN); a
                # frame cut short must not be followed by another, which the broker would read as its rest.
                self.torn = self.torn or 0 < self.accepted < len(encoded_frame)
                raise
            finally:
                self.in_send = False

    def close(self) -> None:
        """Close without waiting on the broker: shutting the socket down ends the reader greenlet too."""
        self.running = False
        sock = self.socket
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()

    def _BaseTransport__read_frames(self) -> None:
        try:
            data = self.socket.recv(_RECV_BYTES)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return
        except OSError as error:
            if error.errno in (errno.EAGAIN, errno.EINTR):
                return
            data = b""
        if not data:
            raise stomp_exception.ConnectionClosedException()
        if self.beats_in:
            self.listeners["protocol-listener"].on_heartbeat()  # any bytes from the broker prove it alive
        # One clock read per read, not per frame: what was read together arrived together.
        try:
            self._parser.feed(data, time.time_ns())
        except ProtocolError as error:
            # Nothing after bytes that are not STOMP can be trusted: report, then end the connection
            # the way a close by the broker does (stomp.py then tells the listener it dropped).
            self.on_protocol_error(str(error))
            raise stomp_exception.ConnectionClosedException() from None
        pause = self.on_read_done()
        if pause and len(data) < _PAUSE_BELOW_BYTES:
            gevent.sleep(pause)

    def _dispatch(self, command: bytes, headers: Headers, body: bytes, received_ns: int) -> None:
        if self.on_frame(command, headers, body, received_ns):
            return
        frame = Frame(_text(command), {_text(k): _text(v) for k, v in headers.items()}, _text(body))
        self.process_frame(frame, None)


class LeanConnection(stomp.Connection12):  # type: ignore[misc]
    """``stomp.Connection12`` over :class:`LeanTransport`."""

    def __init__(
        self,
        hosts: list[tuple[str, int]],
        *,
        on_frame: FrameTaker,
        on_read_done: Callable[[], float],
        on_protocol_error: Callable[[str], None],
        max_frame: int,
        heartbeats: tuple[int, int],
        vhost: str,
        connect_timeout: float,
        use_ssl: bool = False,
        ca_file: str | None = None,
    ):
        transport = LeanTransport(
            hosts,
            on_frame=on_frame,
            on_read_done=on_read_done,
            on_protocol_error=on_protocol_error,
            max_frame=max_frame,
            # Failover follows the user's order; retries are the User's business, not a blocking loop here.
            prefer_localhost=False,
            try_loopback_connect=False,
            reconnect_attempts_max=1,
            timeout=connect_timeout,
            vhost=vhost,
            auto_decode=False,
        )
        transport.beats_in = heartbeats[1] > 0
        if use_ssl:
            transport.set_ssl(for_hosts=hosts, ca_certs=ca_file)
        stomp.connect.BaseConnection.__init__(self, transport)
        Protocol12.__init__(self, transport, heartbeats, heart_beat_receive_scale=_BEAT_GRACE)


class _Events(stomp.ConnectionListener):  # type: ignore[misc]
    """The frames left to stomp.py's dispatch: connection state only."""

    def __init__(self, listener: Listener):
        self._listener = listener

    def on_connected(self, frame: Any) -> None:
        self._listener.on_connected(frame.headers)

    def on_disconnected(self) -> None:
        self._listener.on_disconnected()


def _why_unreachable(config: ClientConfig) -> str:
    """stomp.py only says that connecting failed; try the first host again to say why."""
    host, port = config.address.hosts[0]
    try:
        with socket.create_connection((host, port), timeout=config.timeout) as sock:
            if config.address.ssl:
                context = ssl.create_default_context(cafile=config.ca_file)
                with context.wrap_socket(sock, server_hostname=host):
                    pass
    except ssl.SSLCertVerificationError as error:
        if error.verify_code in _NAME_MISMATCH:
            return f"TLS: the certificate is for {_certificate_names(config)}, not {host}"
        return f"TLS: {error.verify_message}; --mq-ca-file names the CA to trust"
    except OSError as error:
        return _os_reason(error)
    return "a second try just after was accepted: the broker was starting, or its connector refuses some"


#: OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH and X509_V_ERR_IP_ADDRESS_MISMATCH: a trusted certificate for another name.
_NAME_MISMATCH = (62, 64)
#: How a connect that found no free file descriptor is worded (the report counts these).
OUT_OF_FILES = "out of file descriptors (EMFILE)"


def _os_reason(error: OSError) -> str:
    if error.errno == errno.EMFILE:
        return f"{OUT_OF_FILES}: this process's ulimit -n is used up, not a broker fault"
    return error.strerror or str(error) or type(error).__name__


def _certificate_names(config: ClientConfig) -> str:
    """The names a trusted certificate is for, read in a handshake that skips only the name check."""
    host, port = config.address.hosts[0]
    context = ssl.create_default_context(cafile=config.ca_file)
    context.check_hostname = False
    try:
        with socket.create_connection((host, port), timeout=config.timeout) as sock, context.wrap_socket(sock) as tls:
            cert: dict[str, Any] = dict(tls.getpeercert() or {})
    except OSError:
        return "another name"
    names = [value for _, value in cert.get("subjectAltName", ())]
    names = names or [value for rdn in cert.get("subject", ()) for key, value in rdn if key == "commonName"]
    return ", ".join(names) or "another name"


class StompTransport:
    """Opens a :class:`LeanConnection` per connect: stomp.py connects, negotiates and beats the heart."""

    def open(self, config: ClientConfig, headers: Mapping[str, str], listener: Listener) -> LeanTransport:
        connection = LeanConnection(
            list(config.address.hosts),
            on_frame=listener.on_frame,
            on_read_done=listener.on_read_done,
            on_protocol_error=listener.on_protocol_error,
            max_frame=config.max_frame,
            heartbeats=config.heartbeats,
            vhost=config.vhost,
            connect_timeout=config.timeout,
            use_ssl=config.address.ssl,
            ca_file=config.ca_file,
        )
        connection.set_listener("mqusers", _Events(listener))
        try:
            connection.connect(config.user, config.password, wait=False, headers=dict(headers))
        except stomp_exception.ConnectFailedException:
            raise Unreachable(_why_unreachable(config)) from None
        except OSError as error:  # CONNECT not written: reset by a broker dying or not yet serving
            connection.transport.close()
            raise Unreachable(_os_reason(error)) from None
        # After CONNECT the client only sends frames and closes: both are the transport's.
        transport: LeanTransport = connection.transport
        return transport
