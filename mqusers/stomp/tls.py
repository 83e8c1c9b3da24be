"""TLS for stomp+ssl, through the standard ``ssl`` module: the verifying context, and a failed handshake in words.

Verification is on: the broker's certificate must chain to the system's CAs or ``--mq-ca-file``
and name the host dialled; ``--mq-cert-file`` (and ``--mq-key-file``) is the client's certificate.
Under gevent (Locust patches ``ssl`` first) the sockets block cooperatively.
"""

from __future__ import annotations

import functools
import socket
import ssl
from typing import Any

#: OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH and X509_V_ERR_IP_ADDRESS_MISMATCH: a trusted certificate for another name.
_NAME_MISMATCH = (62, 64)


@functools.lru_cache(maxsize=8)
def context(ca_file: str | None, cert_file: str | None = None, key_file: str | None = None) -> ssl.SSLContext:
    """One verifying context per CA and client certificate: loading the system's CAs costs milliseconds,
    which a thousand Users connecting would pay a thousand times."""
    tls = ssl.create_default_context(cafile=ca_file)
    if cert_file is not None:
        tls.load_cert_chain(cert_file, key_file, password=b"")  # never a prompt on the terminal
    return tls


#: A TLS server answers a ClientHello at once; a plaintext STOMP port waits for a CONNECT frame that never comes.
HANDSHAKE_S = 5.0


def silent(host: str, port: int) -> str:
    """No answer to the ClientHello: most likely a plaintext port given a stomp+ssl URL."""
    return (
        f"TLS: no answer to the handshake within {HANDSHAKE_S:g} s: is {host}:{port} a plaintext STOMP port? "
        "(stomp:// for it, stomp+ssl:// for the broker's TLS port)"
    )


def reason(error: ssl.SSLError, host: str, port: int, ca_file: str | None, timeout: float) -> str:
    """A failed handshake with ``host`` in a few words, with what to do about an untrusted certificate."""
    if isinstance(error, ssl.SSLCertVerificationError):
        if error.verify_code in _NAME_MISMATCH:
            return f"TLS: the certificate is for {_certificate_names(host, port, ca_file, timeout)}, not {host}"
        return f"TLS: {error.verify_message}; --mq-ca-file names the CA to trust"
    return f"TLS: {error.reason or error}"


def _certificate_names(host: str, port: int, ca_file: str | None, timeout: float) -> str:
    """The names a trusted certificate is for, read in a handshake that skips only the name check."""
    tls = ssl.create_default_context(cafile=ca_file)
    tls.check_hostname = False
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock, tls.wrap_socket(sock) as wrapped:
            cert: dict[str, Any] = dict(wrapped.getpeercert() or {})
    except OSError:
        return "another name"
    names = [value for _, value in cert.get("subjectAltName", ())]
    names = names or [value for rdn in cert.get("subject", ()) for key, value in rdn if key == "commonName"]
    return ", ".join(names) or "another name"
