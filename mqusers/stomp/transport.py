"""mqusers' own STOMP transport: a socket per failover host in order, TLS, CONNECT, then a :class:`Link`.

:class:`StompTransport` is the client's default :class:`mqusers.stomp.seam.Transport`. It
dials the broker address's hosts in the order given, each bounded by the client's timeout, and
keeps each host's error: when none answers, :class:`Unreachable` says why for every one of them.
Under gevent (Locust is imported first) every socket call yields instead of blocking. stomp.py is
not on this path: see ARCHITECTURE.md ("stomp.py's role").
"""

from __future__ import annotations

import contextlib
import errno
import socket
import ssl
from collections.abc import Mapping

from mqusers.stomp import tls
from mqusers.stomp.link import Link, Stream
from mqusers.stomp.seam import ClientConfig, Listener, Unreachable
from mqusers.stomp.wire import connect_frame

#: How a connect that found no free file descriptor is worded (the report counts these).
OUT_OF_FILES = "out of file descriptors (EMFILE)"


#: A dropped connection's errors in words: no "[Errno N]" reaches a user.
_LOST = {
    errno.EBADF: "the connection was already closed",
    errno.EPIPE: "the broker closed the connection",
    errno.ECONNRESET: "the broker reset the connection",
    errno.ETIMEDOUT: "the broker's host stopped answering",
}


def os_reason(error: OSError) -> str:
    if error.errno == errno.EMFILE:
        return f"{OUT_OF_FILES}: this process's ulimit -n is used up, not a broker fault"
    return _LOST.get(error.errno or 0) or error.strerror or str(error) or type(error).__name__


def dial(config: ClientConfig) -> Stream:
    """A connected socket (TLS-wrapped for stomp+ssl and wss, upgraded for ws and wss) to the first host
    that answers, in order."""
    failures: list[str] = []
    hosts = config.address.hosts
    for index, (host, port) in enumerate(hosts):
        try:
            return _dial_one(config, host, port, index)
        except ssl.SSLError as error:
            why = tls.reason(error, host, port, config.ca_file, config.timeout)
        except OSError as error:
            why = os_reason(error)
        failures.append(why if len(hosts) == 1 else f"{host}:{port}: {why}")
    raise Unreachable("; ".join(failures))


def _dial_one(config: ClientConfig, host: str, port: int, index: int) -> Stream:
    sock = socket.create_connection((host, port), timeout=config.timeout)
    stream: Stream = sock
    try:
        # Nagle's algorithm holds small frames for up to 40 ms: latency figures would measure it.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if config.address.ssl:
            context = tls.context(config.ca_file, config.cert_file, config.key_file)
            sock.settimeout(min(config.timeout, tls.HANDSHAKE_S))
            try:
                sock = stream = context.wrap_socket(sock, server_hostname=host)
            except TimeoutError:
                raise OSError(tls.silent(host, port)) from None
            sock.settimeout(config.timeout)
        if config.address.websocket:  # the HTTP upgrade, within the timeout too
            from mqusers.stomp import websocket  # loaded by ClientConfig already: only ws:// needs it

            stream = websocket.upgrade(sock, host, port, config.address.paths[index])
        # The timeout bounds connecting only: the reader waits for as long as the broker is quiet.
        sock.settimeout(None)
    except BaseException:
        sock.close()
        raise
    return stream


class StompTransport:
    """Opens a :class:`Link` per connect; its reader, heart-beats and close are the link's."""

    def open(self, config: ClientConfig, headers: Mapping[str, str], listener: Listener) -> Link:
        vhost = config.vhost or config.address.hosts[0][0]
        try:
            connect = connect_frame(vhost, config.heartbeats, config.user, config.password, headers)
        except ValueError as error:
            raise Unreachable(str(error)) from None
        sock = dial(config)
        link = Link(sock, listener, config.heartbeats, config.max_frame, config.timeout)
        try:
            link.send(connect)
        except OSError as error:  # CONNECT not written: reset by a broker dying or not yet serving
            with contextlib.suppress(OSError):
                sock.close()
            raise Unreachable(os_reason(error)) from None
        link.start()
        return link
