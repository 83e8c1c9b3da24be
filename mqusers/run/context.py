"""Run state: what one Environment's Users, coordinator and reports share for the current test.

One :class:`RunContext` per Locust ``Environment`` (:func:`context`): the validated settings, the
run id, this process's book, audit ledgers and health, and on the master (or a local runner) the
merged audit. :class:`Shipping` is the one way worker-side state reaches the master: each part
registers how to drain it on a worker and how to merge it on the master.
"""

from __future__ import annotations

from locust.env import Environment
from locust.runners import MasterRunner, WorkerRunner

import itertools
import secrets
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from gevent.event import Event

from mqusers.audit.audit import Audit
from mqusers.audit.entries import Delta
from mqusers.audit.ledgers import ReceiveLedger, SentLedger
from mqusers.brokers.model import BrokerSample
from mqusers.brokers.sampler import BrokerSampler
from mqusers.coordination.messages import Coordinator
from mqusers.measure.book import Book
from mqusers.measure.hdrintervals import Intervals
from mqusers.measure.outages import Outages, describe, window_start
from mqusers.measure.perdestination import Spread
from mqusers.measure.recorder import Recorder
from mqusers.measure.series import Series
from mqusers.options.settings import Settings, class_networks, read_settings
from mqusers.run.backlog import Phases
from mqusers.run.ending import Drain
from mqusers.run.faults import FaultSchedule
from mqusers.run.health import Health
from mqusers.run.locust_stats import add_batches
from mqusers.run.usererrors import StartFailures, count_start_failures
from mqusers.run.verdicts import HealthReport
from mqusers.stomp.client import ClientConfig, MqError
from mqusers.stomp.nacks import NackCounts

T = TypeVar("T")
#: How often a load process hands its recorded successes to the book, Locust's stats and the sinks.
FLUSH_EVERY_S = 0.2


class Shipping:
    """Worker-side state bound for the master: each part registers a drain (worker) and a merge (master).

    Workers send :meth:`payload` with every Locust report, while draining, and once more, final, at
    stop; the master :meth:`take`\\ s each. After the master has everything (or a worker has sent
    its final payload), :meth:`complete` runs what waits for the end: the report, the sinks' last
    points. No part needs to know the order of Locust's listeners.
    """

    def __init__(self, prepare: Callable[[], None] = lambda: None) -> None:
        #: Runs before every payload: the recorder's flush, so each part ships all recorded so far.
        self._prepare = prepare
        self._parts: dict[str, tuple[Callable[[bool], Any], Callable[[Any, str], None]]] = {}
        self._on_complete: list[Callable[[], None]] = []

    def register(self, key: str, drain: Callable[[bool], T], merge: Callable[[T, str], None]) -> None:
        """``drain(final)`` on a worker (``final``: the test is stopping); ``merge(value, node)`` on the master.

        The value must survive msgpack (Locust's encoding): dicts, lists, str, numbers, None.
        """
        self._parts[key] = (drain, merge)

    def on_complete(self, callback: Callable[[], None]) -> None:
        self._on_complete.append(callback)

    def payload(self, final: bool = False) -> dict[str, Any]:
        """Every part's state since the last payload, keyed for :meth:`take`."""
        self._prepare()
        return {key: drain(final) for key, (drain, _) in self._parts.items()}

    def take(self, data: Mapping[str, Any], node: str) -> None:
        for key, (_, merge) in self._parts.items():
            if data.get(key) is not None:
                merge(data[key], node)

    def complete(self) -> None:
        for callback in self._on_complete:
            callback()


@dataclass
class RunContext:
    """What one Environment's Users share for the current test."""

    settings: Settings
    #: The STOMP User classes' own broker URLs, read before Locust overwrites ``host`` with ``--host``.
    brokers: tuple[str, ...] = ()
    #: The consumer classes' own ``host`` when they name other brokers than the producer classes.
    consumer_hosts: tuple[str, ...] = ()
    run_id: str = ""
    #: Random per process, so producer ids stay unique across workers and hosts.
    process_tag: str = field(default_factory=lambda: secrets.token_hex(4))
    book: Book = field(default_factory=Book)
    #: Per-second rates, latency and generator health for the HTML report (merged on the master).
    series: Series = field(default_factory=Series)
    #: Per-interval HdrHistograms per event name, the JSON's ``intervals`` (merged on the master).
    intervals: Intervals = field(default_factory=Intervals)
    started: float = 0.0
    error: str | None = None
    #: Workers whose final tallies the master has merged this test.
    finals: set[str] = field(default_factory=set)
    finals_arrived: Event = field(default_factory=Event)
    #: Master: each worker heard from this test, its process tag and last shipment's time
    #: (:mod:`mqusers.wiring.lostworkers`).
    heard: dict[str, tuple[str, float]] = field(default_factory=dict)
    #: Users whose on_start raised (merged on the master): the summary names them.
    start_failures: StartFailures = field(default_factory=StartFailures)
    #: Master: each worker's last heartbeat (time.time()).
    heartbeats: dict[str, float] = field(default_factory=dict)
    #: Worker: the master confirmed this test's final shipment.
    final_received: Event = field(default_factory=Event)
    #: This test's end is over (master or local runner: its report written); quitting waits for it.
    reported: Event = field(default_factory=Event)
    ordinals: dict[str, itertools.count[int]] = field(default_factory=dict)
    #: Users per role this test (a local runner; empty on a worker: its own share of each role is
    #: read as its Users start): how a destination pattern's destinations are shared.
    role_users: dict[str, int] = field(default_factory=dict)
    #: This process's part of a pattern's destinations: (worker index, workers); (0, 1) alone.
    part: tuple[int, int] = (0, 1)
    #: Each destination of a pattern's own receive figures (master or local runner: everyone's).
    spread: Spread = field(default_factory=Spread)

    coordinator: Coordinator | None = None
    #: The message audit: what this process's producers sent and its subscriptions received, and
    #: (master or local runner) everything merged.
    sent: SentLedger = field(default_factory=SentLedger)
    received: ReceiveLedger = field(default_factory=ReceiveLedger)
    audit: Audit = field(default_factory=Audit)
    #: ``--mq-nack-ratio``: this process's NACK counts, per queue (its consumers share one) or topic subscription.
    nacks: dict[str, NackCounts] = field(default_factory=dict)
    #: Connection drops of this process's Users (master: everyone's), for the failover report.
    outages: Outages = field(default_factory=Outages)
    #: False once the run is ending: producers send nothing more.
    producing: bool = True
    #: (destination, client) of this process's producers, for the blocked-send watch and the drain.
    producers: list[tuple[str, Any]] = field(default_factory=list)
    health: Health = field(default_factory=lambda: Health("local"))
    #: The master's copy of every process's health report, by node.
    generators: dict[str, HealthReport] = field(default_factory=dict)
    #: The master's own health at the test's end (None elsewhere, or before).
    master_health: HealthReport | None = None
    drain: Drain | None = None
    #: A backlog run's build and drain (``--mq-backlog-*``, a single process), else None.
    backlog: Phases | None = None
    #: ``time`` (-t, the web UI's stop), ``count`` (--mq-total-messages done) or ``interrupt`` (Ctrl-C).
    ended_by: str = "time"
    stopped: bool = False
    #: Workers heard from since producing stopped: until all have, the master's audit is stale.
    progressed: set[str] = field(default_factory=set)
    pump: Any = None
    #: This process's per-message successes, handed on in bulk (:mod:`mqusers.measure.recorder`).
    recorder: Recorder = field(default_factory=lambda: Recorder(lambda **_: None))
    flusher: Any = None
    #: This test's ``--mq-fault`` commands (master or local runner).
    faults: FaultSchedule | None = None
    #: ``(kind, text, ts_ns)`` listeners: marks on the live dashboards (faults, outages).
    annotations: list[Callable[[str, str, int], None]] = field(default_factory=list)
    #: The broker's own figures (master or local runner), or why there are none.
    broker_metrics: BrokerSampler | None = None
    broker_note: str = ""
    #: Each consumers' broker's own figures (``--mq-consumer-host``, other than the producers'), by address;
    #: a note instead of a sampler says why there are none.
    network_metrics: dict[str, BrokerSampler | str] = field(default_factory=dict)
    #: The broker's CONNECTED ``server`` header (name/version), "" when not asked (``--mq-broker-metrics off``).
    broker_server: str = ""
    #: The last report's summary until it is printed (:class:`mqusers.wiring.endscreen.Summary`).
    summary: Any = None
    #: Each broker reading goes to these (the InfluxDB sink), on the master or local runner.
    broker_listeners: list[Callable[[BrokerSample], None]] = field(default_factory=list)
    shipping: Shipping = field(init=False)

    def __post_init__(self) -> None:
        self.shipping = Shipping(prepare=lambda: self.recorder.flush())

    def annotate(self, kind: str, text: str, ts_ns: int) -> None:
        for listener in self.annotations:
            listener(kind, text, ts_ns)

    def drain_audit(self, packed: bool = False) -> Delta:
        """Both ledgers' news as one delta: what was sent, then what was received (``packed``: for msgpack)."""
        return {**self.sent.drain(), **self.received.drain(packed)}

    def fold_ledgers(self) -> None:
        """A process without a master: its own ledgers' news into its own audit (and a pattern's spread)."""
        self.audit.merge(self.drain_audit())
        self.spread.fold()

    def interrupt_drain(self) -> bool:
        """Ctrl-C or SIGTERM during a drain: end it now; False when no drain runs."""
        if self.drain is None or not self.drain.running:
            return False
        self.ended_by, self.drain.cut = "interrupt", True
        return True

    def clock_offsets(self) -> dict[str, int]:
        """Settled workers' clock offsets (ns) by process tag, for the audit; {} on a worker or alone."""
        conductor = self.coordinator.conductor if self.coordinator is not None else None
        return conductor.offsets_by_tag() if conductor is not None else {}

    def clock_offsets_ms(self) -> dict[str, dict[str, float]]:
        """Each worker's clock offset, error and RTT in ms, for the report; {} on a worker or alone."""
        conductor = self.coordinator.conductor if self.coordinator is not None else None
        return conductor.offsets_ms() if conductor is not None else {}

    def next_in_role(self, role: str) -> int:
        """0, 1, 2... per role and test: which share of a destination pattern a User takes."""
        return next(self.ordinals.setdefault(f"role {role}", itertools.count()))

    def next_ordinal(self, user_class: type) -> int:
        """0, 1, 2... per User class and test: stable names for durable subscribers."""
        return next(self.ordinals.setdefault(user_class.__name__, itertools.count()))


_contexts: weakref.WeakKeyDictionary[Environment, RunContext] = weakref.WeakKeyDictionary()


def context(environment: Environment) -> RunContext:
    """The environment's run context, created (and its book attached) on first use."""
    ctx = _contexts.get(environment)
    if ctx is None:
        brokers, consumer_hosts = class_networks(environment.user_classes)
        settings = read_settings(environment.parsed_options, environment.host, brokers, consumer_hosts)
        ctx = _contexts[environment] = RunContext(settings, brokers, consumer_hosts)
        ctx.run_id = ctx.settings.run_id or secrets.token_hex(6)
        ctx.sent.process = ctx.received.process = ctx.outages.process = ctx.process_tag
        environment.events.request.add_listener(ctx.book.on_request)
        environment.events.request.add_listener(ctx.series.on_request)
        environment.events.request.add_listener(ctx.intervals.on_request)
        count_start_failures(environment, lambda: ctx.start_failures)
        ctx.recorder = Recorder(environment.events.request.fire, ctx.settings.request_events == "per-message")
        ctx.recorder.add_consumer(ctx.book.add_batches)
        ctx.recorder.add_consumer(ctx.series.add_batches)
        ctx.recorder.add_consumer(ctx.intervals.add_batches)
        ctx.recorder.add_consumer(lambda batches: add_batches(environment.stats, batches))
        runner = environment.runner
        node = (
            runner.client_id
            if isinstance(runner, WorkerRunner)
            else "master"
            if isinstance(runner, MasterRunner)
            else "local"
        )
        ctx.health = Health(
            node, producers=lambda: ctx.producers, fire=environment.events.request.fire, on_second=ctx.series.add_second
        )
        ship = ctx.shipping.register
        ship("mqusers_book", lambda _: ctx.book.drain(), lambda data, _: ctx.book.merge(data))
        ship("mqusers_audit", lambda _: ctx.drain_audit(packed=True), lambda delta, _: ctx.audit.merge(delta))
        ctx.outages.listeners.append(lambda o: ctx.annotate("outage", describe(o, time.time_ns()), window_start(o)))
        ship("mqusers_outages", ctx.outages.drain, lambda outages, _: ctx.outages.merge(outages))
        ship("mqusers_start_failures", lambda _: ctx.start_failures.drain(), lambda s, _: ctx.start_failures.merge(s))
        ship("mqusers_series", lambda _: ctx.series.drain(), lambda payload, _: ctx.series.merge(payload))
        ship("mqusers_intervals", lambda _: ctx.intervals.drain(), lambda payload, _: ctx.intervals.merge(payload))
        ship("mqusers_spread", lambda _: ctx.spread.drain(), ctx.spread.merge)
        ship(
            "mqusers_health", lambda _: ctx.health.report(), lambda report, node: ctx.generators.update({node: report})
        )
    return ctx


#: The master's worker count, set on its options at test start: they travel to the workers with each spawn.
WORKERS_OPTION = "mq_pattern_workers"


def client_config(
    settings: Settings, client_id: str | None = None, role: str = "producer", turn: int = 0
) -> ClientConfig:
    """A client's configuration; a ``consumer``'s goes to ``--mq-consumer-host`` when one is given, the
    ``turn``-th of several (round the list)."""
    if settings.broker is None:
        raise MqError("no broker: pass --mq-host stomp://HOST:PORT (or --host in a STOMP-only locustfile)")
    at = settings.consumer_brokers
    return ClientConfig(
        address=at[turn % len(at)] if role == "consumer" and at else settings.broker,
        user=settings.user,
        password=settings.password,
        vhost=settings.vhost,
        heartbeats=settings.heartbeats,
        timeout=settings.timeout,
        dialect=settings.dialect,
        client_id=client_id,
        ca_file=settings.ca_file,
        cert_file=settings.cert_file,
        key_file=settings.key_file,
        max_frame=settings.max_frame,
    )


def coordinator_for(environment: Environment, ctx: RunContext) -> Coordinator:
    if ctx.coordinator is None:
        ctx.coordinator = Coordinator(
            environment, ctx.process_tag, on_all_sent=lambda: setattr(ctx, "ended_by", "count")
        )
    return ctx.coordinator
