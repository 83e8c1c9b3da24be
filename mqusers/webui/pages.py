"""The web UI's mqusers part: two tabs of exact figures, readable custom parameters, refusals in the page.

Locust 2.47's React page is extended the way its ``examples/extend_modern_web_ui.py`` shows:
``web_ui.template_args`` gains ``extended_tabs`` and ``extended_tables`` (a tab is a table) and
``extended_csv_files`` (links in *Download Data*); the tables' rows ride on ``/stats/requests``,
which the page polls every 2 s, as ``extended_stats`` (an ``after_request`` hook). Two routes:
``/mqusers/stats`` (the same rows as JSON) and ``/mqusers/report.html`` (the run's
``--mq-report-html`` file). A ``before_request`` hook on ``POST /swarm`` checks the form as the
test start would and answers a refusal the way Locust answers its own bad values, so the page
shows it under the start form instead of silently staying idle.
"""

from __future__ import annotations

from locust.env import Environment
from locust.runners import STATE_RUNNING, STATE_SPAWNING, WORKER_REPORT_INTERVAL, MasterRunner

import argparse
import json
import logging
import os
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from flask import Response, jsonify, request, send_file

from mqusers.options.parsing import OptionError
from mqusers.report.build import RunReport
from mqusers.run.context import FLUSH_EVERY_S, RunContext, context
from mqusers.run.verdicts import Generator, broker_p99_ms, overall
from mqusers.stomp.client import MqError
from mqusers.webui.webform import changed_during_a_run, command_line_only, custom_parameters, field_notes, posted_values
from mqusers.webui.webtab import (
    COLUMNS,
    FACT_COLUMNS,
    final_facts,
    final_rows,
    live_facts,
    live_rows,
    refused_facts,
)

logger = logging.getLogger(__name__)
TAB, RUN_TAB = "mqusers", "mqusers-run"
REPORT_ROUTE = "/mqusers/report.html"
#: ``check(options, host)`` raises :class:`OptionError` or :class:`MqError` when a test may not start.
Check = Callable[[argparse.Namespace, str | None], object]


def _asset(name: str) -> str:
    """A file of ``mqusers/webui/assets``: the form's script and styles."""
    return resources.files("mqusers.webui").joinpath("assets", name).read_text(encoding="utf-8")


@dataclass
class _Final:
    rows: list[dict[str, Any]]
    facts: list[dict[str, str]]
    html: str | None


_finals: weakref.WeakKeyDictionary[Environment, _Final] = weakref.WeakKeyDictionary()


def _table(columns: tuple[tuple[str, str], ...]) -> list[dict[str, str]]:
    return [{"key": key, "title": title} for key, title in columns]


def attach(environment: Environment, check: Check) -> None:
    """The tabs, routes and hooks on the environment's web UI (master or local runner)."""
    web_ui = environment.web_ui
    if web_ui is None or web_ui.app is None:
        return
    ctx = context(environment)
    app = web_ui.app
    classes = list(environment.user_classes)
    # The scenario's own host, read now: Locust overwrites the classes' ``host`` at the first spawn.
    host = ctx.brokers[0] if ctx.brokers else environment.host or ""
    web_ui.template_args["extended_tabs"] = [{"title": "mqusers", "key": TAB}, {"title": "mqusers run", "key": RUN_TAB}]
    web_ui.template_args["extended_tables"] = [
        {"key": TAB, "structure": _table(COLUMNS)},
        {"key": RUN_TAB, "structure": _table(FACT_COLUMNS)},
    ]
    if ctx.settings.report_html:
        # --mq-report-html is a command-line option, so whether the link belongs is known now.
        link = {"href": "." + REPORT_ROUTE, "title": "mqusers HTML report of the last run"}
        web_ui.template_args["extended_csv_files"] = [link]
    update_template_args = web_ui.update_template_args

    def update() -> None:
        # Locust rebuilds ``extra_options`` from the parser on every page load.
        update_template_args()
        options = web_ui.template_args["extra_options"]
        web_ui.template_args["extra_options"] = custom_parameters(options, environment.parsed_options)

    web_ui.update_template_args = update  # type: ignore[method-assign]
    environment.events.test_start.add_listener(lambda **_: _finals.pop(environment, None))

    @app.before_request
    def refuse() -> Response | None:
        if request.endpoint != "locust.swarm" or request.method != "POST":
            return None
        return _check_form(environment, check)

    @app.after_request
    def extend(response: Response) -> Response:
        if request.endpoint == "locust.index" and response.mimetype == "text/html":
            notes = {"fields": field_notes(classes, host), "fixed": command_line_only(environment.parsed_options)}
            response.set_data(with_form_script(response.get_data(as_text=True), notes))
        if request.endpoint != "locust.request_stats" or not response.is_json:
            return response
        data = response.get_json()
        data["extended_stats"] = [{"key": key, "data": rows} for key, rows in tables(environment).items()]
        response.set_data(json.dumps(data))
        return response

    def mqusers_stats() -> Response:
        return jsonify(tables(environment))

    def mqusers_report() -> Response:
        final = _finals.get(environment)
        if final is None or final.html is None or not os.path.isfile(final.html):
            return Response("no HTML report yet: run a test with --mq-report-html PATH\n", 404, mimetype="text/plain")
        return send_file(os.path.abspath(final.html), mimetype="text/html")

    # Behind --web-login when it is on, as Locust's own routes.
    app.add_url_rule("/mqusers/stats", view_func=web_ui.auth_required_if_enabled(mqusers_stats))
    app.add_url_rule(REPORT_ROUTE, view_func=web_ui.auth_required_if_enabled(mqusers_report))


def with_form_script(page: str, notes: dict[str, Any]) -> str:
    """Locust's page with mqusers' form script, its styles and its data (``notes``) before ``</body>``."""
    # "</" would end the data's script element early; JSON allows "<\\/" for it.
    data = json.dumps(notes).replace("</", "<\\/")
    added = (f'<style>{_asset("webform.css")}</style><script id="mqusers-form" type="application/json">{data}</script>'
             f'<script>{_asset("webform.js")}</script>')  # fmt: skip
    return page.replace("</body>", added + "</body>", 1)


def _check_form(environment: Environment, check: Check) -> Response | None:
    """None to let Locust start the test; a refusal for the page when mqusers' test start would refuse it."""
    runner = environment.runner
    if runner is None:
        return None
    if runner.state in (STATE_RUNNING, STATE_SPAWNING):
        return _refuse_changes(environment)
    parsed = environment.parsed_options
    values = posted_values(request.form)
    trial = argparse.Namespace(**{**vars(parsed or argparse.Namespace()), **values})
    try:
        trial.num_users = int(request.form.get("user_count", ""))
    except ValueError:
        return None  # Locust answers a bad user count itself
    try:
        check(trial, request.form.get("host") or environment.host)
    except (OptionError, MqError) as error:
        logger.error("mqusers: %s", error)
        return jsonify({"success": False, "message": f"mqusers: {error}", "host": environment.host})
    # Fields posted by label are mqusers' to set: Locust sets only the arguments it knows by name.
    for dest, text in values.items():
        setattr(parsed, dest, text)
    return None


def _refuse_changes(environment: Environment) -> Response | None:
    """A running test's edit changes users and spawn rate only: its Users stay on the broker, destination
    and options they started with, so another host or ``--mq-*`` value is refused, not silently ignored."""
    posted = (request.form.get("host") or "").replace("<", "").replace(">", "")  # as Locust cleans it
    changed = changed_during_a_run(request.form, environment.parsed_options)
    if posted and posted != environment.host:
        changed.insert(0, f"Host (in use: {environment.host})")
    if not changed:
        return None
    message = f"mqusers: a running test keeps its broker and options; stop it to change {', '.join(changed)}"
    logger.error(message)
    return jsonify({"success": False, "message": message, "host": environment.host})


def _generator(environment: Environment, ctx: RunContext) -> Generator:
    # The master's copy of every worker's health and its own; a local runner's own, live.
    if isinstance(environment.runner, MasterRunner):
        return overall(ctx.generators, broker_p99_ms(ctx.book.tallies), ctx.health.report())
    return overall({ctx.health.node: ctx.health.report()}, broker_p99_ms(ctx.book.tallies))


def tables(environment: Environment) -> dict[str, list[dict[str, Any]]]:
    """Both tabs' rows: the refusal, the last run's final summary, or the running test's live figures."""
    ctx = context(environment)
    if ctx.error:
        return {TAB: [], RUN_TAB: refused_facts(ctx.error)}
    final = _finals.get(environment)
    if final is not None:
        return {TAB: final.rows, RUN_TAB: final.facts}
    if not ctx.started:
        return {TAB: [], RUN_TAB: []}
    # A second's counts are complete after the recorder's flush here, after a worker's report on a master.
    lag_s = WORKER_REPORT_INTERVAL + 1.0 if isinstance(environment.runner, MasterRunner) else FLUSH_EVERY_S + 0.8
    generator = _generator(environment, ctx)
    return {TAB: live_rows(ctx, lag_s), RUN_TAB: live_facts(ctx, generator, lag_s)}


def show_report(environment: Environment, report: RunReport) -> None:
    """The run's report replaces the live figures until the next test starts."""
    settings = report.settings
    html = settings.report_html if settings.report_html and os.path.isfile(settings.report_html) else None
    link = "." + REPORT_ROUTE if html else None
    _finals[environment] = _Final(final_rows(report), final_facts(report, link, settings.report_json), html)
