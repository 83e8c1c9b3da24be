"""Whether a test may start: its settings read, its role split (consumers per role) and open files checked.

Run at start-up for a headless run (:mod:`mqusers.wiring.plugin`), for a web UI run when its form
is checked and again when its test starts; a refusal is one line, before any User spawns.
"""

from __future__ import annotations

from locust.env import Environment
from locust.runners import MasterRunner, WorkerRunner

from collections.abc import Iterable
from typing import Any

from mqusers.options.destpattern import parse_pattern
from mqusers.options.parsing import OptionError, parse_destination
from mqusers.options.settings import Settings, read_settings
from mqusers.report.baselinefit import unfit_reasons
from mqusers.run.context import client_config, context
from mqusers.stomp.client import MqError, StompClient
from mqusers.wiring import endscreen, fdlimit, roles


def preflight(settings: Settings, user_classes: Iterable[type] = ()) -> None:
    """Connect once with the run's address and credentials; raise :class:`MqError` if that fails, or if
    the User classes (``user_classes``) or the options ask for selectors or message groups the broker
    does not have."""
    for turn in range(len(settings.consumer_brokers)):  # the consumers' brokers answer too, or nothing starts
        consumers = StompClient(client_config(settings, role="consumer", turn=turn), fire=lambda **_: None)
        consumers.connect()
        consumers.disconnect()
    client = StompClient(client_config(settings), fire=lambda **_: None)
    client.connect()
    client.disconnect()
    asked = [settings.select] if settings.select is not None else [getattr(c, "select", None) for c in user_classes]
    selecting = any(select not in (None, "none") for select in asked)
    if selecting and not client.dialect.selectors:
        raise MqError(f"--mq-select: {client.dialect.name}'s STOMP has no selectors (ActiveMQ and Artemis have)")
    grouping = settings.groups if settings.groups is not None else any(getattr(c, "groups", 0) for c in user_classes)
    if grouping and not client.dialect.groups:
        raise MqError(f"--mq-groups: {client.dialect.name} has no message groups (ActiveMQ and Artemis have)")
    if client.dialect.nack == "discard" and any(_nack_ratio(settings, c) for c in user_classes):
        raise MqError(f"--mq-nack-ratio: {client.dialect.name}'s STOMP NACK acknowledges the message: it is "
                      "discarded, neither redelivered nor dead-lettered")  # fmt: skip


def _nack_ratio(settings: Settings, user_class: type) -> float:
    """The share of messages a consumer class NACKs this test (0 for other roles)."""
    if roles.role_of(user_class) != "consumer":
        return 0.0
    return float(settings.nack_ratio if settings.nack_ratio is not None else getattr(user_class, "nack_ratio", 0))


def nack_problem(environment: Environment, settings: Settings) -> str | None:
    """A consumer that NACKs acks client-individual: a NACK of one message must not refuse earlier ones."""
    for user_class in environment.user_classes:
        ack = settings.ack or getattr(user_class, "ack", "auto")
        if _nack_ratio(settings, user_class) and ack != "client-individual":
            return f"--mq-nack-ratio: {user_class.__name__} NACKs but acks {ack}; NACK needs client-individual"
    return None


def test_settings(environment: Environment, options: Any, host: str | None) -> Settings:
    """The settings a test starts with; raises :class:`OptionError` or :class:`MqError` when it may not start."""
    ctx = context(environment)
    settings = read_settings(options, host, ctx.brokers, ctx.consumer_hosts)
    if options is not None and not options.headless and not isinstance(environment.runner, WorkerRunner):
        # A web UI run was not checked at start-up: refuse it now rather than spawn a mix that cannot run.
        users = getattr(options, "num_users", None)
        refusal = problem(environment, settings, users)
        if refusal:
            raise MqError(refusal)
        if not isinstance(environment.runner, MasterRunner):
            preflight(settings, environment.user_classes)
    return settings


def load_shape_problem(options: Any) -> str | None:
    """Locust's own -u refused before load when negative: Locust takes -u -1, prints its traceback twice and runs
    its full time with nothing sent (its parser refuses -r 0 itself)."""
    users = getattr(options, "num_users", None)
    return f"-u {users}: the number of users is 0 or more" if users is not None and users < 0 else None


def login_problem(web_ui: Any) -> str | None:
    """``--web-login`` without a login set up (Locust leaves that to the locustfile: a secret key and a user
    loader): every page would answer "no secret key was set" with a traceback. One line instead."""
    manager = getattr(web_ui, "_login_manager", None)
    if not getattr(web_ui, "web_login", False) or (web_ui.app.secret_key and getattr(manager, "_user_callback", None)):
        return None
    return (
        "--web-login: no login is set up (Locust leaves it to the locustfile: web_ui.app.secret_key and a "
        "login_manager.user_loader, docs/webui.md); without it every page fails"
    )


def problem(environment: Environment, settings: Settings, users: int | None) -> str | None:
    """The one line that refuses this test's role split or its open files; None when it may start."""
    arranged = arrangement(environment, settings, users)
    return (
        baseline_problem(environment, settings)
        or backlog_problem(environment, settings)
        or nack_problem(environment, settings)
        or pattern_problem(environment, settings, arranged)
        or arranged.problem
        or files_problem(environment, users)
    )


def baseline_problem(environment: Environment, settings: Settings) -> str | None:
    """``--mq-baseline``'s runs read now: each with intervals, of this run's locustfile; else the one line why not."""
    if not settings.baseline:
        return None
    # Here, not at the top: the statistics import numpy, which every locust process would pay for at start.
    from mqusers.report.runfiles import load_runs
    from mqusers.stats.samples import RunFileError

    try:
        runs = load_runs([settings.baseline], unfit_reasons)
    except RunFileError as error:
        return f"--mq-baseline: {error}"
    locustfile = endscreen.locustfile_names(environment)
    other = next((run for run in runs if run.locustfile != locustfile), None)
    if other is not None:
        return f"--mq-baseline: {other.name} ran {other.locustfile or '?'}, this run {locustfile or '?'}"
    # A gate against a run that lost messages, had a contended or saturated generator or ended early would pass or
    # fail on its faults, not this run's.
    unfit = next((run for run in runs if run.said), None)
    if unfit is None or settings.baseline_unfit:
        return None
    why = "; ".join(unfit.said)
    return f"--mq-baseline: {unfit.name} is not a baseline: {why} (--mq-baseline-unfit true holds the run to it anyway)"


def backlog_problem(environment: Environment, settings: Settings) -> str | None:
    """A backlog's build is counted in one process: not over workers (yet)."""
    backlog = settings.backlog_messages or settings.backlog_seconds
    if backlog and isinstance(environment.runner, (MasterRunner, WorkerRunner)):
        flag = "--mq-backlog-messages" if settings.backlog_messages else "--mq-backlog-seconds"
        return f"{flag}: a backlog run needs one process (no --master, --worker or --processes)"
    return None


def pattern_problem(
    environment: Environment, settings: Settings, arranged: roles.Arrangement | None = None
) -> str | None:
    """Why this test's destination pattern (``--mq-destination`` or a User class's) may not run; None when it may.

    Over workers, each worker takes a part of the destinations and its Users share it: every role
    needs a user on every worker (Locust deals users out to the workers in turn, so as many as workers).
    """
    runner = environment.runner
    classes = [c for c in (runner.user_classes if runner is not None else []) if roles.role_of(c) is not None]
    for user_class in classes:
        destination = str(settings.destination or getattr(user_class, "destination", ""))
        where = "--mq-destination" if settings.destination else f"{user_class.__name__}.destination"
        try:
            pattern = parse_pattern(parse_destination(destination, where))
        except OptionError as error:
            return str(error)
        if pattern is None:
            continue
        if isinstance(runner, MasterRunner) and arranged is not None and arranged.spawned:
            workers = runner.worker_count or getattr(environment.parsed_options, "expect_workers", 1) or 1
            for role in roles.ROLES:
                if 0 < arranged.count(role) < workers:
                    return (f"{where}: a destination pattern over {workers} workers needs a {role} on each: "
                            f"{arranged.count(role)} {role}(s) asked; use at least {workers}")  # fmt: skip
        durable = settings.durable if settings.durable is not None else getattr(user_class, "durable", False)
        if roles.role_of(user_class) == roles.CONSUMER and durable:
            return f"{where}: a destination pattern takes no durable subscriptions (--mq-durable)"
    return None


#: Each User class's fixed_count and weight as its locustfile declared them, before any test changed them.
_DECLARED: dict[type, tuple[int, float]] = {}


def arrangement(environment: Environment, settings: Settings, users: int | None) -> roles.Arrangement:
    """This test's role split (:mod:`mqusers.wiring.roles`); a load shape decides the users itself."""
    runner = environment.runner
    classes = list(runner.user_classes) if runner is not None else []
    if environment.shape_class is not None:
        users = None
    return roles.arrange(roles.mix_of(classes, _DECLARED), users, settings.consumers)


def files_problem(environment: Environment, users: int | None) -> str | None:
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


def consumer_target(environment: Environment) -> int:
    """Fixed-count consumers the start barrier waits for (weighted consumers cannot be counted)."""
    runner = environment.runner
    if runner is None:
        return 0
    return sum(c.fixed_count for c in runner.user_classes if roles.role_of(c) == roles.CONSUMER)
