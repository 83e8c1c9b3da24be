"""The local brokers the integration tests share: which service, which port, and their own counts.

``started(name)`` starts a broker's service if it is not running (``services.start`` is idempotent) and
leaves it running for the next test; ``broker_params`` marks each parametrized case with its broker's
name, so ``pytest -m activemq`` runs one of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

import services
from tests.integration import broker_stats


@dataclass(frozen=True)
class Broker:
    name: str
    service: str
    port: int
    management_port: int = 0

    @property
    def url(self) -> str:
        return f"stomp://127.0.0.1:{self.port}"

    def counters(self, destination: str) -> dict[str, int]:
        """The broker's own counts for a destination: ``accepted`` and ``delivered``."""
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


BROKERS = {
    "activemq": Broker("activemq", "activemq", services.PORTS["activemq"]["stomp"]),
    "activemq-persistent": Broker(
        "activemq-persistent", "activemq-persistent", services.PORTS["activemq-persistent"]["stomp"]
    ),
    "activemq-stress": Broker("activemq-stress", "activemq-stress", services.PORTS["activemq-stress"]["stomp"]),
    "rabbitmq": Broker(
        "rabbitmq", "rabbitmq", services.PORTS["rabbitmq"]["stomp"], services.PORTS["rabbitmq"]["management"]
    ),
}


def broker_params(*names: str) -> list[Any]:
    return [pytest.param(name, marks=getattr(pytest.mark, name.split("-")[0]), id=name) for name in names]


def started(name: str) -> Broker:
    broker = BROKERS[name]
    services.start(broker.service)
    return broker
