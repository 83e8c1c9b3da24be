"""How a test ends across processes: producers stop first, consumers drain, workers ship progress.

Wired by :mod:`mqusers.wiring.plugin` to Locust's ``test_stopping`` (every end: -t, the web UI's Stop,
mqusers' own end of a fixed count) and ``quitting`` (Ctrl-C, SIGTERM: Locust quits without
stopping the test; stopping it here makes it drain and report). :class:`mqusers.run.ending.Drain`
decides when the drain is over; meanwhile workers ship their progress. The report itself is
:mod:`mqusers.wiring.runreport`'s, the workers' final shipments :mod:`mqusers.wiring.finals`'.
"""

from __future__ import annotations

from locust.env import Environment
from locust.runners import STATE_RUNNING, STATE_SPAWNING, MasterRunner, WorkerRunner

import contextlib
import logging
import signal
import time
import weakref
from typing import Any

import gevent

from mqusers.measure.names import RECEIVE, split_event_name
from mqusers.run.context import RunContext, context
from mqusers.run.ending import ALL_ARRIVED, NOTHING_SENT, arrival
from mqusers.wiring import finals, lostworkers, phases

logger = logging.getLogger(__name__)

STOP_PRODUCING = "mqusers_stop_producing"
PROGRESS = "mqusers_progress"
#: While draining, workers ship their tallies and audit this often (the drain's idle clock needs them).
PROGRESS_EVERY_S = 0.25
#: How often an ending worker looks whether its producers' last RECEIPTs have come.
IN_DOUBT_POLL_S = 0.01
#: How long quitting waits for an end under way in another greenlet to write the report: the master
#: waits up to 15 s for workers' final tallies, the broker's last reading up to ~3 s.
REPORT_WAIT_S = 30.0


def sends_in_doubt(ctx: RunContext) -> bool:
    """True while a producer of this process awaits a RECEIPT (or a reply): that send is in no ledger yet."""
    return any(client.awaiting for _, client in ctx.producers)


def ship_progress(ctx: RunContext, runner: WorkerRunner) -> None:
    # The master's drain counts this worker's sends whole from its first shipment: hold it until the
    # RECEIPTs its producers await have come or timed out (each wait is bounded by --mq-timeout).
    deadline = time.monotonic() + ctx.settings.timeout + 1.0
    while sends_in_doubt(ctx) and time.monotonic() < deadline:
        gevent.sleep(IN_DOUBT_POLL_S)
    while True:
        runner.send_message(PROGRESS, ctx.shipping.payload())
        gevent.sleep(PROGRESS_EVERY_S)


def stop_producing(ctx: RunContext, runner: WorkerRunner) -> None:
    ctx.producing = False
    if ctx.pump is None:
        ctx.pump = gevent.spawn(ship_progress, ctx, runner)


def on_progress(ctx: RunContext, msg: Any) -> None:
    ctx.shipping.take(msg.data, msg.node_id)
    ctx.progressed.add(msg.node_id)


def deliveries(ctx: RunContext) -> int:
    ctx.recorder.flush()
    return sum(t.count for name, t in ctx.book.tallies.items() if split_event_name(name)[0] == RECEIVE)


def refresh(environment: Environment, ctx: RunContext) -> None:
    if not isinstance(environment.runner, MasterRunner):
        ctx.fold_ledgers()


def all_arrived(environment: Environment, ctx: RunContext) -> str | None:
    runner = environment.runner
    if ctx.backlog is not None and not ctx.backlog.ready():
        return None  # a backlog run's consumers have not all subscribed yet
    if isinstance(runner, MasterRunner) and not lostworkers.alive(runner) <= ctx.progressed:
        return None  # some worker's last sends may not be in the audit yet
    arrived = arrival(ctx.audit.verdict(time.time_ns(), 0, ctx.clock_offsets(), settled=False).values())
    if arrived in (ALL_ARRIVED, NOTHING_SENT) and sends_in_doubt(ctx):
        return None  # a send awaiting its RECEIPT is in no ledger yet: its message may still come
    return arrived


def on_test_stopping(environment: Environment, **_: Any) -> None:
    ctx = context(environment)
    ctx.producing = False
    runner = environment.runner
    if isinstance(runner, WorkerRunner) or ctx.drain is None or ctx.error:
        return
    if isinstance(runner, MasterRunner):
        runner.send_message(STOP_PRODUCING, {})
    settings = ctx.settings
    phases.end_build(ctx)
    ctx.drain.run(settings.drain, None if ctx.ended_by == "count" else settings.drain_max)


def catch_interrupts(environment: Environment) -> None:
    """Ctrl-C as Locust means it (stop, report, exit), raised in the main greenlet, never in a User's.

    Python raises KeyboardInterrupt in whatever greenlet runs when the signal lands: a User would
    die with a traceback mid-send. Through gevent's handler the hub takes the signal instead; while
    a drain runs, Ctrl-C cuts it short rather than abandoning the report.
    """

    def on_interrupt() -> None:
        _signalled.add(environment)
        if context(environment).interrupt_drain():
            return
        hub = gevent.get_hub()
        hub.parent.throw(KeyboardInterrupt())

    # Not the main thread (an embedding program): leave its signals alone.
    with contextlib.suppress(ValueError):
        gevent.signal_handler(signal.SIGINT, on_interrupt)
        # Beside Locust's own SIGTERM handler (registered after this one, run after it): only notes the signal.
        gevent.signal_handler(signal.SIGTERM, lambda: _signalled.add(environment))


#: Environments that received Ctrl-C or SIGTERM: any other quit during a test is not an interruption.
_signalled: weakref.WeakSet[Environment] = weakref.WeakSet()


def on_quitting(environment: Environment, **_: Any) -> None:
    """Ctrl-C or SIGTERM: Locust quits without stopping the test first; stop it, so it drains and reports."""
    runner = environment.runner
    if runner is None:
        return
    ctx = context(environment)
    if isinstance(runner, WorkerRunner):
        if lostworkers.master_gone(runner):
            logger.error("mqusers: no heartbeat from the master for %g s: this worker stops, its figures reach no "
                         "report", lostworkers.MASTER_TIMEOUT_S)  # fmt: skip
            environment.process_exit_code = 1
            if not ctx.stopped:
                runner.stop()
            return
        if not ctx.stopped:
            # Its own Ctrl-C: stop now (the final shipment goes out) and wait until the master has it,
            # or the process exits with the message still queued in its socket.
            runner.stop()
            ctx.final_received.wait(finals.FINAL_RECEIPT_WAIT_S)
        return
    if ctx.interrupt_drain() or ctx.stopped:
        # An end under way in another greenlet (mqusers' own end of a fixed count, with -t or SIGTERM
        # landing during it): the process exits when quitting returns, so the report must be written first.
        if not ctx.reported.wait(REPORT_WAIT_S):
            logger.error("mqusers: the run's end did not finish within %g s of quitting: no report", REPORT_WAIT_S)
            environment.process_exit_code = max(environment.process_exit_code or 0, 2)
        return
    if runner.state in (STATE_RUNNING, STATE_SPAWNING):
        # Without a signal Locust quits mid-test when its last greenlet died (an unhandled error).
        ctx.ended_by = "interrupt" if environment in _signalled else "quit"
        runner.stop()
