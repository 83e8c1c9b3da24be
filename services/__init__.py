"""Real services for mqusers' tests and benchmarks, from Debian packages (Artemis, Classic 6: from Maven Central).

Each service runs in its own folder ``<state dir>/<name>/`` (default
``<project root>/.services``, env ``MQUSERS_SERVICES_DIR``), listens on
127.0.0.1 only and is stopped by the PID in its PID file. Env
``MQUSERS_PORT_OFFSET=N`` shifts every port so a second set can run alongside.
ActiveMQ also honours ``MQUSERS_BIND_HOST=ADDR`` (listen there instead; the
readiness probes connect there from the caller's namespace) and
``MQUSERS_NETNS=NS`` (run inside ``ip netns`` NS; needs a bind host routable
from the caller), as tests/integration/test_netns.py uses them.

    import services
    services.start("activemq")          # idempotent; raises ServiceError on failure
    services.PORTS["activemq"]["stomp"]  # 61613 (+ offset)
    services.stop("activemq")

``artemis`` is ActiveMQ Artemis 2.40.0, downloaded once (SHA-512 checked) into ``<project>/.services/cache/``
by the first start; its STOMP acceptor is 61713 (+ offset). ``activemq6`` is ActiveMQ Classic 6.1.8
assembled from its Maven Central jars the same way (STOMP 61620;
``activemq6-persistent``, with KahaDB: 61622).

Master/slave pairs (services/cluster.py): ``activemq-shared-a``/``-b`` share one KahaDB
folder, ``activemq-jdbc-a``/``-b`` one PostgreSQL database (start ``postgresql`` first).
Artemis primary/backup pairs (services/artemis_pairs.py): ``artemis-shared-a``/``-b`` share one
journal folder, ``artemis-replicated-a``/``-b`` replicate theirs.
Networks (docs/topologies.md): ActiveMQ Classic's ``activemq-net-a``/``-b``/``-c`` (services/network.py) and
Artemis clusters ``artemis-cluster-a``/``-b``/``-c`` (services/artemis_cluster.py).
Start both of a pair; ``master_of(PAIRS["shared"])`` says which one serves STOMP.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import (
    activemq,
    activemq6,
    artemis,
    artemis_cluster,
    artemis_pairs,
    cluster,
    control,
    metrics,
    network,
    postgresql,
    rabbitmq,
)
from .base import ServiceError, ensure_packages, live_pid, package_installed, port_offset, state_dir
from .control import Service

SERVICES: dict[str, Service] = {
    service.name: service
    for service in [
        *activemq.SERVICES,
        activemq6.SERVICE,
        activemq6.PERSISTENT,
        artemis.SERVICE,
        rabbitmq.SERVICE,
        *metrics.SERVICES,
        postgresql.SERVICE,
        *cluster.SERVICES,
        *artemis_pairs.SERVICES,
        *network.SERVICES,
        *artemis_cluster.SERVICES,
    ]
}

__all__ = [
    "PAIRS",
    "PORTS",
    "SERVICES",
    "ServiceError",
    "install",
    "is_running",
    "master_of",
    "pid",
    "port_offset",
    "ports",
    "start",
    "state_dir",
    "status",
    "stop",
]


def _service(name: str) -> Service:
    try:
        return SERVICES[name]
    except KeyError:
        known = ", ".join(SERVICES)
        raise ServiceError(f"unknown service {name!r} (known: {known})") from None


def ports(name: str) -> dict[str, int]:
    """Ports of ``name`` with the current MQUSERS_PORT_OFFSET applied."""
    return dict(_service(name).ctx().ports)


#: The pairs' broker names: Classic's master/slave "shared" (one KahaDB folder) and "jdbc" (one PostgreSQL
#: database); Artemis's primary/backup "artemis-shared" (one journal folder) and "artemis-replicated".
PAIRS: dict[str, tuple[str, str]] = {
    kind: pair.names for kind, pair in [*cluster.PAIRS.items(), *artemis_pairs.PAIRS.items()]
}
#: What a pair's broker that serves STOMP calls itself: Classic's "master", Artemis's "active".
SERVING_ROLES = ("master", "active")

# Snapshot at import time; call ports() if the offset env var changes later.
PORTS: dict[str, dict[str, int]] = {name: ports(name) for name in SERVICES}


def start(name: str, timeout: float = control.START_TIMEOUT) -> bool:
    """Start ``name`` and wait until it answers; raises ServiceError on failure.

    Returns True if it was started, False if it already ran (then a no-op).
    """
    return control.start(_service(name), timeout)


def install(names: Iterable[str], debian: Iterable[str] = ()) -> None:
    """What ``start`` of each of ``names`` would install or download first, without starting any: their Debian
    packages (and ``debian``) in one ``apt-get`` run, then their downloads (Artemis, Classic 6's jars)."""
    chosen = [_service(name) for name in names]
    prepares = list(dict.fromkeys(service.prepare for service in chosen if service.prepare is not None))
    packages = [*(service.package for service in chosen), *debian]
    if not (shutil.which("mvn") and package_installed("maven")):  # the downloads would need apt for Maven first
        ensure_packages(packages)
        for prepare in prepares:
            prepare()
        return
    # Maven is here: the downloads go on beside apt (one waits on Maven Central, the other on Debian's mirror).
    with ThreadPoolExecutor(max_workers=1) as downloads:
        downloaded = downloads.submit(lambda: [prepare() for prepare in prepares])
        ensure_packages(packages)
        downloaded.result()


def stop(name: str) -> bool:
    """Stop ``name``; True if a process was stopped, False if none was running."""
    return control.stop(_service(name))


def is_running(name: str) -> bool:
    """Our process for ``name`` is alive and answers its readiness probe."""
    return control.is_running(_service(name))


def pid(name: str) -> int:
    """The PID of our running ``name`` (tests freeze or kill it); raises ServiceError when none runs."""
    found = live_pid(_service(name).ctx())
    if found is None:
        raise ServiceError(f"{name} is not running")
    return found


def certificate(name: str) -> Path:
    """PEM certificate of an ActiveMQ service's stomp+ssl connector (exists once it has started)."""
    return activemq.certificate(_service(name).ctx())


def status() -> list[str]:
    """One human-readable line per service."""
    return [control.status_line(service) for service in SERVICES.values()]


def _serves(service: Service) -> bool:
    ctx = service.ctx()
    return service.role is not None and live_pid(ctx) is not None and service.role(ctx) in SERVING_ROLES


def master_of(names: Iterable[str]) -> str | None:
    """The broker of a master/slave pair that serves STOMP now; None if neither does.

    Raises ServiceError if more than one does: two masters on one store is a broken pair.
    """
    masters = [name for name in names if _serves(_service(name))]
    if len(masters) > 1:
        raise ServiceError(f"{' and '.join(masters)} serve STOMP at once: more than one master")
    return masters[0] if masters else None
