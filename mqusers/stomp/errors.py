"""The STOMP client's failures, each one readable line, and an ERROR frame put into words."""

from __future__ import annotations

from mqusers.errors import MqusersError
from mqusers.stomp.wire import Headers, unescape


class MqError(MqusersError):
    """A messaging failure whose message is one readable line."""


class BrokerError(MqError):
    """The broker sent an ERROR frame; the message is its ``message`` header."""


class ConnectionLost(MqError):
    """The connection dropped while an answer was pending: the outcome is unknown."""


def error_text(headers: Headers, body: bytes) -> str:
    """What an ERROR frame says: its ``message`` header, and its body's first words when they add to it."""
    message = unescape(headers.get(b"message", b"")).decode("utf-8", "replace").strip()
    detail = " ".join(body[:300].decode("utf-8", "replace").split())
    if detail and detail not in message:
        message = f"{message}: {detail}" if message else detail
    return message
