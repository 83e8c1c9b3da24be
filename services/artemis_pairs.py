"""Artemis primary/backup pairs: one shared journal folder, or a journal replicated to the backup.

- ``artemis-shared-a`` (primary) / ``-b`` (backup): one journal, paging and bindings folder,
  ``<state dir>/artemis-shared-store/``; its file lock elects the active broker.
- ``artemis-replicated-a`` (primary) / ``-b`` (backup): each broker its own journal; the backup
  copies the active broker's over a cluster connection (a static connector to the other broker
  on 127.0.0.1: the default UDP discovery would leave loopback).

Either fails over on a kill or a stop (``failover-on-shutdown``) and never fails back: a broker
restarted after its pair took over waits as the backup (``allow-failback`` false, and a
replicating primary first looks for an active broker of its own node id, so it never starts as a
second active broker with a stale journal). A pair's broker is ready when it serves STOMP, or
when it logged "backup announced" since this launch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import artemis
from .base import Ctx, ServiceError, live_pid, stomp_handshake
from .cluster import logged_since_launch, marked
from .control import Service

SHARED_STORE = "artemis-shared-store"  # folder under the state dir, beside the brokers' own
# Artemis logs this once a standby broker has registered with the active one (replicated: once in sync).
ANNOUNCED = "AMQ221031: backup announced"
# A replicating pair of two cannot win a quorum vote once one broker is gone, and would shut the
# survivor down; on one machine the pair's network cannot split.
NO_VOTE = ("<vote-on-replication-failure>true</vote-on-replication-failure>",
           "<vote-on-replication-failure>false</vote-on-replication-failure>"
           "<check-for-active-server>true</check-for-active-server>")  # fmt: skip
SHARED_BACKUP = (
    "<failover-on-shutdown>true</failover-on-shutdown>",
    "<failover-on-shutdown>true</failover-on-shutdown><allow-failback>false</allow-failback>",
)
REPLICATED_BACKUP = ("<backup/>", "<backup><allow-failback>false</allow-failback></backup>")


@dataclass(frozen=True)
class Pair:
    """A primary/backup pair: its brokers, their port shifts, and how their stores are shared."""

    names: tuple[str, str]
    shifts: tuple[int, int]
    options: tuple[str, ...]
    #: broker.xml's text that ``artemis create`` writes, and what it becomes: (primary, backup).
    edits: tuple[tuple[str, str] | None, tuple[str, str]]


PAIRS = {
    "artemis-shared": Pair(
        names=("artemis-shared-a", "artemis-shared-b"),
        shifts=(110, 120),
        options=("--shared-store",),
        edits=(None, SHARED_BACKUP),
    ),
    "artemis-replicated": Pair(
        names=("artemis-replicated-a", "artemis-replicated-b"),
        shifts=(130, 140),
        options=("--replicated",),
        edits=(NO_VOTE, REPLICATED_BACKUP),
    ),
}


def _replace(ctx: Ctx, edit: tuple[str, str] | None) -> Callable[[str], str]:
    def rewrite(config: str) -> str:
        if edit is None:
            return config
        old, new = edit
        if config.count(old) != 1:
            raise ServiceError(f"{ctx.name}: artemis create's broker.xml no longer holds {old!r}")
        return config.replace(old, new)

    return rewrite


def _launcher(pair: Pair, index: int) -> Callable[[Ctx], int]:
    def launch(ctx: Ctx) -> int:
        other_core = artemis.DEFAULT_PORTS["core"] + pair.shifts[1 - index] + ctx.offset
        options = [*pair.options, "--clustered", "--staticCluster", f"tcp://{ctx.host}:{other_core}",
                   "--cluster-user", artemis.USER, "--cluster-password", artemis.PASSWORD,
                   "--failover-on-shutdown"]  # fmt: skip
        if index == 1:
            options.append("--backup")
        if "--shared-store" in pair.options:
            store = ctx.dir.parent / SHARED_STORE
            store.mkdir(parents=True, exist_ok=True)
            options += ["--data", str(store)]
        return artemis.run(ctx, artemis.create(ctx, pair.shifts[index], options, _replace(ctx, pair.edits[index])))

    return marked(launch)


def serving(ctx: Ctx) -> bool:
    return live_pid(ctx) is not None and stomp_handshake(ctx.ports["stomp"], host=ctx.host)


def ready(ctx: Ctx) -> bool:
    return serving(ctx) or logged_since_launch(ctx, ANNOUNCED)


def role(ctx: Ctx) -> str:
    if serving(ctx):
        return "active"
    return "backup" if logged_since_launch(ctx, ANNOUNCED) else "starting"


SERVICES = [
    Service(
        name=name,
        package=artemis.SERVICE.package,
        base_ports={key: port + shift for key, port in artemis.DEFAULT_PORTS.items()},
        launch=_launcher(pair, index),
        ready=ready,
        role=role,
        logs=artemis.logs,
        prepare=artemis.prepare,
    )
    for pair in PAIRS.values()
    for index, (name, shift) in enumerate(zip(pair.names, pair.shifts, strict=True))
]
