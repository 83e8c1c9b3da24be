"""Wiring into Locust: the option group, validation before load, the run id, the book, the summary.

Importing :mod:`mqusers` registers two listeners on ``locust.events`` (parser and init), the
usual way for a Locust extension; everything else is attached per ``Environment``.
"""

from __future__ import annotations

from locust import events
from locust.env import Environment
from locust.exception import StopTest
from locust.runners import MasterRunner, WorkerRunner

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
from mqusers.measure.audit import Audit, ReceiveLedger, SentLedger
from mqusers.measure.book import Book
from mqusers.options import OptionError, Settings, add_arguments, read_settings
from mqusers.report import destination_rows, format_summary, gate_failures, report_document, write_csv, write_json
from mqusers.sinks import influx

logger = logging.getLogger(__name__)
_summary_logger = logging.getLogger("locust.stats_logger")
FINAL_TALLIES = "mqusers_final_tallies"
FINISH = "mqusers_finish"
#: How long the master waits for workers' final tallies when Locust quits without stopping them.
FINAL_WAIT_S = 15.0


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

    def drain_audit(self) -> list[Any]:
        return [self.sent.drain(), self.received.drain()]

    def merge_audit(self, drained: list[Any] | None) -> None:
        for delta in drained or ():
            self.audit.merge(delta)

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
    add_arguments(parser)


@events.init.add_listener
def _on_init(environment: Environment, **_: Any) -> None:
    if environment.parsed_options is None:
        return
    try:
        ctx = context(environment)
    except OptionError as error:
        _fail(str(error))
        return
    # Master and workers both validate; only a process that will run Users can judge the broker.
    if environment.parsed_options.headless and not isinstance(environment.runner, MasterRunner):
        try:
            preflight(ctx.settings)
        except MqError as error:
            _fail(str(error))
    coordinator_for(environment, ctx)  # registers its messages before any worker connects
    environment.events.test_start.add_listener(_on_test_start)
    environment.events.test_stop.add_listener(_on_test_stop)
    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        environment.events.report_to_master.add_listener(
            lambda data, **_: data.update(mqusers=ctx.book.drain(), mqusers_audit=ctx.drain_audit())
        )
    if isinstance(runner, MasterRunner):
        environment.events.worker_report.add_listener(lambda data, **_: _merge_report(ctx, data))
        runner.register_message(FINAL_TALLIES, lambda msg, **_: _on_final(ctx, runner, msg))
    if isinstance(runner, WorkerRunner):
        runner.register_message(FINISH, lambda msg, **_: gevent.spawn(runner.stop))
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
        try:
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
    ctx.started = time.time()
    if ctx.settings.warmup:
        # Events of the warm-up go to Locust's stats only; the exact book starts afterwards.
        ctx.book.recording = False
        gevent.spawn_later(ctx.settings.warmup, setattr, ctx.book, "recording", True)


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


def _merge_report(ctx: RunContext, data: dict[str, Any]) -> None:
    ctx.book.merge(data.get("mqusers") or {})
    ctx.merge_audit(data.get("mqusers_audit"))


def _on_final(ctx: RunContext, runner: MasterRunner, msg: Any) -> None:
    _merge_report(ctx, msg.data)
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
    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        # A worker sends no stats report between "stop" and "client_stopped"; this message goes
        # first on the same socket, so the master's summary holds every last message.
        runner.send_message(FINAL_TALLIES, {"mqusers": ctx.book.drain(), "mqusers_audit": ctx.drain_audit()})
        return
    if not isinstance(runner, MasterRunner):
        ctx.merge_audit(ctx.drain_audit())
    if isinstance(runner, MasterRunner):
        _collect_finals(ctx, runner)
    stopped = time.time()
    duration = stopped - ctx.started - ctx.settings.warmup
    settings, clocks = ctx.settings, _clock_offsets(ctx)
    offsets = ctx.coordinator.conductor.offsets_by_tag() if ctx.coordinator and ctx.coordinator.conductor else {}
    verdict = ctx.audit.verdict(time.time_ns(), int(settings.drain * 1e9), offsets)
    rows = destination_rows(ctx.book, duration, verdict)
    if ctx.book.tallies:
        _summary_logger.info("\n%s\n", format_summary(rows, ctx.book, duration, ctx.run_id, clocks))
    try:
        if settings.report_json:
            document = report_document(rows, ctx.book, ctx.started, stopped, ctx.run_id, settings, clocks)
            write_json(settings.report_json, document)
        if settings.report_csv:
            write_csv(settings.report_csv, rows)
    except OSError as error:
        logger.error("mqusers: cannot write the report %s: %s", error.filename, error.strerror)
    failures = gate_failures(rows, settings)
    for failure in failures:
        logger.error("mqusers: gate failed: %s", failure)
    if failures:
        environment.process_exit_code = 3


def _clock_offsets(ctx: RunContext) -> dict[str, dict[str, float]]:
    """Each worker's clock minus the master's, with the error bound of the minimum-RTT sample (ms)."""
    conductor = ctx.coordinator.conductor if ctx.coordinator is not None else None
    if conductor is None:
        return {}
    return {
        worker: {"offset_ms": c.offset_ns / 1e6, "error_ms": c.error_ns / 1e6, "rtt_ms": c.rtt_ns / 1e6}
        for worker, c in conductor.clocks.items()
    }
