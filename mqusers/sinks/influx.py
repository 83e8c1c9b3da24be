"""The InfluxDB listener's entry points: :func:`attach` (from mqusers' init listener) and :func:`register`.

The listener itself is :class:`~mqusers.sinks.listener.InfluxSink`; its options come from
:func:`add_influx_arguments`. Nothing here imports influxdb-client: the sink does, when it starts.
"""

from __future__ import annotations

from locust import events as locust_events
from locust.env import Environment
from locust.event import Events
from locust.runners import WorkerRunner

import logging
import sys
import weakref
from collections.abc import Callable
from typing import Any

from mqusers.options.parsing import OptionError
from mqusers.run.context import context
from mqusers.sinks.lines import AuditSource
from mqusers.sinks.listener import InfluxSink, RunInfo, listen
from mqusers.sinks.settings import add_influx_arguments, read_influx_settings

__all__ = ["AuditSource", "InfluxSink", "RunInfo", "add_influx_arguments", "attach", "register", "secrets"]

logger = logging.getLogger(__name__)

_sinks: weakref.WeakKeyDictionary[Environment, InfluxSink] = weakref.WeakKeyDictionary()
_waiting: weakref.WeakSet[Environment] = weakref.WeakSet()


def attach(
    environment: Environment,
    ctx: RunInfo,
    *,
    audit: AuditSource | None = None,
    send: Callable[[str], None] | None = None,
) -> InfluxSink | None:
    """Start the listener for ``environment`` if ``--influx-url`` is set; idempotent.

    Raises :class:`OptionError` for a bad ``--influx-*`` value. A worker started without
    ``--influx-url`` takes the master's settings, which Locust hands over at test start.
    """
    sink = _sinks.get(environment)
    if sink is not None:
        sink.audit = audit or sink.audit
        return sink
    settings = read_influx_settings(environment.parsed_options)
    runner = environment.runner
    if settings is None:
        if isinstance(runner, WorkerRunner) and environment not in _waiting:
            _waiting.add(environment)
            listen(environment.events.test_start, lambda **_: _attach_late(environment, ctx, audit, send))
        return None
    sink = _sinks[environment] = InfluxSink(environment, ctx, settings, audit=audit, send=send)
    sink.start()
    return sink


def secrets(environment: Environment) -> tuple[str, ...]:
    """The listener's secrets (its token), for masking where commands and their output are shown."""
    sink = _sinks.get(environment)
    return (sink.settings.token,) if sink is not None and sink.settings.token else ()


def _attach_late(environment: Environment, ctx: RunInfo, audit: AuditSource | None, send: Any) -> None:
    if environment in _sinks:
        return
    try:
        sink = attach(environment, ctx, audit=audit, send=send)
    except OptionError as error:  # mid-run on a worker: say so once, run the test without the listener
        _waiting.discard(environment)
        logger.error("mqusers: %s (from the master); this worker streams nothing", error)
        return
    if sink is not None:
        sink.on_test_start()  # its own test_start listener was added while this very event fired


def register(events: Events | None = None, audit: AuditSource | None = None) -> None:
    """For a locustfile: add the ``--influx-*`` options and start the listener at init.

    Harmless next to mqusers' own wiring: options are added once and :func:`attach` is idempotent.
    """
    hooks = events or locust_events

    def on_parser(parser: Any, **_: Any) -> None:
        if "--influx-url" not in getattr(parser, "_option_string_actions", {}):
            add_influx_arguments(parser.add_argument_group("mqusers influx", "live figures to InfluxDB"))

    def on_init(environment: Environment, **_: Any) -> None:
        if environment.parsed_options is None:
            return
        try:
            attach(environment, context(environment), audit=audit)
        except OptionError as error:
            # Before any load, like every other bad option: one line, exit code 2.
            sys.stderr.write(f"mqusers: {error}\n")
            raise SystemExit(2) from None

    listen(hooks.init_command_line_parser, on_parser)
    listen(hooks.init, on_init)
