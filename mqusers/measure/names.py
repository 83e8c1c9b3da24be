"""Locust event names, ``"<operation> <target>"``: built and split here only.

Every mqusers event has request type ``STOMP`` and a name made of an operation and its target (a
destination, or the broker address for connects and unclaimed ERROR frames). Reports, the audit
and the InfluxDB sink group by the two halves, so they are split only by :func:`split_event_name`.
Other Locust requests (an ``HttpUser``'s) are tallied beside them under :func:`request_key`.
Each requester's own reply destination is one target for all of them (:data:`REPLY_PREFIXES`):
one row in Locust's table and the summary, not one per requester.
"""

from __future__ import annotations

REQUEST_TYPE = "STOMP"

CONNECT = "connect"
#: DISCONNECT to its RECEIPT: timed by Users that close connections on purpose (churn).
DISCONNECT = "disconnect"
SUBSCRIBE = "subscribe"
UNSUBSCRIBE = "unsubscribe"
SEND = "send"
RECEIPT = "receipt"
RECEIVE = "receive"
RECEIVE_DUE = "receive-due"
#: A backlog run's deliveries apart: the backlog's (sent before the switch) and the new ones.
RECEIVE_BACKLOG = "receive-backlog"
RECEIVE_NEW = "receive-new"
#: A priority run's deliveries of one priority (``--mq-priorities``): ``receive-p9``, ``receive-p0``...
RECEIVE_PRIORITY = "receive-p"
#: A transaction's BEGIN (not timed: no RECEIPT asked; only its failures are events), and its COMMIT
#: or ABORT, from the write to the broker's RECEIPT.
BEGIN = "begin"
COMMIT = "commit"
ABORT = "abort"
#: A consumer's COMMIT of the ACKs it sent in a transaction (``--mq-tx-ack``), to its RECEIPT.
COMMIT_ACKS = "commit-acks"
REQUEST = "request"
REPLY = "reply"
ACK = "ack"
ERROR = "error"
BLOCKED = "blocked"
#: A send that did not move while the broker's host acknowledged nothing (mqusers/run/blocked.py).
STALLED = "stalled"
SCHEDULE_LAG = "schedule-lag"
#: A consumer on another broker than the producers': its first probe to the network passing one on to it.
DEMAND = "demand"
#: A MESSAGE frame for a subscription this client does not (or no longer) hold.
UNSUBSCRIBED = "receive (unsubscribed)"

#: Where each requester's replies go: ``<prefix><requester>``; its events are named ``<prefix>*``.
TEMP_REPLY_PREFIX, QUEUE_REPLY_PREFIX = "/temp-queue/mqusers-", "/queue/mqusers.reply."
REPLY_PREFIXES = (TEMP_REPLY_PREFIX, QUEUE_REPLY_PREFIX)

#: Destinations a message reaches every subscription of; the rest deliver each message once.
_FAN_OUT_PREFIXES = ("/topic/", "/exchange/", "/temp-topic/")


def event_name(operation: str, target: object) -> str:
    name = str(target)
    prefix = next((p for p in REPLY_PREFIXES if name.startswith(p)), None)
    return f"{operation} {name if prefix is None else prefix + '*'}"


def split_event_name(name: str) -> tuple[str, str]:
    """``"receive /topic/x"`` -> ``("receive", "/topic/x")``; a name without a target gets ``""``."""
    operation, _, target = name.partition(" ")
    return operation, target


def request_key(request_type: str, name: str) -> str:
    """The tally key of a non-STOMP request: ``("get", "/api/x")`` -> ``"GET /api/x"``.

    Upper case, so it never equals a STOMP event name, whose operations are all lower case, and
    never counts towards a destination (:func:`destination_operation`).
    """
    return f"{request_type.upper()} {name}"


def destination_operation(key: str) -> tuple[str, str] | None:
    """A STOMP event's ``(operation, destination)``; ``None`` for broker-wide events and other requests."""
    operation, target = split_event_name(key)
    return (operation, target) if operation.islower() and target.startswith("/") else None


def destination_kind(destination: str) -> str:
    """``"topic"`` (each subscription gets every message) or ``"queue"`` (each message once)."""
    return "topic" if destination.startswith(_FAN_OUT_PREFIXES) else "queue"
