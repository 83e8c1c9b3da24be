"""The final merge: each worker's last shipment at stop, the master's receipt, the master's wait for all.

A worker sends :data:`FINAL_TALLIES` when its test stops (its last payload, ahead of Locust's
``client_stopped`` on the same socket); the master merges it, confirms it with
:data:`FINAL_RECEIVED` and, when Locust stops the master first (``--run-time``), asks the workers
still running to :data:`FINISH` and waits for their finals, bounded; workers Locust marks missing
are not waited for (:mod:`mqusers.wiring.lostworkers`).
"""

from __future__ import annotations

from locust.runners import MasterRunner, WorkerRunner

import logging
import time
from typing import Any

from mqusers.run.context import RunContext
from mqusers.wiring import lostworkers

logger = logging.getLogger(__name__)

FINAL_TALLIES = "mqusers_final_tallies"
FINISH = "mqusers_finish"
#: The master's receipt for a worker's final shipment.
FINAL_RECEIVED = "mqusers_final_received"
#: How long a worker quitting on its own (Ctrl-C reaches every process) waits for that receipt.
FINAL_RECEIPT_WAIT_S = 5.0
#: How long the master waits for workers' final tallies when Locust quits without stopping them.
FINAL_WAIT_S = 15.0


def send_final(ctx: RunContext, runner: WorkerRunner) -> None:
    """A worker's last shipment. It sends no stats report between "stop" and "client_stopped"; this
    message goes first on the same socket, so the master's summary holds every last message."""
    runner.send_message(FINAL_TALLIES, ctx.shipping.payload(final=True))


def on_final(ctx: RunContext, runner: MasterRunner, msg: Any) -> None:
    """The master: a worker's final shipment merged and confirmed."""
    ctx.shipping.take(msg.data, msg.node_id)
    runner.send_message(FINAL_RECEIVED, {}, client_id=msg.node_id)
    ctx.finals.add(msg.node_id)
    if lostworkers.alive(runner) <= ctx.finals:
        ctx.finals_arrived.set()


def collect_finals(ctx: RunContext, runner: MasterRunner) -> None:
    """On quit (e.g. --run-time) Locust stops the master before its workers: ask them to stop now.

    Workers Locust marks missing (no heartbeat) are not waited for, even one going missing meanwhile.
    """
    pending = lostworkers.alive(runner) - ctx.finals
    for worker in pending:
        runner.send_message(FINISH, {}, client_id=worker)
    deadline = time.monotonic() + FINAL_WAIT_S
    while not lostworkers.alive(runner) <= ctx.finals and time.monotonic() < deadline:
        ctx.finals_arrived.wait(min(1.0, deadline - time.monotonic()))
    missing = sorted(set(ctx.heard) - ctx.finals)
    if missing:
        logger.warning("mqusers: no final tallies from %s: reported as lost", ", ".join(missing))
