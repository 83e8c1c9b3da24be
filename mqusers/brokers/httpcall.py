"""One call of a broker's management HTTP API, bounded as a whole by a timeout; a failure is one line.

``requests`` (Locust's own dependency) cooperates under gevent's patching. Its own timeout bounds
each socket read, not the call: a ``gevent.Timeout`` bounds the whole. Used by the RabbitMQ
management API's and Artemis's Jolokia sources, which read the answer themselves.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import gevent
import requests

from mqusers.brokers.model import MetricsError


def without_credentials(url: str) -> str:
    """``url`` fit for an error line: a ``user:password@`` part is dropped."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url.rstrip("/")
    host = parts.hostname or ""
    netloc = (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc)).rstrip("/")


def reason(error: requests.RequestException) -> str:
    """The few words that matter in requests' nested connection errors ("Connection refused")."""
    found = re.search(r"\[Errno -?\d+\] ([^'\")\]]+)", str(error))
    return found.group(1).strip() if found else type(error).__name__


class EndpointUnreachable(MetricsError):
    """Nothing answered at that address (refused, or no answer in time); ``reason`` says which."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where} {reason}")
        self.reason = reason


def call(
    send: Callable[..., requests.Response], url: str, *, where: str, timeout: float, **kwargs: Any
) -> requests.Response:
    """``send(url, timeout=..., **kwargs)`` (a session's ``get`` or ``post``) within ``timeout`` as a whole.

    Raises :class:`EndpointUnreachable` (refused, no answer in time) or :class:`MetricsError` (any other
    failure of the request), each saying ``where``; the caller then starts its session afresh: a
    call cut short may leave a half-read response in the pool.
    """
    timer = gevent.Timeout(timeout)
    timer.start()
    try:
        return send(url, timeout=timeout, **kwargs)
    except gevent.Timeout as expired:
        if expired is not timer:
            raise
        raise EndpointUnreachable(where, f"did not answer within {timeout:g}s") from None
    except requests.Timeout:
        raise EndpointUnreachable(where, f"did not answer within {timeout:g}s") from None
    except requests.ConnectionError as error:
        raise EndpointUnreachable(where, f"is unreachable ({reason(error)})") from None
    except requests.RequestException as error:
        raise MetricsError(f"{where} failed ({type(error).__name__})") from None
    finally:
        timer.close()
