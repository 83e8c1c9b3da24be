"""The listener's entry points: :func:`attach` (from mqusers' init listener) and :func:`register`.

The listener itself is :class:`~mqusers.sinks.listener.InfluxSink`, its outputs InfluxDB and the
Prometheus endpoint; its options come from :func:`add_influx_arguments`. Nothing here imports
influxdb-client or prometheus-client: the writer and the endpoint do, when they start.
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
from typing import TYPE_CHECKING, Any

from mqusers.options.optionspec import text_of
from mqusers.options.parsing import OptionError
from mqusers.run.context import context
from mqusers.sinks.sinkoptions import (
    PROMETHEUS_PORT,
    InfluxSettings,
    add_influx_arguments,
    read_influx_settings,
    read_prometheus_settings,
)

if TYPE_CHECKING:
    from mqusers.sinks.lines import AuditSource
    from mqusers.sinks.listener import InfluxSink, RunInfo
    from mqusers.sinks.prometheus import Endpoint

__all__ = ["AuditSource", "InfluxSink", "RunInfo", "add_influx_arguments", "attach", "register", "secrets"]

logger = logging.getLogger(__name__)

_sinks: weakref.WeakKeyDictionary[Environment, InfluxSink] = weakref.WeakKeyDictionary()
_waiting: weakref.WeakSet[Environment] = weakref.WeakSet()
_endpoints: weakref.WeakKeyDictionary[Environment, Endpoint] = weakref.WeakKeyDictionary()


def attach(
    environment: Environment,
    ctx: RunInfo,
    *,
    audit: AuditSource | None = None,
    send: Callable[[str], None] | None = None,
) -> InfluxSink | None:
    """Start the listener for ``environment`` if ``--influx-url`` or ``--prometheus-port`` is set; idempotent.

    Raises :class:`OptionError` for a bad ``--influx-*`` or ``--prometheus-*`` value, or a port the
    endpoint cannot listen on. The endpoint comes from the process's own options (a port is a host's);
    a worker without ``--influx-url`` takes the master's ``--influx-*``, which Locust hands over at test
    start, and ships its intervals whenever the master streams anywhere.
    """
    sink = _sinks.get(environment)
    if sink is not None:
        sink.audit = audit or sink.audit
        return sink
    options = environment.parsed_options
    settings = read_influx_settings(options)
    prometheus = read_prometheus_settings(options)
    waits = isinstance(environment.runner, WorkerRunner) and settings is None
    if waits and environment not in _waiting:
        # Before the endpoint: binding a host name yields to the loop, and a worker's test may start meanwhile.
        _waiting.add(environment)
        environment.events.test_start.add_listener(lambda **_: _attach_late(environment, ctx, audit, send))
    if prometheus is not None and environment not in _endpoints:
        from mqusers.sinks.prometheus import Endpoint  # loaded when a run serves metrics (module docstring)

        endpoint = _endpoints[environment] = Endpoint(prometheus)  # bound now, before any load
        started = _sinks.get(environment)
        if started is not None and started.endpoint is None:  # the test started while it was bound
            started.endpoint = endpoint
    if waits or (settings is None and prometheus is None):
        return None
    return _start(environment, ctx, settings, audit, send)


def _start(
    environment: Environment, ctx: RunInfo, settings: InfluxSettings | None, audit: AuditSource | None, send: Any
) -> InfluxSink:
    from mqusers.sinks.listener import InfluxSink  # loaded when a run streams (module docstring)

    endpoint = _endpoints.get(environment)
    sink = _sinks[environment] = InfluxSink(environment, ctx, settings, audit=audit, send=send, endpoint=endpoint)
    sink.start()
    return sink


def secrets(environment: Environment) -> tuple[str, ...]:
    """The listener's secrets (its token), for masking where commands and their output are shown."""
    sink = _sinks.get(environment)
    settings = sink.settings if sink is not None else None
    return (settings.token,) if settings is not None and settings.token else ()


def _attach_late(environment: Environment, ctx: RunInfo, audit: AuditSource | None, send: Any) -> None:
    """A worker at test start, with the master's options: the listener if the master or its own endpoint needs it."""
    if environment in _sinks:
        return
    options = environment.parsed_options
    try:
        settings = read_influx_settings(options)
    except OptionError as error:  # mid-run on a worker: say so once, run the test without the listener
        _waiting.discard(environment)
        logger.error("mqusers: %s (from the master); this worker streams nothing", error)
        return
    master_serves = bool(text_of(options, PROMETHEUS_PORT))
    if settings is None and not master_serves and environment not in _endpoints:
        return
    # Its own test_start listener is added while this very event fires: started here.
    _start(environment, ctx, settings, audit, send).on_test_start()


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

    hooks.init_command_line_parser.add_listener(on_parser)
    hooks.init.add_listener(on_init)


def __getattr__(name: str) -> Any:
    """The listener's names on first use: a run that streams nowhere never loads the listener and its outputs."""
    if name in ("InfluxSink", "RunInfo"):
        from mqusers.sinks import listener

        return getattr(listener, name)
    if name == "AuditSource":
        from mqusers.sinks import lines

        return lines.AuditSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
