"""The run's one report at its end: facts gathered, built once, written, shown; its gates set the exit code.

Written by the master or a single process when a test stops (:mod:`mqusers.wiring.plugin`); the
summary is left on the run's context for :mod:`mqusers.wiring.endscreen` to print last.
"""

from __future__ import annotations

from locust.env import Environment
from locust.runners import MasterRunner

import logging
import os
import time
from dataclasses import replace

from mqusers.report.build import RunFacts, build_report
from mqusers.report.failover import failover_document
from mqusers.report.gates import judge
from mqusers.report.hdrlog import write_hdr_log
from mqusers.report.history import result_name
from mqusers.report.htmlreport import write_html
from mqusers.report.reportformats import report_document, write_csv, write_json
from mqusers.run.context import RunContext
from mqusers.run.ending import DrainOutcome
from mqusers.run.verdicts import broker_p99_ms, overall
from mqusers.webui.pages import show_report
from mqusers.wiring import brokerwatch, endscreen, fdlimit, lostworkers, roles

logger = logging.getLogger(__name__)


def write_report(environment: Environment, ctx: RunContext, stopped: float) -> None:
    """The run's report: summary, the JSON / HTML / CSV files asked for, the web UI's tab, gates and exit code."""
    settings = ctx.settings
    outcome = (ctx.drain.outcome if ctx.drain else None) or DrainOutcome(False, 0.0, "no drain")
    runner = environment.runner
    lost = lostworkers.lost_workers(ctx, runner) if isinstance(runner, MasterRunner) else []
    gone = frozenset(worker["process"] for worker in lost)
    verdict = ctx.audit.verdict(time.time_ns(), 0, ctx.clock_offsets(), settled=outcome.settled, lost_processes=gone)
    facts = RunFacts(
        run_id=ctx.run_id,
        started=ctx.started,
        stopped=stopped,
        ended_by=ctx.ended_by,
        drain=outcome,
        clocks=ctx.clock_offsets_ms(),
        generator=overall(ctx.generators, broker_p99_ms(ctx.book.tallies), ctx.master_health),
        failover=failover_document(ctx.outages.records, ctx.outages.overflow, ctx.series, time.time_ns()),
        faults=ctx.faults.records if ctx.faults is not None else [],
        broker=brokerwatch.document(ctx),
        produces=environment.runner is not None and roles.produces(environment.runner.user_classes),
        consumes=environment.runner is not None and roles.consumes(environment.runner.user_classes),
        scenario=endscreen.scenario_of(environment, ctx),
        out_of_files=fdlimit.failures(environment.stats.errors),
        lost_workers=[dict(worker) for worker in lost],
        start_failures=ctx.start_failures.document(),
        backlog=ctx.backlog.figures.document() if ctx.backlog is not None else None,
        measured_from=ctx.recorder.measured_from_ns / 1e9 or ctx.started,
    )
    report = build_report(ctx.book, verdict, facts, settings, ctx.series, ctx.spread.figures(), ctx.intervals)
    # Judged before anything is written: a figure the regression gate could not judge is a note of every output.
    failures, unjudged = judge(report)
    report = replace(report, notes=[*report.notes, *unjudged])
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
            write_csv(settings.report_csv, report.rows, report.pattern_destinations)
            written.append(settings.report_csv)
        if settings.results:
            os.makedirs(settings.results, exist_ok=True)
            kept = os.path.join(settings.results, result_name(ctx.started, ctx.run_id))
            write_json(kept, document)
            written.append(kept)
        if settings.hdr_log:
            write_hdr_log(settings.hdr_log, report.intervals, ctx.run_id)
            written.append(settings.hdr_log)
    except OSError as error:
        logger.error("mqusers: cannot write the report %s: %s", error.filename, error.strerror)
        environment.process_exit_code = max(environment.process_exit_code or 0, 2)
    show_report(environment, report)
    if failures:
        environment.process_exit_code = 3
    elif ctx.ended_by in ("interrupt", "quit"):
        environment.process_exit_code = max(environment.process_exit_code or 0, 1)
    ctx.summary = endscreen.Summary(report, written, failures) if ctx.book.tallies or ctx.generators else None
    if not endscreen.quits_after(environment):
        endscreen.print_summary(environment)  # a web UI run: its summary now, the process goes on
