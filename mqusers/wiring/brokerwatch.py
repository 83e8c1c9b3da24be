"""The broker's own figures during a test: which source, started with the test, stopped before the report.

Wired by :mod:`mqusers.wiring.plugin` on the master or a local runner (workers never read the broker):
:func:`start` at test start picks the source (``--mq-broker-metrics``; ``auto`` asks the broker's
CONNECTED header whether it is ActiveMQ Classic, Artemis or RabbitMQ), takes the baseline reading
and leaves the sampler running; :func:`stop` takes the last reading before the report;
:func:`document` is the report's ``broker``. Any failure is one line in the log and the summary; the test goes on.

Consumers on other brokers (``--mq-consumer-host``): each of those brokers is sampled the same way (by
its own CONNECTED header; ``--mq-broker-metrics-url`` and ``--mq-broker-pid`` are the producers' broker's),
its figures the ``network`` list of the report's ``broker``; they do not stream to the sinks.
"""

from __future__ import annotations

from locust.env import Environment

import logging
import os
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import gevent

from mqusers.brokers.activemq import ActiveMQStatistics
from mqusers.brokers.artemis import ArtemisJolokia, ArtemisJvm, console_urls
from mqusers.brokers.brokeroptions import BrokerMetricsSettings, read_broker_metrics_settings
from mqusers.brokers.jvm import JvmProbe
from mqusers.brokers.model import MetricsError, Source
from mqusers.brokers.rabbitmq import RabbitManagement, management_urls
from mqusers.brokers.sampler import BrokerSampler, JvmSource
from mqusers.measure.names import RECEIVE, SEND, destination_operation
from mqusers.options.parsing import OptionError, brokers_text
from mqusers.report.brokerreport import broker_document
from mqusers.run.context import RunContext, client_config
from mqusers.stomp.client import ClientConfig, MqError, StompClient

logger = logging.getLogger(__name__)
#: The baseline reading may hold the test's start this long (a slow or absent broker source).
BASELINE_S = 2.0


def check(options: Any) -> None:
    """Refuse bad ``--mq-broker-metrics*`` values before any load (raises OptionError)."""
    metrics = read_broker_metrics_settings(options)
    if metrics.pid and not os.path.exists(f"/proc/{metrics.pid}"):
        raise OptionError(f"--mq-broker-pid {metrics.pid}: no such process on this host (the JVM is read locally)")


def start(environment: Environment, ctx: RunContext) -> None:
    """Sample the producers' broker, and each consumers' broker that is another (``--mq-consumer-host``)."""
    ctx.broker_metrics, ctx.broker_note, ctx.broker_server = None, "", ""
    metrics = read_broker_metrics_settings(environment.parsed_options)
    _start_network(environment, ctx, metrics)
    try:
        source = open_source(metrics, ctx)
    except (MetricsError, MqError) as error:
        source, ctx.broker_note = None, str(error)
        logger.warning("mqusers: broker metrics: %s (the test goes on without them)", error)
    # Artemis's JVM is read through Jolokia, wherever it runs; --mq-broker-pid reads a local one instead.
    jvm: JvmSource | None = ArtemisJvm(source) if isinstance(source, ArtemisJolokia) and not metrics.pid else None
    if metrics.pid:
        try:
            jvm = JvmProbe(metrics.pid, timeout=ctx.settings.timeout)
        except MetricsError as error:
            ctx.broker_note = "; ".join(filter(None, [ctx.broker_note, f"JVM: {error}"]))
            logger.warning("mqusers: broker metrics: %s (the test goes on without the JVM's figures)", error)
    if source is None and jvm is None:
        return  # off, or why not is in broker_note
    sampler = BrokerSampler(source, jvm, lambda: destinations(environment, ctx), interval=metrics.interval,
                            timeout=ctx.settings.timeout, listeners=ctx.broker_listeners)  # fmt: skip
    sampler.start(BASELINE_S)
    ctx.broker_metrics = sampler


def _start_network(environment: Environment, ctx: RunContext, metrics: BrokerMetricsSettings) -> None:
    """Sample each consumers' broker that is not the producers' (``--mq-consumer-host``)."""
    ctx.network_metrics = {}
    if metrics.mode == "off":
        return
    elsewhere = replace(metrics, url=None, pid=None)
    for turn, address in enumerate(ctx.settings.consumer_brokers):
        if address == ctx.settings.broker or str(address) in ctx.network_metrics:
            continue
        try:
            config = client_config(ctx.settings, role="consumer", turn=turn)
            source = open_source(elsewhere, ctx, config)
        except (MetricsError, MqError) as error:
            ctx.network_metrics[str(address)] = str(error)
            logger.warning("mqusers: broker metrics at %s: %s (the test goes on without them)", address, error)
            continue
        sampler = BrokerSampler(source, None, lambda: destinations(environment, ctx), interval=metrics.interval,
                                timeout=ctx.settings.timeout)  # fmt: skip
        sampler.start(BASELINE_S)
        ctx.network_metrics[str(address)] = sampler


def open_source(metrics: BrokerMetricsSettings, ctx: RunContext, config: ClientConfig | None = None) -> Source | None:
    """The source ``--mq-broker-metrics`` names; ``auto`` by the broker's CONNECTED ``server`` header.
    ``config``: a consumers' broker's (its server header is not the run's); None: the producers'."""
    mode, settings = metrics.mode, ctx.settings
    if mode == "off":
        return None
    producers = config is None
    config, server = config or client_config(settings), ""
    try:
        server = _server(config)  # e.g. ActiveMQ/5.17.2: the summary names the broker
    except (MetricsError, MqError):
        if mode == "auto":
            raise
    if producers:
        ctx.broker_server = server
    if mode == "auto":
        server = server.lower()
        # Artemis says "ActiveMQ-Artemis/2.40.0 ...": asked before Classic's "ActiveMQ/5.17.2".
        mode = next((name for name in ("rabbitmq", "artemis", "activemq") if name in server), "")
        if not mode:
            raise MetricsError(f"no broker figures for {server or 'this broker'}: "
                               "ActiveMQ, Artemis and RabbitMQ only")  # fmt: skip
    if mode == "activemq":
        return ActiveMQStatistics(config, timeout=settings.timeout)
    if mode == "artemis":
        # Artemis's console has no default account: the STOMP login, unless told otherwise.
        user, password = metrics.user or settings.user, metrics.password or settings.password
        if metrics.url:
            return ArtemisJolokia(metrics.url, user, password, timeout=settings.timeout)
        first, *others = console_urls(config.address)  # guessed: kept only if it is this broker's
        return ArtemisJolokia(first, user, password, timeout=settings.timeout, stomp_port=config.address.hosts[0][1],
                              alternatives=tuple(others))  # fmt: skip
    # RabbitMQ shares its users between STOMP and the management API; guest is its default.
    user, password = metrics.user or settings.user or "guest", metrics.password or settings.password or "guest"
    if metrics.url:
        return RabbitManagement(metrics.url, user, password, vhost=settings.vhost, timeout=settings.timeout)
    first, *others = management_urls(config.address)  # guessed: kept only if it is this broker's
    return RabbitManagement(first, user, password, vhost=settings.vhost, timeout=settings.timeout,
                            stomp_port=config.address.hosts[0][1], alternatives=tuple(others))  # fmt: skip


def _server(config: Any) -> str:
    """The CONNECTED frame's ``server`` header, from one connection: at most BASELINE_S of the test's start."""
    client = StompClient(config, fire=lambda **_: None)
    try:
        with gevent.Timeout(BASELINE_S, MetricsError(f"the broker at {config.address} did not answer CONNECT within "
                                                     f"{BASELINE_S:g}s: no broker figures")):  # fmt: skip
            client.connect()
        return client.server
    finally:
        client.abort()


def destinations(environment: Environment, ctx: RunContext) -> Iterable[str]:
    """The run's destinations: ``--mq-destination`` or the User classes', and any the book has seen."""
    names = [ctx.settings.destination] if ctx.settings.destination else [
        getattr(user_class, "destination", None) for user_class in environment.user_classes]  # fmt: skip
    for name in list(ctx.book.tallies):
        found = destination_operation(name)
        if found is not None and found[0] in (SEND, RECEIVE):
            names.append(found[1])
    # A pattern's label names no destination of the broker's (its destinations are not sampled one by one).
    return [
        n for n in names if isinstance(n, str) and n.startswith("/") and not n.startswith("/temp-") and "{" not in n
    ]


def stop(ctx: RunContext) -> None:
    for sampler in [ctx.broker_metrics, *ctx.network_metrics.values()]:
        if isinstance(sampler, BrokerSampler):
            sampler.stop()


def document(ctx: RunContext) -> dict[str, Any]:
    consumers_at = brokers_text(ctx.settings.consumer_brokers) if ctx.settings.consumer_brokers else ""
    warmup = ctx.settings.warmup > 0
    whole = broker_document(ctx.broker_metrics, ctx.broker_note, warmup=warmup, consumers_at=consumers_at)
    whole["network"] = [
        {"address": address, **(broker_document(None, sampler) if isinstance(sampler, str)
                                else broker_document(sampler, warmup=warmup))}
        for address, sampler in ctx.network_metrics.items()
    ]  # fmt: skip
    return whole
