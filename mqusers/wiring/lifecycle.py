"""How a test ends across processes: producers stop first, consumers drain, workers ship progress.

Wired by :mod:`mqusers.wiring.plugin` to Locust's ``test_stopping`` (every end: -t, the web UI's Stop,
mqusers' own end of a fixed count) and ``quitting`` (Ctrl-C, SIGTERM: Locust quits without
stopping the test; stopping it here makes it drain and report). :class:`mqusers.run.ending.Drain`
decides when the drain is over. While a single process runs, its ledgers are folded into the
audit every second so they never grow with messages. At the end, :func:`write_report` writes the
one report of the run (master or single process).
"""

from __future__ import annotations

from locust.env import Environment
from locust.runners import STATE_RUNNING, STATE_SPAWNING, MasterRunner, WorkerRunner

import contextlib
import itertools
import logging
import signal
import time
import weakref
from typing import Any

import gevent

from mqusers.measure.names import RECEIVE, split_event_name
from mqusers.report.build import RunFacts, build_report, gate_failures
from mqusers.report.failover import failover_document
from mqusers.report.htmlreport import write_html
from mqusers.report.reportformats import report_document, write_csv, write_json
from mqusers.run.context import FLUSH_EVERY_S, RunContext, context
from mqusers.run.ending import DrainOutcome, arrival
from mqusers.run.faults import FaultSchedule, known_secrets
from mqusers.run.locust_stats import trim_per_second
from mqusers.run.verdicts import broker_p99_ms, overall
from mqusers.webui.pages import show_report
from mqusers.wiring import brokerwatch, endscreen, fdlimit, lostworkers, roles

logger = logging.getLogger(__name__)

STOP_PRODUCING = "mqusers_stop_producing"
PROGRESS = "mqusers_progress"
#: The master's receipt for a worker's final shipment.
FINAL_RECEIVED = "mqusers_final_received"
#: How long a worker quitting on its own (Ctrl-C reaches every process) waits for that receipt.
FINAL_RECEIPT_WAIT_S = 5.0
#: While draining, workers ship their tallies and audit this often (the drain's idle clock needs them).
PROGRESS_EVERY_S = 0.25
#: Locust's per-second counts are trimmed every this many flushes (10 s).
TRIM_EVERY_TICKS = 50
#: A single process folds its ledgers into the audit this often, so they never grow with messages.
MERGE_EVERY_S = 1.0
#: How long quitting waits for an end under way in another greenlet to write the report: the master
#: waits up to 15 s for workers' final tallies, the broker's last reading up to ~3 s.
REPORT_WAIT_S = 30.0


def flush_every(environment: Environment, ctx: RunContext) -> None:
    """Recorded successes to the book, Locust's stats (the web UI) and the sinks; now and then Locust's
    per-second counts trimmed to the last minute (the master's too: it merges every worker's)."""
    for tick in itertools.count(1):
        gevent.sleep(FLUSH_EVERY_S)
        ctx.recorder.flush()
        if tick % TRIM_EVERY_TICKS == 0:
            trim_per_second(environment.stats, int(time.time()))


def start_faults(ctx: RunContext, secrets: tuple[str, ...]) -> None:
    """The master (or local runner): this test's ``--mq-fault`` commands, each at its time."""
    ctx.faults = None
    if ctx.settings.faults:
        known = known_secrets([ctx.settings.password, *secrets])
        ctx.faults = FaultSchedule(ctx.settings.faults, known, ctx.annotate)
        ctx.faults.start()


def start_warmup(environment: Environment, ctx: RunContext) -> None:
    """Leave the warm-up out: every message sent before its end, wherever and whenever it arrives.

    Senders and receivers leave out each message stamped as sent before the instant (its send,
    receipt, round trip, receives), the recorder anything else recorded before it (schedule lag);
    events fired one by one (failures, other requests) are left out until the window opens.
    Workers move to the master's instant when its go arrives (:mod:`mqusers.coordination.messages`).
    """
    warmup = ctx.settings.warmup
    ctx.book.recording = ctx.series.recording = not warmup
    measured_from_ns = time.time_ns() + round(warmup * 1e9) if warmup else 0
    ctx.recorder.measure_from(measured_from_ns, (lambda: end_warmup(environment, ctx)) if warmup else None)
    if warmup:
        # Opens the window with no traffic too; 1 ms late so that a timer firing a hair early still does.
        gevent.spawn_later(warmup + 0.001, ctx.recorder.flush)
    if ctx.coordinator is not None:  # distributed: workers take the master's instant with the go
        ctx.coordinator.measured_from_ns = measured_from_ns
        ctx.coordinator.follower.on_measured_from = ctx.recorder.move_measured_from


def end_warmup(environment: Environment, ctx: RunContext) -> None:
    """The window opens (the recorder calls it before handing on any of the window's samples)."""
    ctx.book.recording = ctx.series.recording = True
    # Locust's tables leave the warm-up out too, as --reset-stats does at the end of spawning: one story.
    environment.stats.reset_all()


def fold_ledgers_every_second(ctx: RunContext) -> None:
    while True:
        gevent.sleep(MERGE_EVERY_S)
        ctx.fold_ledgers()


def ship_progress(ctx: RunContext, runner: WorkerRunner) -> None:
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
    if isinstance(runner, MasterRunner) and not lostworkers.alive(runner) <= ctx.progressed:
        return None  # some worker's last sends may not be in the audit yet
    return arrival(ctx.audit.verdict(time.time_ns(), 0, offsets(ctx), settled=False).values())


def on_test_stopping(environment: Environment, **_: Any) -> None:
    ctx = context(environment)
    ctx.producing = False
    runner = environment.runner
    if isinstance(runner, WorkerRunner) or ctx.drain is None or ctx.error:
        return
    if isinstance(runner, MasterRunner):
        runner.send_message(STOP_PRODUCING, {})
    settings = ctx.settings
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
            ctx.final_received.wait(FINAL_RECEIPT_WAIT_S)
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


def offsets(ctx: RunContext) -> dict[str, int]:
    conductor = ctx.coordinator.conductor if ctx.coordinator is not None else None
    return conductor.offsets_by_tag() if conductor is not None else {}


def write_report(environment: Environment, ctx: RunContext, stopped: float) -> None:
    """The run's report: summary, the JSON / HTML / CSV files asked for, the web UI's tab, gates and exit code."""
    settings = ctx.settings
    outcome = (ctx.drain.outcome if ctx.drain else None) or DrainOutcome(False, 0.0, "no drain")
    runner = environment.runner
    lost = lostworkers.lost_workers(ctx, runner) if isinstance(runner, MasterRunner) else []
    gone = frozenset(worker["process"] for worker in lost)
    verdict = ctx.audit.verdict(time.time_ns(), 0, offsets(ctx), settled=outcome.settled, lost_processes=gone)
    facts = RunFacts(
        run_id=ctx.run_id,
        started=ctx.started,
        stopped=stopped,
        ended_by=ctx.ended_by,
        drain=outcome,
        clocks=_clock_offsets(ctx),
        generator=overall(ctx.generators, broker_p99_ms(ctx.book.tallies)),
        failover=failover_document(ctx.outages.records, ctx.outages.overflow, ctx.series, time.time_ns()),
        faults=ctx.faults.records if ctx.faults is not None else [],
        broker=brokerwatch.document(ctx),
        produces=environment.runner is not None and roles.produces(environment.runner.user_classes),
        scenario=endscreen.scenario_of(environment, ctx),
        out_of_files=fdlimit.failures(environment.stats.errors),
        lost_workers=[dict(worker) for worker in lost],
        start_failures=ctx.start_failures.document(),
    )
    report = build_report(ctx.book, verdict, facts, settings, ctx.series)
    written: list[str] = []
    try:
        document = report_document(report)
        if settings.report_json:
            write_json(settings.report_json, document)
            written.append(settings.report_json)
        if settings.report_html:
            write_html(settings.report_html, [document], [f"run {ctx.run_id}"])
            written.append(settings.report_html)
        if settings.report_csv:
            write_csv(settings.report_csv, report.rows)
            written.append(settings.report_csv)
    except OSError as error:
        logger.error("mqusers: cannot write the report %s: %s", error.filename, error.strerror)
        environment.process_exit_code = max(environment.process_exit_code or 0, 2)
    show_report(environment, report)
    failures = gate_failures(report)
    if failures:
        environment.process_exit_code = 3
    elif ctx.ended_by in ("interrupt", "quit"):
        environment.process_exit_code = max(environment.process_exit_code or 0, 1)
    ctx.summary = endscreen.Summary(report, written, failures) if ctx.book.tallies or ctx.generators else None
    if not endscreen.quits_after(environment):
        endscreen.print_summary(environment)  # a web UI run: its summary now, the process goes on


def _clock_offsets(ctx: RunContext) -> dict[str, dict[str, float]]:
    """Each worker's clock minus the master's, with the error bound of the minimum-RTT sample and
    the offset consumers corrected with (0 when within the error), in ms."""
    conductor = ctx.coordinator.conductor if ctx.coordinator is not None else None
    if conductor is None:
        return {}
    return {
        worker: {
            "offset_ms": c.offset_ns / 1e6,
            "error_ms": c.error_ns / 1e6,
            "rtt_ms": c.rtt_ns / 1e6,
            "applied_ms": c.applied_ns / 1e6,
        }
        for worker, c in conductor.clocks.items()
    }
