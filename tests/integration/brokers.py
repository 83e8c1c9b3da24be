"""The local brokers the integration tests share: which service, which port, and their own counts.

``started(name)`` starts a broker's service if it is not running (``services.start`` is idempotent) and
leaves it running for the next test; ``broker_params`` marks each parametrized case with its broker's
name, so ``pytest -m activemq`` runs one of them. ``on_four(behaviour)`` is a behaviour written once
and run on each of the four brokers, as kombu does: a broker that cannot do it is skipped with the
reason in ``CANNOT``, which docs/brokers.md's table repeats word for word (tests/unit/test_broker_table.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

import services
from tests.integration import artemis_jolokia, broker_stats


@dataclass(frozen=True)
class Broker:
    name: str
    service: str
    port: int
    management_port: int = 0
    #: STOMP over WebSocket: the URL of its ws endpoint ("" where the broker has none).
    ws_url: str = ""

    @property
    def url(self) -> str:
        return f"stomp://127.0.0.1:{self.port}"

    def routing(self, command: str, destination: str) -> dict[str, str]:
        """What a plain client adds to a SEND or SUBSCRIBE here: Artemis makes an unknown /queue/ name
        MULTICAST otherwise. Spelt out here, not read from mqusers' dialects, so a wrong dialect shows."""
        if self.name != "artemis":
            return {}
        routing = "ANYCAST" if destination.startswith("/queue/") else "MULTICAST"
        return {"destination-type" if command == "SEND" else "subscription-type": routing}

    def counters(self, destination: str) -> dict[str, int]:
        """The broker's own counts for a destination: ``accepted``, ``delivered`` and ``held``.

        Artemis drops a topic subscriber's queue, and its counts, with its subscriber: for a topic it
        says only what it accepted (routed to a subscriber or not) and holds.
        """
        if self.name == "artemis":
            return artemis_counters(destination)
        if self.name.startswith("activemq"):
            stats = broker_stats.activemq_destination_stats(self.port, destination)
            return {"accepted": stats["enqueueCount"], "delivered": stats["dispatchCount"], "held": stats["size"]}
        kind, name = destination.split("/")[1:3]
        if kind == "queue":
            stats = broker_stats.rabbitmq_queue_stats(self.management_port, name)
            delivered = stats["deliver_get"]
            return {"accepted": stats["publish"], "delivered": delivered, "held": stats["messages"]}
        stats = broker_stats.rabbitmq_exchange_stats(self.management_port)
        return {"accepted": stats["publish_in"], "delivered": stats["publish_out"], "held": 0}


def artemis_counters(destination: str) -> dict[str, int]:
    """Artemis's counts over Jolokia: a queue's MessagesAdded, MessagesAcknowledged and MessageCount; a
    topic's messages routed to a subscriber or to none, and what its (durable) subscribers' queues hold."""
    base = f'{artemis_jolokia.DOMAIN}:broker=*,component=addresses,address="{artemis_jolokia.address_of(destination)}"'

    def each(pattern: str) -> list[dict[str, Any]]:
        return [artemis_jolokia.read(name) for name in artemis_jolokia.call({"type": "search", "mbean": pattern})]

    queues = each(f"{base},subcomponent=queues,*")
    held = sum(int(queue["MessageCount"]) for queue in queues)
    if destination.startswith("/topic/"):
        accepted = sum(int(a["RoutedMessageCount"]) + int(a["UnRoutedMessageCount"]) for a in each(base))
        return {"accepted": accepted, "held": held}
    return {"accepted": sum(int(q["MessagesAdded"]) for q in queues),
            "delivered": sum(int(q["MessagesAcknowledged"]) for q in queues), "held": held}  # fmt: skip


BROKERS = {
    "activemq": Broker("activemq", "activemq", services.PORTS["activemq"]["stomp"]),
    "activemq-persistent": Broker(
        "activemq-persistent", "activemq-persistent", services.PORTS["activemq-persistent"]["stomp"]
    ),
    "activemq-stress": Broker("activemq-stress", "activemq-stress", services.PORTS["activemq-stress"]["stomp"]),
    # Each broker's WebSocket endpoint: RabbitMQ's web_stomp plugin at /ws, Classic 6's ws connector
    # (any path), Artemis's STOMP acceptor itself (it takes the HTTP upgrade on its STOMP port).
    "rabbitmq": Broker(
        "rabbitmq",
        "rabbitmq",
        services.PORTS["rabbitmq"]["stomp"],
        services.PORTS["rabbitmq"]["management"],
        f"ws://127.0.0.1:{services.PORTS['rabbitmq']['web_stomp']}/ws",
    ),
    "activemq6": Broker(
        "activemq6",
        "activemq6",
        services.PORTS["activemq6"]["stomp"],
        ws_url=f"ws://127.0.0.1:{services.PORTS['activemq6']['ws']}/",
    ),
    "activemq6-persistent": Broker(
        "activemq6-persistent", "activemq6-persistent", services.PORTS["activemq6-persistent"]["stomp"]
    ),
    "artemis": Broker(
        "artemis",
        "artemis",
        services.PORTS["artemis"]["stomp"],
        services.PORTS["artemis"]["http"],
        f"ws://127.0.0.1:{services.PORTS['artemis']['stomp']}/",
    ),
}

#: The four brokers (docs/brokers.md's columns): ActiveMQ Classic 5.17 (Debian), Classic 6, Artemis, RabbitMQ.
FOUR = ("activemq", "activemq6", "artemis", "rabbitmq")
#: The broker-agnostic behaviours, each tested once on the four (docs/brokers.md's rows).
BEHAVIOURS = (
    "queue",
    "pub/sub",
    "durable subscriber",
    "request/reply",
    "receipts",
    "client and client-individual acks",
    "fixed count",
    "leftovers",
    "binary bodies",
    "temporary destinations",
    "broker killed and restarted",
    "redelivery",
    "heart-beats",
    "injected gap",
    "outside consumer",
    "transactions",
    "selectors",
    "STOMP over WebSocket",
    "message groups",
    "connection churn",
    "NACK to dead letters",
    "NACK redelivered",
    "priority",
)
_NACK_ACKNOWLEDGES = (
    "its STOMP NACK acknowledges: the message is discarded, neither redelivered nor dead-lettered "
    "(2.40.0), so `--mq-nack-ratio` is refused before load (exit 2)"
)
_NACK_DEAD_LETTERS = "a STOMP NACK sends the message to `ActiveMQ.DLQ` at once (a poison ack), never redelivered"
#: {behaviour: {broker: why it cannot}}: each reason is the skip's and the docs table's cell.
CANNOT: dict[str, dict[str, str]] = {
    "selectors": {"rabbitmq": "its STOMP has no selectors: `--mq-select` is refused before load (exit 2)"},
    "message groups": {"rabbitmq": "no message groups: `--mq-groups` is refused before load (exit 2)"},
    "NACK to dead letters": {
        "artemis": _NACK_ACKNOWLEDGES,
        "rabbitmq": "a NACK requeues the message: a classic queue has no maximum redeliveries, and dead letters "
        "need a dead-letter exchange or a quorum queue's `x-delivery-limit`, which mqusers does not declare",
    },
    "NACK redelivered": {
        "activemq": _NACK_DEAD_LETTERS,
        "activemq6": _NACK_DEAD_LETTERS,
        "artemis": _NACK_ACKNOWLEDGES,
    },
    "redelivery": {
        "artemis": "flags only the first of the messages a consumer left unacknowledged `redelivered:true` "
        "(2.40.0: 1 of 10), so the others count as duplicates",
    },
    "STOMP over WebSocket": {
        "activemq": "Debian's package has no `ws` transport (activemq-http and Jetty's WebSocket server are not "
        "packaged): Classic 6 has it",
    },
}


def on_four(behaviour: str, persistent: bool = False, alone: dict[str, str] | None = None) -> list[Any]:
    """A param per broker for ``@pytest.mark.parametrize("broker", ..., indirect=True)``; ``persistent``
    runs the Classic columns on their KahaDB services (``activemq-persistent``, ``activemq6-persistent``):
    Artemis's journal and RabbitMQ's durable queues keep persistent messages as they are. ``alone``:
    {broker: why} for the brokers on which the test must run with nothing beside it (make test's last phase)."""
    assert behaviour in BEHAVIOURS, behaviour
    params = []
    for column in FOUR:
        name = f"{column}-persistent" if persistent and column.startswith("activemq") else column
        marks = [getattr(pytest.mark, column)]
        if column in (alone or {}):
            marks.append(pytest.mark.alone)
        reason = CANNOT.get(behaviour, {}).get(column)
        if reason:
            marks.append(pytest.mark.skip(reason=reason))
        params.append(pytest.param(name, marks=marks, id=name))
    return params


def broker_params(*names: str) -> list[Any]:
    return [pytest.param(name, marks=getattr(pytest.mark, name.split("-")[0]), id=name) for name in names]


def started(name: str) -> Broker:
    broker = BROKERS[name]
    services.start(broker.service)
    return broker
