"""Workers lost mid-test (killed, out of memory, unreachable): who, when, and what they had reported.

The master learns each worker's process tag and the time of its every shipment (a ``Shipping``
part) and of its last heartbeat (Locust's ``heartbeat_sent``: the master's answer to one). A worker
Locust marks missing (no heartbeat for ``HEARTBEAT_LIVENESS`` s) is waited for no longer; at the
end, a worker heard from this test whose final shipment never came is lost: its last seconds are
unknown, so the audit counts what it may have sent or received as ``worker_lost``
(:mod:`mqusers.audit.audit`) and a gate fails on it (:func:`mqusers.report.gates.gate_failures`, which words it).

The other way round, a worker whose master is gone stops after ``MASTER_TIMEOUT_S`` without its
heartbeat and exits 1: its figures reach no report.
"""

from __future__ import annotations

from locust import runners
from locust.env import Environment
from locust.runners import STATE_MISSING, MasterRunner, WorkerRunner

import os
import socket
import time
import weakref
from typing import TypedDict

from mqusers.run.context import RunContext

PROCESS = "mqusers_process"
#: A worker that has heard no heartbeat from its master for this long stops (Locust's own: 60 s, exit 0).
MASTER_TIMEOUT_S = 15


class LostWorker(TypedDict):
    """A worker whose final shipment never came; times in s since the test's start (None: never heard)."""

    worker: str
    #: Its Locust client id's host part (ids are "<host>_<random>").
    host: str
    #: Its process tag: the ``process`` of its producers and subscriptions in the audit.
    process: str
    last_heartbeat_s: float | None
    last_report_s: float | None
    #: What its last shipment had: distinct seqs sent and deliveries taken, all destinations.
    reported: dict[str, int]


def attach(environment: Environment, ctx: RunContext) -> None:
    """Both sides: workers ship their process tag; the master notes who shipped when, and heartbeats."""

    def heard(tag: str, node: str) -> None:
        ctx.heard[node] = (tag, time.time())

    def beat(client_id: str, timestamp: float, **_: object) -> None:
        ctx.heartbeats[client_id] = timestamp

    ctx.shipping.register(PROCESS, lambda _: ctx.process_tag, heard)
    environment.events.heartbeat_sent.add_listener(beat)  # type: ignore[no-untyped-call]


def alive(runner: MasterRunner) -> set[str]:
    """The workers Locust has not marked missing: the only ones worth waiting for."""
    return {node for node, worker in runner.clients.items() if worker.state != STATE_MISSING}


def lost_workers(ctx: RunContext, runner: MasterRunner) -> list[LostWorker]:
    """This test's workers (every one heard from, and Locust's whose clock was read at the start, missing
    ones too) whose final shipment did not come; one never heard from has its clock answers' tag."""
    since, tags = ctx.started, ctx.coordinator.conductor.tags if ctx.coordinator and ctx.coordinator.conductor else {}
    out = []
    for node in sorted(((set(runner.clients) & set(tags)) | set(ctx.heard)) - ctx.finals):
        tag, last = ctx.heard.get(node, (tags.get(node, ""), None))
        beat = ctx.heartbeats.get(node)
        out.append(LostWorker(worker=node, host=node.rsplit("_", 1)[0], process=tag,
                              last_heartbeat_s=None if beat is None else round(beat - since, 3),
                              last_report_s=None if last is None else round(last - since, 3),
                              reported=ctx.audit.shipped_by(tag)))  # fmt: skip
    return out


def deserted(runner: MasterRunner) -> bool:
    """Every worker of this test marked missing (Locust then stops the test): no worker is left to wait for."""
    return bool(runner.clients) and not alive(runner)


def deserted_line(runner: MasterRunner, seconds: float) -> str:
    """Why a run ends early with every worker missing, and what to do: one line, the processes per core here."""
    here = socket.gethostname()
    local = sum(1 for node in runner.clients if node.rsplit("_", 1)[0] == here)
    cores = os.cpu_count() or 1
    starved = (
        (
            f"; {local} of them on this host's {cores} cores ({local / cores:g} a core): starved of CPU, a "
            "process sends no heartbeat, so run fewer processes a core (--processes) or more hosts"
        )
        if local
        else ""
    )
    return (
        f"every worker went missing {seconds:.1f} s into the test (Locust heard no heartbeat for "
        f"{runners.HEARTBEAT_LIVENESS + 1} s from any of {len(runner.clients)}): the run ends now, its figures "
        f"partial; a stalled or starved worker, or the network to the master's port, stops heartbeats{starved}"
    )


def watch_master(runner: WorkerRunner) -> None:
    """A worker: Locust's heartbeat checker reads this module global every second, and calls ``quit()``
    when the master is silent; that call, and only it, is remembered as the master gone. A worker the
    master told to quit may quit much later (a Prometheus endpoint lingering for its last scrape), its
    master's heartbeats long over: that is a normal end."""
    runners.MASTER_HEARTBEAT_TIMEOUT = MASTER_TIMEOUT_S
    quit_now = runner.quit

    def quit() -> None:
        last = runner.last_heartbeat_timestamp
        if last is not None and time.time() - last > MASTER_TIMEOUT_S:
            _abandoned.add(runner)
        quit_now()

    runner.quit = quit  # type: ignore[method-assign]


#: Workers whose heartbeat checker quit them: no word from the master for ``MASTER_TIMEOUT_S``.
_abandoned: weakref.WeakSet[WorkerRunner] = weakref.WeakSet()


def master_gone(runner: WorkerRunner) -> bool:
    """Locust's checker quit this worker: no heartbeat from the master for ``MASTER_TIMEOUT_S``."""
    return runner in _abandoned
