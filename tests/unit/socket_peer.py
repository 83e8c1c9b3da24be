"""A broker played by the test over a real local socket (TCP, or TLS with a certificate made here).

For the transport's own tests: the bytes it writes are read as a broker would, and the peer's bytes
(CONNECTED, ERROR, heart-beats) are written when the test says so.
"""

from __future__ import annotations

import socket
import ssl
import subprocess
from pathlib import Path

import gevent
from gevent.event import AsyncResult

from mqusers.options.parsing import parse_broker_url
from mqusers.stomp.seam import ClientConfig


def certificate(folder: Path, name: str = "127.0.0.1") -> tuple[Path, Path]:
    """A self-signed certificate for ``name`` (an IP address or a DNS name) and its key."""
    folder.mkdir(parents=True, exist_ok=True)
    cert, key = folder / f"{name}.pem", folder / f"{name}.key"
    kind = "IP" if name.replace(".", "").isdigit() else "DNS"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
         "-days", "1", "-subj", f"/CN={name}", "-addext", f"subjectAltName={kind}:{name}"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return int(probe.getsockname()[1])


class Peer:
    """Listens on 127.0.0.1; ``accepted`` gives the first connection (TLS when ``cert`` is given, and
    the client must show a certificate signed by ``client_ca`` when that is given)."""

    def __init__(self, cert: tuple[Path, Path] | None = None, client_ca: Path | None = None):
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._server.getsockname()[1])
        self._tls: ssl.SSLContext | None = None
        if cert is not None:
            self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._tls.load_cert_chain(*cert)
            if client_ca is not None:  # a broker that asks for the client's certificate
                self._tls.verify_mode = ssl.CERT_REQUIRED
                self._tls.load_verify_locations(client_ca)
        self.accepted: AsyncResult = AsyncResult()
        self.received = bytearray()
        self._acceptor = gevent.spawn(self._accept)

    def url(self, scheme: str = "stomp") -> str:
        return f"{scheme}://127.0.0.1:{self.port}"

    def config(self, scheme: str = "stomp", **fields: object) -> ClientConfig:
        return ClientConfig(parse_broker_url(self.url(scheme)), **{"timeout": 5, **fields})  # type: ignore[arg-type]

    def _accept(self) -> None:
        conn, _ = self._server.accept()
        if self._tls is not None:
            try:
                conn = self._tls.wrap_socket(conn, server_side=True)
            except (ssl.SSLError, OSError):
                conn.close()
                return  # the client refused our certificate
        self.accepted.set(conn)

    def conn(self) -> socket.socket:
        sock: socket.socket = self.accepted.get(timeout=5)
        return sock

    def read_until(self, wanted: bytes, count: int = 1, timeout: float = 5.0) -> bytes:
        """Read until ``wanted`` occurs ``count`` times in all that was read; raise when the peer closed."""
        conn = self.conn()
        with gevent.Timeout(timeout):
            while self.received.count(wanted) < count:
                chunk = conn.recv(65536)
                if not chunk:
                    raise ConnectionResetError(f"closed after {bytes(self.received)!r}")
                self.received += chunk
        return bytes(self.received)

    def wait_closed(self, timeout: float = 5.0) -> None:
        """Read until the client closes its end."""
        conn = self.conn()
        with gevent.Timeout(timeout):
            while True:
                try:
                    chunk = conn.recv(65536)
                except OSError:
                    return
                if not chunk:
                    return
                self.received += chunk

    def send(self, data: bytes) -> None:
        self.conn().sendall(data)

    def close(self) -> None:
        self._acceptor.kill()
        if self.accepted.ready():
            self.accepted.value.close()
        self._server.close()
