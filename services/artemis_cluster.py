"""Artemis clusters: nodes joined by cluster connections, messages load-balanced on demand and redistributed.

- ``artemis-cluster-a`` / ``-b`` / ``-c``: each node its own journal, a cluster connection with a
  static connector to every other node on 127.0.0.1 (the default UDP discovery would leave loopback).
  Start ``a`` and ``b`` for a cluster of 2; ``c`` as well for a cluster of 3 (a connector to a node
  that is not running retries in the background).

What the brokers document as the settings that decide where a message goes: ``ON_DEMAND`` load
balancing (a message is sent on to another node only when that node has a consumer of its queue),
``max-hops`` 1, and a redistribution delay of 0 on every address (a node whose last consumer left
passes what it holds on to a node that has consumers). ``MQUSERS_CLUSTER_BALANCING`` picks another
policy at start (``STRICT``, ``OFF``, ``OFF_WITH_REDISTRIBUTION``).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from . import artemis
from .base import Ctx, ServiceError
from .control import Service

NAMES = ("artemis-cluster-a", "artemis-cluster-b", "artemis-cluster-c")
SHIFTS = (150, 160, 170)
POLICIES = ("ON_DEMAND", "STRICT", "OFF", "OFF_WITH_REDISTRIBUTION")
ADDRESS_SETTING = '<address-setting match="#">'
REDISTRIBUTION = "<redistribution-delay>0</redistribution-delay>"


def balancing() -> str:
    policy = os.environ.get("MQUSERS_CLUSTER_BALANCING", "ON_DEMAND").strip().upper()
    if policy not in POLICIES:
        raise ServiceError(f"MQUSERS_CLUSTER_BALANCING is one of {', '.join(POLICIES)}, not {policy!r}")
    return policy


def peers(name: str, host: str, offset: int) -> list[str]:
    """The core connectors of the other nodes, as ``--staticCluster`` takes them."""
    core = artemis.DEFAULT_PORTS["core"]
    return [f"tcp://{host}:{core + shift + offset}" for peer, shift in zip(NAMES, SHIFTS, strict=True) if peer != name]


def redistributed(config: str) -> str:
    """broker.xml with a redistribution delay of 0 on every address (``#``)."""
    if config.count(ADDRESS_SETTING) != 1:
        raise ServiceError(f"artemis create's broker.xml no longer holds one {ADDRESS_SETTING!r}")
    if REDISTRIBUTION in config:
        return config
    return config.replace(ADDRESS_SETTING, f"{ADDRESS_SETTING}\n            {REDISTRIBUTION}")


def _launcher(index: int) -> Callable[[Ctx], int]:
    def launch(ctx: Ctx) -> int:
        others = ",".join(peers(ctx.name, ctx.host, ctx.offset))
        options = ["--name", ctx.name, "--clustered", "--staticCluster", others, "--cluster-user", artemis.USER,
                   "--cluster-password", artemis.PASSWORD, "--message-load-balancing", balancing(),
                   "--max-hops", "1"]  # fmt: skip
        return artemis.run(ctx, artemis.create(ctx, SHIFTS[index], options, redistributed))

    return launch


SERVICES = [
    Service(
        name=name,
        package=artemis.SERVICE.package,
        base_ports={key: port + shift for key, port in artemis.DEFAULT_PORTS.items()},
        launch=_launcher(index),
        ready=artemis.ready,
        logs=artemis.logs,
        prepare=artemis.prepare,
    )
    for index, (name, shift) in enumerate(zip(NAMES, SHIFTS, strict=True))
]
