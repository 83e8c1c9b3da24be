"""Wiring into Locust: the option group, validation before load, test start and stop, the summary.

What each step does lives beside it: whether a test may start in :mod:`mqusers.wiring.admission`,
how it ends in :mod:`mqusers.wiring.lifecycle`, workers' final shipments in
:mod:`mqusers.wiring.finals`, the report in :mod:`mqusers.wiring.runreport`.

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

from mqusers.audit.audit import Audit
from mqusers.audit.ledgers import ReceiveLedger, SentLedger
from mqusers.brokers.brokeroptions import OPTIONS as BROKER_OPTIONS
from mqusers.measure.names import destination_operation
from mqusers.options.optionspec import register
from mqusers.options.parsing import OptionError
from mqusers.options.table import add_arguments
from mqusers.report.manydest import fold_verdict
from mqusers.run import ticks
from mqusers.run.context import WORKERS_OPTION, RunContext, context, coordinator_for
from mqusers.run.ending import Drain
from mqusers.run.faults import start_faults
from mqusers.run.locust_stats import install_bucketing
from mqusers.run.usererrors import StartFailures
from mqusers.run.warmup import start_warmup
from mqusers.sinks import influx, schema
from mqusers.sinks.sinkoptions import add_influx_arguments
from mqusers.stomp.client import MqError
from mqusers.webui import pages as webui
from mqusers.wiring import (
    admission,
    brokerwatch,
    endscreen,
    fdlimit,
    finals,
    lifecycle,
    lostworkers,
    phases,
    roles,
    runreport,
    spawncost,
)

logger = logging.getLogger(__name__)
#: The web UI's address unless --web-host (or LOCUST_WEB_HOST) is given; Locust's own default is every interface.
WEB_HOST = "127.0.0.1"


def _fail(message: str) -> None:
    sys.stderr.write(f"mqusers: {message}\n")
    sys.exit(2)


def _refuse_without_login(web_ui: Any) -> None:
    if problem := admission.login_problem(web_ui):
        _fail(problem)  # SystemExit: gevent's hub hands it to the main greenlet, which exits 2


@events.init_command_line_parser.add_listener
def _on_parser(parser: Any, **_: Any) -> None:
    group = add_arguments(parser)  # one "mqusers" group in --help
    # Anyone who reaches the web UI can start load against any host: loopback unless --web-host says otherwise.
    parser.set_defaults(web_host=WEB_HOST)
    register(group, BROKER_OPTIONS)
    add_influx_arguments(group)
    # Locust's Runner.stop() calls inspect.stack(), whose first call reads every module's path (~75 ms; see
    # _on_test_start). Here, before --processes forks, every worker inherits the result: 64 workers starting
    # on two cores would otherwise spend 5 CPU-s on it at once, their heartbeats late enough to be marked missing.
    inspect.stack()


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
        if problem := admission.load_shape_problem(options):
            _fail(problem)
        try:
            brokerwatch.check(options)
        except OptionError as error:
            _fail(str(error))
    if environment.web_ui is not None and getattr(options, "web_login", False):
        # After every init listener (the locustfile's own set a login up), before the web UI serves a page.
        gevent.spawn(_refuse_without_login, environment.web_ui)
    if options.headless and not isinstance(environment.runner, WorkerRunner):
        # Locust makes a headless run's missing -u 1, after this listener.
        users = getattr(options, "num_users", None) or 1
        problem = admission.problem(environment, ctx.settings, users)
        if problem:
            _fail(problem)
    # Master and workers both validate; only a process that will run Users can judge the broker.
    if options.headless and not isinstance(environment.runner, MasterRunner):
        try:
            admission.preflight(ctx.settings, environment.user_classes)
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
        spawncost.parse_defaults_once()
        lostworkers.watch_master(runner)
        environment.events.report_to_master.add_listener(lambda data, **_: data.update(ctx.shipping.payload()))
        runner.register_message(finals.FINISH, lambda msg, **_: gevent.spawn(runner.stop))
        runner.register_message(finals.FINAL_RECEIVED, lambda msg, **_: ctx.final_received.set())
        runner.register_message(lifecycle.STOP_PRODUCING, lambda msg, **_: lifecycle.stop_producing(ctx, runner))
    if isinstance(runner, MasterRunner):
        environment.events.worker_report.add_listener(lambda client_id, data, **_: ctx.shipping.take(data, client_id))
        runner.register_message(finals.FINAL_TALLIES, lambda msg, **_: finals.on_final(ctx, runner, msg))
        runner.register_message(lifecycle.PROGRESS, lambda msg, **_: lifecycle.on_progress(ctx, msg))
    try:
        influx.attach(environment, ctx, audit=lambda: _audit_totals(ctx))
    except OptionError as error:
        _fail(str(error))
    webui.attach(environment, check=lambda options, host: admission.test_settings(environment, options, host))


def _on_test_start(environment: Environment, **_: Any) -> None:
    ctx = context(environment)
    options = environment.parsed_options
    try:
        ctx.settings = admission.test_settings(environment, options, environment.host)
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
        arrangement = admission.arrangement(environment, ctx.settings, runner.target_user_count)
        if arrangement.problem:  # checked before (start-up, the form): a start that bypassed both
            ctx.error = arrangement.problem
            raise StopTest(f"mqusers: {arrangement.problem}")
        roles.apply(runner.user_classes, arrangement)
        producers = max(1, arrangement.count(roles.PRODUCER))
        ctx.role_users = {role: arrangement.count(role) for role in roles.ROLES}
        if options is not None and isinstance(runner, MasterRunner):
            # Travels with the spawn messages: each worker raises its own open-file limit for its share,
            # and takes its part of a destination pattern.
            setattr(options, fdlimit.USERS_OPTION, fdlimit.per_process(runner.target_user_count, runner.worker_count))
            setattr(options, WORKERS_OPTION, runner.worker_count)
    else:
        ctx.run_id = ctx.settings.run_id or getattr(options, "mq_run_id_generated", "") or ctx.run_id
        fdlimit.raise_for_worker(options)
        if isinstance(runner, WorkerRunner):
            ctx.role_users, ctx.part = {}, (runner.worker_index, max(1, getattr(options, WORKERS_OPTION, 1) or 1))
    ctx.ordinals.clear()
    ctx.spread.clear()
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
        coordinator.begin(
            admission.consumer_target(environment),
            settings.profile.peak if settings.profile is not None else settings.total_rate,
            settings.total_messages,
            producers,
        )
    ctx.recorder.restart(ctx.settings.request_events == "per-message")
    ctx.book.clear()
    ctx.series.clear()
    ctx.intervals.clear()
    ctx.sent, ctx.received, ctx.audit = SentLedger(ctx.process_tag), ReceiveLedger(ctx.process_tag), Audit()
    ctx.outages.clear()
    ctx.producing, ctx.stopped, ctx.ended_by = True, False, "time"
    ctx.producers, ctx.generators, ctx.progressed, ctx.master_health = [], {}, set(), None
    ctx.drain = Drain(
        lambda: lifecycle.deliveries(ctx),
        lambda: lifecycle.all_arrived(environment, ctx),
        lambda: lifecycle.refresh(environment, ctx),
        deserted=lambda: isinstance(runner, MasterRunner) and not lostworkers.alive(runner),
    )
    ctx.flusher = gevent.spawn(ticks.flush_every, environment, ctx)
    # The master generates no load: its health says nothing about the figures, but its cost is the generator's.
    ctx.health.start()
    if not isinstance(environment.runner, MasterRunner):
        # Locust's Runner.stop() begins with inspect.stack() (for a debug line); its first call builds
        # inspect's module caches, ~25 ms in which no receive is timestamped: the last messages of every
        # run ended by -t read ~30 ms late. Built now, before any message, the stop costs ~0.5 ms.
        inspect.stack()
        # Everything allocated so far (Locust, Flask, the modules) lives for the process: keep it out
        # of the collector's full passes, whose 15-20 ms pauses showed up as schedule lag.
        gc.freeze()
    if environment.runner is not None and not isinstance(environment.runner, (MasterRunner, WorkerRunner)):
        ctx.pump = gevent.spawn(ticks.fold_ledgers_every_second, ctx)
    phases.start(ctx)
    ctx.started = time.time()
    if not isinstance(environment.runner, WorkerRunner):
        secret = [ctx.settings.password, *influx.secrets(environment)]
        ctx.faults = start_faults(ctx.settings.faults, secret, ctx.annotate)
        brokerwatch.start(environment, ctx)
    start_warmup(environment, ctx)


def _audit_totals(ctx: RunContext) -> dict[str, dict[str, Any]]:
    """The audit's running totals for the live stack (merged so far on the master)."""
    drain_ns = int(ctx.settings.drain * 1e9)
    labels = [found[1] for name in list(ctx.book.tallies) if (found := destination_operation(name)) is not None]
    # A pattern's destinations are one point, as its book row is: not one series per destination.
    verdict = fold_verdict(ctx.audit.verdict(time.time_ns(), drain_ns), labels)
    return {d: {k: f.get(k, 0) for k in schema.AUDIT_FIELDS} for d, f in verdict.items()}


def _on_test_stop(environment: Environment, **_: Any) -> None:
    ctx = context(environment)
    if ctx.stopped:
        return  # a second stop (e.g. -t during mqusers' own end) reports nothing new
    ctx.stopped = True
    try:
        _end_test(environment, ctx)
    finally:
        ctx.reported.set()
    runner = environment.runner
    if isinstance(runner, MasterRunner) and lostworkers.deserted(runner):
        # Locust stopped the test when the last worker went missing, and would wait for -t: end the run now.
        logger.error("mqusers: %s", lostworkers.deserted_line(runner, time.time() - ctx.started))
        environment.process_exit_code = max(environment.process_exit_code or 0, 3)
        if environment.parsed_options is not None and environment.parsed_options.headless:
            gevent.spawn(runner.quit)


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
    phases.stop(ctx)
    # The Users and the broker's reader have closed their connections; a socket closed while its reader
    # greenlet waited on it is released on the loop's next turn (gevent defers it): that turn first.
    gevent.sleep(0)
    ctx.health.finish()
    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        finals.send_final(ctx, runner)
    elif isinstance(runner, MasterRunner):
        finals.collect_finals(ctx, runner)
        ctx.master_health = ctx.health.report()
    else:
        ctx.fold_ledgers()
        ctx.generators[ctx.health.node] = ctx.health.report()
    if not isinstance(runner, WorkerRunner) and not ctx.error:
        runreport.write_report(environment, ctx, stopped)
    ctx.shipping.complete()
