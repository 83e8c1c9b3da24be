"""The brokers' OWN counters: the independent truth that tests compare mqusers to.

Nothing here imports mqusers; ActiveMQ is asked over STOMP with stomp.py
(statisticsBrokerPlugin), RabbitMQ over its management HTTP API with requests.

Counters lag the client: ActiveMQ processes STOMP SENDs without a receipt
asynchronously (500 sent, connection closed, and enqueueCount read 407 at
once, 500 a moment later) and RabbitMQ's management API refreshes every
``collect_statistics_interval`` (500 ms in services/rabbitmq.py). Assert with
``wait_for`` rather than reading once.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import requests
import stomp

ACTIVEMQ_KEYS = (
    "enqueueCount",
    "dequeueCount",
    "dispatchCount",
    "consumerCount",
    "size",
    "inflightCount",
    "expiredCount",
    "producerCount",
)
RABBITMQ_QUEUE_KEYS = ("messages", "messages_ready", "messages_unacknowledged", "consumers")
RABBITMQ_QUEUE_RATES = ("publish", "deliver_get", "deliver", "deliver_no_ack", "get", "ack", "redeliver")
GUEST = ("guest", "guest")
END_MARKER = "ActiveMQ.Statistics.Destination.List.End.With.Null"


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, interval: float = 0.05) -> bool:
    """Poll ``predicate`` until truthy or ``timeout`` s passed; return whether it held."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def readings_agree(
    ours: Callable[[], dict[str, Any]], theirs: Callable[[], dict[str, Any]], expected: dict[str, Any]
) -> dict[str, Any]:
    """Wait until mqusers' reading (``ours``) and the test's own (``theirs``) agree and hold ``expected``; the
    reading they agreed on. Fails with both readings when they never do (each reader lags the broker its own way)."""
    seen: list[dict[str, Any]] = [{}, {}]

    def agree() -> bool:
        seen[:] = [ours(), theirs()]
        return seen[0] == seen[1] and expected.items() <= seen[1].items()

    assert wait_for(agree, timeout=15), f"ours {seen[0]} theirs {seen[1]} expected {expected}"
    return seen[0]


# -------------------------------------------------------------------- ActiveMQ


def parse_jms_map_json(body: str) -> dict[str, Any]:
    """Decode a MapMessage as sent with ``transformation:jms-map-json``.

    Shape (XStream + Jettison)::

        {"map": {"entry": [{"string": "size", "long": 10},
                           {"string": "averageEnqueueTime", "double": 14.8},
                           {"string": "memoryPercentUsage", "int": 0},
                           {"string": ["destinationName", "queue://foo"]}, ...]}}

    Numbers: the key under "string", the value under its Java type; strings:
    "string" holds [key, value]. An empty map is ``{"map": ""}``. A one-entry
    map would hold a bare object instead of a list (Jettison), handled too.
    """
    entries = json.loads(body).get("map") or {}
    entries = entries.get("entry", []) if isinstance(entries, dict) else []
    if isinstance(entries, dict):
        entries = [entries]
    result: dict[str, Any] = {}
    for entry in entries:
        key = entry.get("string")
        if isinstance(key, list):
            result[str(key[0])] = str(key[1]) if len(key) > 1 else ""
            continue
        for java_type, value in entry.items():
            if java_type == "string":
                continue
            result[key] = float(value) if java_type in ("double", "float") else int(value)
    return result


class _Replies(stomp.ConnectionListener):  # type: ignore[misc]
    """Collects statistics replies until the empty terminator map arrives (or ``replies`` maps did)."""

    def __init__(self, subscription: str, replies: int | None = None) -> None:
        self.subscription, self.replies = subscription, replies
        self.maps: list[dict[str, Any]] = []
        self.done = threading.Event()
        self.error: str | None = None

    def on_message(self, frame: Any) -> None:
        if frame.headers.get("subscription") != self.subscription:
            return
        parsed = parse_jms_map_json(frame.body)
        if parsed:
            self.maps.append(parsed)
        if not parsed or len(self.maps) == self.replies:
            self.done.set()

    def on_error(self, frame: Any) -> None:
        self.error = f"{frame.headers.get('message')}: {frame.body}"
        self.done.set()


def activemq_statistics(
    port: int, query: str, timeout: float = 10.0, host: str = "127.0.0.1", replies: int | None = None
) -> list[dict[str, Any]]:
    """Send one statisticsBrokerPlugin query (a STOMP destination) and collect the maps.

    ``query`` e.g. ``/queue/ActiveMQ.Statistics.Destination.foo``,
    ``/topic/ActiveMQ.Statistics.Destination.>`` or ``/queue/ActiveMQ.Statistics.Broker``.
    The END_MARKER header makes the broker send an empty map after the last
    reply, so "no such destination" is an empty list, not a timeout. The broker query ends with
    no such map: ``replies=1`` ends at its one reply.
    """
    conn = stomp.Connection12([(host, port)], heartbeats=(0, 0))
    reply_to = f"/temp-queue/stats-{uuid.uuid4().hex}"
    listener = _Replies(subscription="stats", replies=replies)
    conn.set_listener("stats", listener)
    conn.connect(wait=True)
    try:
        conn.subscribe(reply_to, id="stats", ack="auto", headers={"transformation": "jms-map-json"})
        conn.send(query, "", headers={"reply-to": reply_to, END_MARKER: "true"})
        if not listener.done.wait(timeout):
            raise TimeoutError(
                f"no statistics reply for {query} within {timeout} s (is <statisticsBrokerPlugin/> enabled?)"
            )
        if listener.error:
            raise RuntimeError(f"ActiveMQ error for {query}: {listener.error}")
        return listener.maps
    finally:
        conn.disconnect()


def _split_destination(destination: str) -> tuple[str, str]:
    for kind in ("queue", "topic"):
        prefix = f"/{kind}/"
        if destination.startswith(prefix) and len(destination) > len(prefix):
            return kind, destination[len(prefix) :]
    raise ValueError(f"expected /queue/NAME or /topic/NAME, got {destination!r}")


def activemq_destination_stats(
    port: int, destination: str, timeout: float = 10.0, host: str = "127.0.0.1"
) -> dict[str, int]:
    """ActiveMQ's counters for ``/queue/NAME`` or ``/topic/NAME`` (STOMP ``host``:``port``).

    Returns the integer entries of the plugin's reply (``enqueueCount``,
    ``dequeueCount``, ``dispatchCount``, ``consumerCount``, ``size``,
    ``inflightCount``, ``expiredCount``, ``producerCount``, ``memoryUsage`` ...)
    plus ``exists`` (1/0). A destination the broker does not know yields 0
    for every ACTIVEMQ_KEYS counter and ``exists`` 0.

    Queues and topics of the same name are told apart: the plugin builds the
    destination it reports on from the request's own type, so the query goes to
    ``/queue/ActiveMQ.Statistics.Destination.NAME`` for a queue and to
    ``/topic/ActiveMQ.Statistics.Destination.NAME`` for a topic; the reply's
    ``destinationName`` is ``queue://NAME`` / ``topic://NAME`` and is checked.
    NAME is matched with ActiveMQ wildcards (``*``, ``>``; ``.`` separates
    levels), hence the exact-name filter here.

    Meaning (ActiveMQ 5.17): enqueueCount = messages the destination accepted
    (a topic counts each publish once, whatever the subscriber count);
    dispatchCount = deliveries to consumers (per subscriber on topics, incl.
    redeliveries); dequeueCount = acknowledged (on topics: delivered and acked
    per subscriber); size = on a queue, not yet acknowledged (includes
    inflightCount = dispatched but unacked); consumerCount = current subscribers.
    """
    kind, name = _split_destination(destination)
    query = f"/{kind}/ActiveMQ.Statistics.Destination.{name}"
    wanted = f"{kind}://{name}"
    for reply in activemq_statistics(port, query, timeout, host):
        if reply.get("destinationName") == wanted:
            stats = {key: value for key, value in reply.items() if isinstance(value, int)}
            return {**stats, "exists": 1}
    return {**{key: 0 for key in ACTIVEMQ_KEYS}, "exists": 0}


# -------------------------------------------------------------------- RabbitMQ


def _management_get(port: int, path: str, auth: tuple[str, str]) -> Any:
    """JSON of a management API GET; None on 404 (no such queue/exchange yet)."""
    response = requests.get(f"http://127.0.0.1:{port}/api/{path}", auth=auth, timeout=10)
    if response.status_code == 404:
        return None
    response.raise_for_status()
    return response.json()


def rabbitmq_node(port: int, auth: tuple[str, str] = GUEST) -> dict[str, Any]:
    """The (single) node's figures from the management API on ``port``: memory, limits, alarms."""
    [node] = _management_get(port, "nodes", auth)
    return node  # type: ignore[no-any-return]


def rabbitmq_queue_names(port: int, auth: tuple[str, str] = GUEST) -> list[str]:
    """Every queue's name, from the management API on ``port``."""
    return [queue["name"] for queue in _management_get(port, "queues", auth)]


def rabbitmq_queue_stats(port: int, queue: str, vhost: str = "/", auth: tuple[str, str] = GUEST) -> dict[str, int]:
    """Counters of ``queue`` from the management API on ``port``.

    ``messages`` / ``messages_ready`` / ``messages_unacknowledged`` /
    ``consumers`` are current values; ``publish``, ``deliver_get``,
    ``deliver``, ``ack``, ``redeliver`` ... are totals from ``message_stats``
    (0 until the first such event). Plus ``exists`` (1/0). A STOMP
    ``/queue/x`` is the queue ``x``; a ``/topic/x`` subscriber gets its own
    auto-named queue bound to amq.topic (see rabbitmq_exchange_stats).
    """
    data = _management_get(port, f"queues/{quote(vhost, safe='')}/{quote(queue, safe='')}", auth)
    if data is None:
        return {**{key: 0 for key in RABBITMQ_QUEUE_KEYS + RABBITMQ_QUEUE_RATES}, "exists": 0}
    message_stats = data.get("message_stats") or {}
    stats = {key: int(data.get(key) or 0) for key in RABBITMQ_QUEUE_KEYS}
    stats.update({key: int(message_stats.get(key) or 0) for key in RABBITMQ_QUEUE_RATES})
    return {**stats, "exists": 1}


def rabbitmq_queue_rates(port: int, queue: str, vhost: str = "/", auth: tuple[str, str] = GUEST) -> dict[str, float]:
    """The management API's own msg/s of ``queue``: publish, deliver_get and ack (0.0 before any)."""
    data = _management_get(port, f"queues/{quote(vhost, safe='')}/{quote(queue, safe='')}", auth) or {}
    message_stats = data.get("message_stats") or {}
    rates = {"publish_rate": "publish", "deliver_rate": "deliver_get", "ack_rate": "ack"}
    return {name: float((message_stats.get(f"{key}_details") or {}).get("rate") or 0.0) for name, key in rates.items()}


def rabbitmq_exchange_stats(
    port: int, exchange: str = "amq.topic", vhost: str = "/", auth: tuple[str, str] = GUEST
) -> dict[str, int]:
    """``publish_in`` (messages published to ``exchange``) and ``publish_out``
    (copies routed on to queues: one per bound subscriber queue) totals.

    STOMP ``/topic/k`` publishes to amq.topic with routing key ``k``. The totals
    cover every routing key and the node's lifetime: compare before/after.
    """
    name = exchange or "amq.default"
    data = _management_get(port, f"exchanges/{quote(vhost, safe='')}/{quote(name, safe='')}", auth)
    message_stats = (data or {}).get("message_stats") or {}
    return {
        "publish_in": int(message_stats.get("publish_in") or 0),
        "publish_out": int(message_stats.get("publish_out") or 0),
        "exists": int(data is not None),
    }


def rabbitmq_connections(port: int, auth: tuple[str, str] = GUEST) -> dict[str, int]:
    """RabbitMQ's own connection figures: ``open`` now (object_totals), and ``created`` and ``closed``
    since the node started (churn_rates' counts, not their rates)."""
    overview = _management_get(port, "overview", auth)
    churn = overview["churn_rates"]
    return {"open": overview["object_totals"]["connections"], "created": churn["connection_created"],
            "closed": churn["connection_closed"]}  # fmt: skip


# -------------------------------------------------------------------- the kernel's view


def broker_side_connections(port: int) -> int:
    """TCP connections the broker listening on ``port`` has not closed yet, from the kernel's tables:
    its sockets with that local port, ESTABLISHED or CLOSE_WAIT (the client gone, the broker not yet
    done). The truth where a broker counts no connections (ActiveMQ Classic without JMX)."""
    held = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as rows:
                next(rows)  # the header
                for row in rows:
                    fields = row.split()
                    local_port, state = int(fields[1].rsplit(":", 1)[1], 16), fields[3]
                    held += local_port == port and state in ("01", "08")
        except FileNotFoundError:
            continue
    return held
