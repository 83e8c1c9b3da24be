"""Wiring into Locust: the option group, validation before load, the run id, the book, the summary.

Importing :mod:`mqusers` registers two listeners on ``locust.events`` (parser and init), the
usual way for a Locust extension; everything else is attached per ``Environment``.
"""

from __future__ import annotations

from locust import events
from locust.env import Environment
from locust.exception import StopTest
from locust.runners import STATE_RUNNING, STATE_SPAWNING, MasterRunner, WorkerRunner

import itertools
import logging
import secrets
import sys
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import gevent
from gevent.event import Event

from mqusers.client import ClientConfig, MqError, StompClient
from mqusers.coordination import Coordinator
from mqusers.ending import Drain, DrainOutcome
from mqusers.health import Health, overall
from mqusers.measure.audit import Audit, ReceiveLedger, SentLedger
from mqusers.measure.book import Book
from mqusers.options import Settings, add_arguments, read_settings
from mqusers.parsing import OptionError
from mqusers.report import (
    RunFacts,
    destination_rows,
    format_summary,
    gate_failures,
    report_document,
    write_csv,
    write_json,
)
from mqusers.sinks import influx
from mqusers.sinks.settings import add_influx_arguments

logger = logging.getLogger(__name__)
_summary_logger = logging.getLogger("locust.stats_logger")
FINAL_TALLIES = "mqusers_final_tallies"
FINISH = "mqusers_finish"
STOP_PRODUCING = "mqusers_stop_producing"
PROGRESS = "mqusers_progress"
#: How long the master waits for workers' final tallies when Locust quits without stopping them.
FINAL_WAIT_S = 15.0
#: While draining, workers ship their tallies and audit this often (the drain's idle clock needs them).
PROGRESS_EVERY_S = 0.25
#: A single process folds its ledgers into the audit this often, so they never grow with messages.
MERGE_EVERY_S = 1.0


@dataclass
class RunContext:
    """What one Environment's Users share for the current test."""

    settings: Settings
    run_id: str = ""
    #: Random per process, so producer ids stay unique across workers and hosts.
    process_tag: str = field(default_factory=lambda: secrets.token_hex(4))
    book: Book = field(default_factory=Book)
    started: float = 0.0
    error: str | None = None
    #: Workers whose final tallies the master has merged this test.
    finals: set[str] = field(default_factory=set)
    finals_arrived: Event = field(default_factory=Event)
    ordinals: dict[str, itertools.count[int]] = field(default_factory=dict)

    coordinator: Coordinator | None = None
    #: The message audit: what this process's producers sent and its subscriptions received, and
    #: (master or local runner) everything merged.
    sent: SentLedger = field(default_factory=SentLedger)
    received: ReceiveLedger = field(default_factory=ReceiveLedger)
    audit: Audit = field(default_factory=Audit)
    #: False once the run is ending: producers send nothing more.
    producing: bool = True
    #: (destination, client) of this process's producers, for the blocked-send watch.
    producers: list[tuple[str, Any]] = field(default_factory=list)
    health: Health = field(default_factory=lambda: Health("local"))
    #: The master's copy of every process's health report, by node.
    generators: dict[str, dict[str, Any]] = field(default_factory=dict)
    drain: Drain | None = None
    #: ``time`` (-t, the web UI's stop), ``count`` (--mq-total-messages done) or ``interrupt`` (Ctrl-C).
    ended_by: str = "time"
    stopped: bool = False
    #: Workers heard from since producing stopped: until all have, the master's audit is stale.
    progressed: set[str] = field(default_factory=set)
    pump: Any = None

    def drain_audit(self) -> list[Any]:
        return [self.sent.drain(), self.received.drain()]

    def merge_audit(self, drained: list[Any] | None) -> None:
        for delta in drained or ():
            self.audit.merge(delta)

    def payload(self) -> dict[str, Any]:
        """What a worker ships to the master: tallies and audit since the last time, and its health."""
        return {
            "mqusers": self.book.drain(),
            "mqusers_audit": self.drain_audit(),
            "mqusers_health": self.health.report(),
        }

    def take(self, data: dict[str, Any]) -> None:
        """Merge a worker's :meth:`payload` (the one way data reaches the master)."""
        self.book.merge(data.get("mqusers") or {})
        self.merge_audit(data.get("mqusers_audit"))
        health = data.get("mqusers_health")
        if health:
            self.generators[health["node"]] = health

    def next_ordinal(self, user_class: type) -> int:
        """0, 1, 2... per User class and test: stable names for durable subscribers."""
        return next(self.ordinals.setdefault(user_class.__name__, itertools.count()))


_contexts: weakref.WeakKeyDictionary[Environment, RunContext] = weakref.WeakKeyDictionary()


def context(environment: Environment) -> RunContext:
    """The environment's run context, created (and its book attached) on first use."""
    ctx = _contexts.get(environment)
    if ctx is None:
        ctx = _contexts[environment] = RunContext(read_settings(environment.parsed_options, environment.host))
        ctx.run_id = ctx.settings.run_id or secrets.token_hex(6)
        ctx.sent.process = ctx.received.process = ctx.process_tag
        environment.events.request.add_listener(ctx.book.on_request)
        runner = environment.runner
        node = (
            runner.client_id
            if isinstance(runner, WorkerRunner)
            else "master"
            if isinstance(runner, MasterRunner)
            else "local"
        )
        ctx.health = Health(node, producers=lambda: ctx.producers, fire=environment.events.request.fire)
    return ctx


def client_config(settings: Settings, client_id: str | None = None) -> ClientConfig:
    if settings.broker is None:
        raise MqError("no broker: pass --host stomp://HOST:PORT")
    return ClientConfig(
        address=settings.broker,
        user=settings.user,
        password=settings.password,
        vhost=settings.vhost,
        heartbeats=settings.heartbeats,
        timeout=settings.timeout,
        dialect=settings.dialect,
        client_id=client_id,
        ca_file=settings.ca_file,
    )


def preflight(settings: Settings) -> None:
    """Connect once with the run's address and credentials; raise :class:`MqError` if that fails."""
    client = StompClient(client_config(settings), fire=lambda **_: None)
    client.connect()
    client.disconnect()


def _fail(message: str) -> None:
    sys.stderr.write(f"mqusers: {message}\n")
    sys.exit(2)


@events.init_command_line_parser.add_listener
def _on_parser(parser: Any, **_: Any) -> None:
    add_influx_arguments(add_arguments(parser))  # one "mqusers" group in --help


@events.init.add_listener
def _on_init(environment: Environment, **_: Any) -> None:
    if environment.parsed_options is None:
        return
    try:
        ctx = context(environment)
    except OptionError as error:
        _fail(str(error))
        return
    options = environment.parsed_options
    if options.headless and not isinstance(environment.runner, WorkerRunner):
        problem = _consumers_problem(environment, ctx.settings, getattr(options, "num_users", None))
        if problem:
            _fail(problem)
    # Master and workers both validate; only a process that will run Users can judge the broker.
    if options.headless and not isinstance(environment.runner, MasterRunner):
        try:
            preflight(ctx.settings)
        except MqError as error:
            _fail(str(error))
    coordinator_for(environment, ctx)  # registers its messages before any worker connects
    environment.events.test_start.add_listener(_on_test_start)
    environment.events.test_stopping.add_listener(_on_test_stopping)
    environment.events.test_stop.add_listener(_on_test_stop)
    environment.events.quitting.add_listener(_on_quitting)
    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        environment.events.report_to_master.add_listener(lambda data, **_: data.update(ctx.payload()))
        runner.register_message(FINISH, lambda msg, **_: gevent.spawn(runner.stop))
        runner.register_message(STOP_PRODUCING, lambda msg, **_: _stop_producing(ctx, runner))
    if isinstance(runner, MasterRunner):
        environment.events.worker_report.add_listener(lambda data, **_: ctx.take(data))
        runner.register_message(FINAL_TALLIES, lambda msg, **_: _on_final(ctx, runner, msg))
        runner.register_message(PROGRESS, lambda msg, **_: _on_progress(ctx, msg))
    # Last: the listener's test_stop must run after the one above has collected the workers' finals.
    try:
        influx.attach(environment, ctx, audit=lambda: _audit_totals(ctx))
    except OptionError as error:
        _fail(str(error))


def _on_test_start(environment: Environment, **_: Any) -> None:
    ctx = context(environment)
    options = environment.parsed_options
    try:
        ctx.settings = read_settings(options, environment.host)
        ctx.error = None
    except OptionError as error:
        # Web UI edits land here: refuse the run before any User is spawned.
        ctx.error = str(error)
        raise StopTest(f"mqusers: {error}") from None
    if options is not None and not options.headless and not isinstance(environment.runner, MasterRunner):
        # A web UI run was not checked at start-up: refuse it now rather than fail every connect.
        problem = _consumers_problem(environment, ctx.settings, getattr(options, "num_users", None))
        try:
            if problem:
                raise MqError(problem)
            preflight(ctx.settings)
        except MqError as error:
            ctx.error = str(error)
            raise StopTest(f"mqusers: {error}") from None
    if not isinstance(environment.runner, WorkerRunner):
        # The master's parsed options travel to workers with each spawn message.
        ctx.run_id = ctx.settings.run_id or secrets.token_hex(6)
        if options is not None and not ctx.settings.run_id:
            options.mq_run_id_generated = ctx.run_id
        _apply_consumer_count(environment, ctx.settings)
    else:
        ctx.run_id = ctx.settings.run_id or getattr(options, "mq_run_id_generated", "") or ctx.run_id
    ctx.ordinals.clear()
    ctx.finals.clear()
    ctx.finals_arrived.clear()
    coordinator = coordinator_for(environment, ctx)
    if isinstance(environment.runner, WorkerRunner):
        coordinator.follower.reset()
    else:
        producers = max(1, (getattr(options, "num_users", 0) or 1) - _consumer_target(environment))
        settings = ctx.settings
        coordinator.begin(_consumer_target(environment), settings.total_rate, settings.total_messages, producers)
    ctx.book.clear()
    ctx.sent, ctx.received, ctx.audit = SentLedger(ctx.process_tag), ReceiveLedger(ctx.process_tag), Audit()
    ctx.producing, ctx.stopped, ctx.ended_by = True, False, "time"
    ctx.producers, ctx.generators, ctx.progressed = [], {}, set()
    ctx.drain = Drain(
        lambda: _deliveries(ctx), lambda: _all_arrived(environment, ctx), lambda: _refresh(environment, ctx)
    )
    ctx.health.start()
    if environment.runner is not None and not isinstance(environment.runner, (MasterRunner, WorkerRunner)):
        ctx.pump = gevent.spawn(_fold_ledgers, ctx)
    ctx.started = time.time()
    if ctx.settings.warmup:
        # Events of the warm-up go to Locust's stats only; the exact book starts afterwards.
        ctx.book.recording = False
        gevent.spawn_later(ctx.settings.warmup, setattr, ctx.book, "recording", True)


def _consumers_problem(environment: Environment, settings: Settings, users: int | None) -> str | None:
    """--mq-consumers that would leave a scenario with producers without any."""
    runner = environment.runner
    if settings.consumers is None or not users or runner is None:
        return None
    has_producers = any(getattr(c, "role", "producer") != "consumer" for c in runner.user_classes)
    if has_producers and settings.consumers > users:
        return f"--mq-consumers {settings.consumers} is more than the {users} users (-u); no producer would run"
    if has_producers and settings.consumers == users:
        # Legitimate (e.g. registering durable subscriptions), but say so: nothing will be sent.
        logger.warning("mqusers: --mq-consumers %d takes all %d users: no producer runs", users, users)
    return None


def _fold_ledgers(ctx: RunContext) -> None:
    while True:
        gevent.sleep(MERGE_EVERY_S)
        ctx.merge_audit(ctx.drain_audit())


def _ship_progress(ctx: RunContext, runner: WorkerRunner) -> None:
    while True:
        runner.send_message(PROGRESS, ctx.payload())
        gevent.sleep(PROGRESS_EVERY_S)


def _stop_producing(ctx: RunContext, runner: WorkerRunner) -> None:
    ctx.producing = False
    if ctx.pump is None:
        ctx.pump = gevent.spawn(_ship_progress, ctx, runner)


def _on_progress(ctx: RunContext, msg: Any) -> None:
    ctx.take(msg.data)
    ctx.progressed.add(msg.node_id)


def _deliveries(ctx: RunContext) -> int:
    return sum(t.count for name, t in ctx.book.tallies.items() if name.startswith("receive "))


def _refresh(environment: Environment, ctx: RunContext) -> None:
    if not isinstance(environment.runner, MasterRunner):
        ctx.merge_audit(ctx.drain_audit())


def _all_arrived(environment: Environment, ctx: RunContext) -> bool:
    runner = environment.runner
    if isinstance(runner, MasterRunner) and not set(runner.clients.keys()) <= ctx.progressed:
        return False  # some worker's last sends may not be in the audit yet
    figures = ctx.audit.verdict(time.time_ns(), 0, _offsets(ctx), settled=False)
    return all(f["unreceived"] + f["unconfirmed"] + f["in_flight"] == 0 for f in figures.values())


def _on_test_stopping(environment: Environment, **_: Any) -> None:
    ctx = context(environment)
    ctx.producing = False
    runner = environment.runner
    if isinstance(runner, WorkerRunner) or ctx.drain is None or ctx.error:
        return
    if isinstance(runner, MasterRunner):
        runner.send_message(STOP_PRODUCING, {})
    settings = ctx.settings
    ctx.drain.run(settings.drain, None if ctx.ended_by == "count" else settings.drain_max)


def _on_quitting(environment: Environment, **_: Any) -> None:
    """Ctrl-C or SIGTERM: Locust quits without stopping the test first; stop it, so it drains and reports."""
    runner = environment.runner
    if runner is None or isinstance(runner, WorkerRunner):
        return
    ctx = context(environment)
    if ctx.drain is not None and ctx.drain.running:
        ctx.ended_by = "interrupt"
        ctx.drain.cut = True
        return
    if runner.state in (STATE_RUNNING, STATE_SPAWNING):
        ctx.ended_by = "interrupt"
        runner.stop()


def _apply_consumer_count(environment: Environment, settings: Settings) -> None:
    if settings.consumers is None or environment.runner is None:
        return
    for user_class in environment.runner.user_classes:
        if getattr(user_class, "role", "") == "consumer":
            user_class.fixed_count = settings.consumers


def _consumer_target(environment: Environment) -> int:
    """Fixed-count consumers the start barrier waits for (weighted consumers cannot be counted)."""
    runner = environment.runner
    if runner is None:
        return 0
    return sum(c.fixed_count for c in runner.user_classes if getattr(c, "role", "") == "consumer")


def coordinator_for(environment: Environment, ctx: RunContext) -> Coordinator:
    if ctx.coordinator is None:
        ctx.coordinator = Coordinator(environment, ctx)
    return ctx.coordinator


def _audit_totals(ctx: RunContext) -> dict[str, dict[str, Any]]:
    """The audit's running totals for the live stack (merged so far on the master)."""
    drain_ns = int(ctx.settings.drain * 1e9)
    return {
        d: {k: f.get(k, 0) for k in ("lost", "duplicated", "in_flight")}
        for d, f in ctx.audit.verdict(time.time_ns(), drain_ns).items()
    }


def _on_final(ctx: RunContext, runner: MasterRunner, msg: Any) -> None:
    ctx.take(msg.data)
    ctx.finals.add(msg.node_id)
    if set(runner.clients.keys()) <= ctx.finals:
        ctx.finals_arrived.set()


def _collect_finals(ctx: RunContext, runner: MasterRunner) -> None:
    """On quit (e.g. --run-time) Locust stops the master before its workers: ask them to stop now."""
    pending = set(runner.clients.keys()) - ctx.finals
    if not pending:
        return
    for worker in pending:
        runner.send_message(FINISH, {}, client_id=worker)
    if not ctx.finals_arrived.wait(FINAL_WAIT_S):
        missing = ", ".join(sorted(set(runner.clients.keys()) - ctx.finals))
        logger.warning("mqusers: no final tallies from %s; the summary lacks their last seconds", missing)


def _on_test_stop(environment: Environment, **_: Any) -> None:
    ctx = context(environment)
    if ctx.stopped:
        return  # a second stop (e.g. -t during mqusers' own end) reports nothing new
    ctx.stopped = True
    if ctx.pump is not None:
        ctx.pump.kill(block=False)
        ctx.pump = None
    ctx.health.stop()
    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        # A worker sends no stats report between "stop" and "client_stopped"; this message goes
        # first on the same socket, so the master's summary holds every last message.
        runner.send_message(FINAL_TALLIES, ctx.payload())
        return
    if isinstance(runner, MasterRunner):
        _collect_finals(ctx, runner)
    else:
        ctx.merge_audit(ctx.drain_audit())
        ctx.generators[ctx.health.node] = ctx.health.report()
    if ctx.error:
        return
    _report(environment, ctx)


def _offsets(ctx: RunContext) -> dict[str, int]:
    conductor = ctx.coordinator.conductor if ctx.coordinator is not None else None
    return conductor.offsets_by_tag() if conductor is not None else {}


def _report(environment: Environment, ctx: RunContext) -> None:
    settings, stopped = ctx.settings, time.time()
    outcome = (ctx.drain.outcome if ctx.drain else None) or DrainOutcome(False, 0.0, "no drain")
    verdict = ctx.audit.verdict(time.time_ns(), 0, _offsets(ctx), settled=outcome.settled)
    facts = RunFacts(
        run_id=ctx.run_id,
        started=ctx.started,
        stopped=stopped,
        ended_by=ctx.ended_by,
        drain=outcome,
        clocks=_clock_offsets(ctx),
        generator=overall(ctx.generators),
    )
    rows = destination_rows(ctx.book, verdict)
    if ctx.book.tallies or ctx.generators:
        _summary_logger.info("\n%s\n", format_summary(rows, ctx.book, facts, settings))
    try:
        if settings.report_json:
            write_json(settings.report_json, report_document(rows, ctx.book, facts, settings))
        if settings.report_csv:
            write_csv(settings.report_csv, rows)
    except OSError as error:
        logger.error("mqusers: cannot write the report %s: %s", error.filename, error.strerror)
        environment.process_exit_code = max(environment.process_exit_code or 0, 2)
    failures = gate_failures(rows, ctx.book, facts, settings)
    for failure in failures:
        logger.error("mqusers: gate failed: %s", failure)
    if failures:
        environment.process_exit_code = 3
    elif ctx.ended_by == "interrupt":
        environment.process_exit_code = max(environment.process_exit_code or 0, 1)


def _clock_offsets(ctx: RunContext) -> dict[str, dict[str, float]]:
    """Each worker's clock minus the master's, with the error bound of the minimum-RTT sample (ms)."""
    conductor = ctx.coordinator.conductor if ctx.coordinator is not None else None
    if conductor is None:
        return {}
    return {
        worker: {"offset_ms": c.offset_ns / 1e6, "error_ms": c.error_ns / 1e6, "rtt_ms": c.rtt_ns / 1e6}
        for worker, c in conductor.clocks.items()
    }
