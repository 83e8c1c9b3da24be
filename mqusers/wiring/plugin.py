"""Wiring into Locust: the option group, validation before load, test start and stop, the summary.

Importing :mod:`mqusers` registers two listeners on ``locust.events`` (parser and init), the
usual way for a Locust extension; everything else is attached per ``Environment``.
"""

from __future__ import annotations

from locust import events
from locust.env import Environment
from locust.exception import StopTest
from locust.runners import MasterRunner, WorkerRunner

import gc
import inspect
import logging
import secrets
import sys
import time
from typing import Any

import gevent

from mqusers.brokers.settings import OPTIONS as BROKER_OPTIONS
from mqusers.measure.audit import Audit
from mqusers.measure.ledgers import ReceiveLedger, SentLedger
from mqusers.options.optionspec import register
from mqusers.options.parsing import OptionError
from mqusers.options.table import Settings, add_arguments, read_settings
from mqusers.run.context import RunContext, client_config, context, coordinator_for
from mqusers.run.ending import Drain
from mqusers.run.locust_stats import install_bucketing
from mqusers.run.usererrors import StartFailures
from mqusers.sinks import influx
from mqusers.sinks.settings import add_influx_arguments
from mqusers.stomp.client import MqError, StompClient
from mqusers.webui import pages as webui
from mqusers.wiring import brokerwatch, endscreen, fdlimit, lifecycle, lostworkers, roles

logger = logging.getLogger(__name__)
FINAL_TALLIES = "mqusers_final_tallies"
FINISH = "mqusers_finish"
#: How long the master waits for workers' final tallies when Locust quits without stopping them.
FINAL_WAIT_S = 15.0
#: The web UI's address unless --web-host (or LOCUST_WEB_HOST) is given; Locust's own default is every interface.
WEB_HOST = "127.0.0.1"


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
    group = add_arguments(parser)  # one "mqusers" group in --help
    # Anyone who reaches the web UI can start load against any host: loopback unless --web-host says otherwise.
    parser.set_defaults(web_host=WEB_HOST)
    register(group, BROKER_OPTIONS)
    add_influx_arguments(group)


@events.init.add_listener
def _on_init(environment: Environment, **_: Any) -> None:
    install_bucketing()  # sub-millisecond response times in Locust's tables and web UI
    if environment.parsed_options is None:
        return
    try:
        ctx = context(environment)
    except OptionError as error:
        _fail(str(error))
        return
    options = environment.parsed_options
    if not isinstance(environment.runner, WorkerRunner):
        try:
            brokerwatch.check(options)
        except OptionError as error:
            _fail(str(error))
    if options.headless and not isinstance(environment.runner, WorkerRunner):
        # Locust makes a headless run's missing -u 1, after this listener.
        users = getattr(options, "num_users", None) or 1
        problem = _arrangement(environment, ctx.settings, users).problem or _files_problem(environment, users)
        if problem:
            _fail(problem)
    # Master and workers both validate; only a process that will run Users can judge the broker.
    if options.headless and not isinstance(environment.runner, MasterRunner):
        try:
            preflight(ctx.settings)
        except MqError as error:
            _fail(str(error))
    if environment.runner is not None:
        fdlimit.guard_monitor(environment.runner)
    coordinator_for(environment, ctx)  # registers its messages before any worker connects
    lostworkers.attach(environment, ctx)
    environment.events.test_start.add_listener(_on_test_start)
    environment.events.test_stopping.add_listener(lifecycle.on_test_stopping)
    environment.events.test_stop.add_listener(_on_test_stop)
    environment.events.quitting.add_listener(lifecycle.on_quitting)
    # After Locust's final tables (printed between quitting and quit): mqusers' summary is read last.
    environment.events.quit.add_listener(lambda **_: endscreen.print_summary(environment))
    lifecycle.catch_interrupts(environment)
    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        lostworkers.watch_master()
        environment.events.report_to_master.add_listener(lambda data, **_: data.update(ctx.shipping.payload()))
        runner.register_message(FINISH, lambda msg, **_: gevent.spawn(runner.stop))
        runner.register_message(lifecycle.FINAL_RECEIVED, lambda msg, **_: ctx.final_received.set())
        runner.register_message(lifecycle.STOP_PRODUCING, lambda msg, **_: lifecycle.stop_producing(ctx, runner))
    if isinstance(runner, MasterRunner):
        environment.events.worker_report.add_listener(lambda client_id, data, **_: ctx.shipping.take(data, client_id))
        runner.register_message(FINAL_TALLIES, lambda msg, **_: _on_final(ctx, runner, msg))
        runner.register_message(lifecycle.PROGRESS, lambda msg, **_: lifecycle.on_progress(ctx, msg))
    try:
        influx.attach(environment, ctx, audit=lambda: _audit_totals(ctx))
    except OptionError as error:
        _fail(str(error))
    webui.attach(environment, check=lambda options, host: test_settings(environment, options, host))


def _on_test_start(environment: Environment, **_: Any) -> None:
    ctx = context(environment)
    options = environment.parsed_options
    try:
        ctx.settings = test_settings(environment, options, environment.host)
        ctx.error = None
    except (OptionError, MqError) as error:
        # Web UI edits land here (when the form's check let them through): refuse before any User spawns.
        ctx.error = str(error)
        raise StopTest(f"mqusers: {error}") from None
    runner = environment.runner
    producers = 1
    if runner is not None and not isinstance(runner, WorkerRunner):
        # The master's parsed options travel to workers with each spawn message.
        ctx.run_id = ctx.settings.run_id or secrets.token_hex(6)
        if options is not None and not ctx.settings.run_id:
            options.mq_run_id_generated = ctx.run_id
        arrangement = _arrangement(environment, ctx.settings, runner.target_user_count)
        if arrangement.problem:  # checked before (start-up, the form): a start that bypassed both
            ctx.error = arrangement.problem
            raise StopTest(f"mqusers: {arrangement.problem}")
        roles.apply(runner.user_classes, arrangement)
        producers = max(1, arrangement.count(roles.PRODUCER))
        if options is not None and isinstance(runner, MasterRunner):
            # Travels with the spawn messages: each worker raises its own open-file limit for its share.
            setattr(options, fdlimit.USERS_OPTION, fdlimit.per_process(runner.target_user_count, runner.worker_count))
    else:
        ctx.run_id = ctx.settings.run_id or getattr(options, "mq_run_id_generated", "") or ctx.run_id
        fdlimit.raise_for_worker(options)
    ctx.ordinals.clear()
    ctx.finals.clear()
    ctx.start_failures = StartFailures()
    ctx.heard.clear()
    ctx.finals_arrived.clear()
    ctx.final_received.clear()
    ctx.reported.clear()
    coordinator = coordinator_for(environment, ctx)
    if isinstance(environment.runner, WorkerRunner):
        coordinator.follower.reset()
    else:
        settings = ctx.settings
        coordinator.begin(_consumer_target(environment), settings.total_rate, settings.total_messages, producers)
    ctx.recorder.restart(ctx.settings.request_events == "per-message")
    ctx.book.clear()
    ctx.series.clear()
    ctx.sent, ctx.received, ctx.audit = SentLedger(ctx.process_tag), ReceiveLedger(ctx.process_tag), Audit()
    ctx.outages.clear()
    ctx.producing, ctx.stopped, ctx.ended_by = True, False, "time"
    ctx.producers, ctx.generators, ctx.progressed = [], {}, set()
    ctx.drain = Drain(
        lambda: lifecycle.deliveries(ctx),
        lambda: lifecycle.all_arrived(environment, ctx),
        lambda: lifecycle.refresh(environment, ctx),
        deserted=lambda: isinstance(runner, MasterRunner) and not lostworkers.alive(runner),
    )
    ctx.flusher = gevent.spawn(lifecycle.flush_every, environment, ctx)
    if not isinstance(environment.runner, MasterRunner):
        ctx.health.start()  # the master generates no load: its own health says nothing about the figures
        # Locust's Runner.stop() begins with inspect.stack() (for a debug line); its first call builds
        # inspect's module caches, ~25 ms in which no receive is timestamped: the last messages of every
        # run ended by -t read ~30 ms late. Built now, before any message, the stop costs ~0.5 ms.
        inspect.stack()
        # Everything allocated so far (Locust, Flask, the modules) lives for the process: keep it out
        # of the collector's full passes, whose 15-20 ms pauses showed up as schedule lag.
        gc.freeze()
    if environment.runner is not None and not isinstance(environment.runner, (MasterRunner, WorkerRunner)):
        ctx.pump = gevent.spawn(lifecycle.fold_ledgers_every_second, ctx)
    ctx.started = time.time()
    if not isinstance(environment.runner, WorkerRunner):
        lifecycle.start_faults(ctx, influx.secrets(environment))
        brokerwatch.start(environment, ctx)
    lifecycle.start_warmup(environment, ctx)


def test_settings(environment: Environment, options: Any, host: str | None) -> Settings:
    """The settings a test starts with; raises :class:`OptionError` or :class:`MqError` when it may not start."""
    settings = read_settings(options, host, context(environment).brokers)
    if options is not None and not options.headless and not isinstance(environment.runner, WorkerRunner):
        # A web UI run was not checked at start-up: refuse it now rather than spawn a mix that cannot run.
        users = getattr(options, "num_users", None)
        problem = _arrangement(environment, settings, users).problem or _files_problem(environment, users)
        if problem:
            raise MqError(problem)
        if not isinstance(environment.runner, MasterRunner):
            preflight(settings)
    return settings


#: Each User class's fixed_count and weight as its locustfile declared them, before any test changed them.
_DECLARED: dict[type, tuple[int, float]] = {}


def _arrangement(environment: Environment, settings: Settings, users: int | None) -> roles.Arrangement:
    """This test's role split (:mod:`mqusers.wiring.roles`); a load shape decides the users itself."""
    runner = environment.runner
    classes = list(runner.user_classes) if runner is not None else []
    if environment.shape_class is not None:
        users = None
    return roles.arrange(roles.mix_of(classes, _DECLARED), users, settings.consumers)


def _files_problem(environment: Environment, users: int | None) -> str | None:
    """Whether this process (or the workers it forked) may open a file per User (:mod:`mqusers.wiring.fdlimit`)."""
    runner = environment.runner
    if users is None or environment.shape_class is not None:
        return None  # a load shape decides the users as it goes
    if isinstance(runner, MasterRunner):
        options = environment.parsed_options
        if not getattr(options, "processes", None):
            return None  # workers started elsewhere: each raises its own limit at test start
        # --processes forked the workers from this process: they share its hard limit.
        workers = runner.worker_count or getattr(options, "expect_workers", 1)
        return fdlimit.ensure(users, workers, raise_soft=False)
    return fdlimit.ensure(users)


def _consumer_target(environment: Environment) -> int:
    """Fixed-count consumers the start barrier waits for (weighted consumers cannot be counted)."""
    runner = environment.runner
    if runner is None:
        return 0
    return sum(c.fixed_count for c in runner.user_classes if roles.role_of(c) == roles.CONSUMER)


def _audit_totals(ctx: RunContext) -> dict[str, dict[str, Any]]:
    """The audit's running totals for the live stack (merged so far on the master)."""
    drain_ns = int(ctx.settings.drain * 1e9)
    return {
        d: {k: f.get(k, 0) for k in ("lost", "duplicated", "in_flight")}
        for d, f in ctx.audit.verdict(time.time_ns(), drain_ns).items()
    }


def _on_final(ctx: RunContext, runner: MasterRunner, msg: Any) -> None:
    ctx.shipping.take(msg.data, msg.node_id)
    runner.send_message(lifecycle.FINAL_RECEIVED, {}, client_id=msg.node_id)
    ctx.finals.add(msg.node_id)
    if lostworkers.alive(runner) <= ctx.finals:
        ctx.finals_arrived.set()


def _collect_finals(ctx: RunContext, runner: MasterRunner) -> None:
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


def _on_test_stop(environment: Environment, **_: Any) -> None:
    ctx = context(environment)
    if ctx.stopped:
        return  # a second stop (e.g. -t during mqusers' own end) reports nothing new
    ctx.stopped = True
    try:
        _end_test(environment, ctx)
    finally:
        ctx.reported.set()


def _end_test(environment: Environment, ctx: RunContext) -> None:
    stopped = time.time()  # the test's end: waiting for workers' final tallies and the broker's counters is not in it
    if ctx.flusher is not None:
        ctx.flusher.kill(block=False)
        ctx.flusher = None
    ctx.recorder.flush()
    if ctx.pump is not None:
        ctx.pump.kill(block=False)
        ctx.pump = None
    ctx.health.stop()
    if ctx.faults is not None:
        ctx.faults.stop()
    brokerwatch.stop(ctx)
    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        # A worker sends no stats report between "stop" and "client_stopped"; this message goes
        # first on the same socket, so the master's summary holds every last message.
        runner.send_message(FINAL_TALLIES, ctx.shipping.payload(final=True))
    elif isinstance(runner, MasterRunner):
        _collect_finals(ctx, runner)
    else:
        ctx.fold_ledgers()
        ctx.generators[ctx.health.node] = ctx.health.report()
    if not isinstance(runner, WorkerRunner) and not ctx.error:
        lifecycle.write_report(environment, ctx, stopped)
    ctx.shipping.complete()
