"""Abstract consumer Users: subscribe, measure and acknowledge every delivery, answer requests.

Configured like the producers in :mod:`mqusers.users.producers`, by class attributes that ``--mq-*`` options
override; a :class:`mqusers.stomp.receiver.Receiver` does the per-message work in the reader greenlet.
"""

from __future__ import annotations

from locust import task

import contextlib
import math
import time
from typing import Any, ClassVar

from gevent import GreenletExit

from mqusers.measure.names import DEMAND, REQUEST_TYPE, destination_kind, event_name
from mqusers.options import selectors
from mqusers.run.context import client_config, coordinator_for
from mqusers.stomp.client import MqError
from mqusers.stomp.nacks import NackCounts, as_ratio
from mqusers.stomp.probe import Probe, await_demand
from mqusers.stomp.receiver import Receiver
from mqusers.stomp.replier import Replier
from mqusers.users.base import StompUser

#: A paced drain's prefetch (unless ``--mq-prefetch`` gives one): this many seconds of its rate, at least 1.
PACED_PREFETCH_S = 0.01


class StompConsumerUser(StompUser):
    """Subscribes to ``destination`` and fires ``receive`` with every message's latency.

    A destination pattern (``/queue/orders.{0..9999}``): this user subscribes to its share of the
    pattern's destinations (:func:`~mqusers.options.destpattern.share`), all on its one connection.
    """

    abstract = True
    role: ClassVar[str] = "consumer"
    #: ``auto``, ``client`` (cumulative ACKs) or ``client-individual``.
    ack = "auto"
    #: Unacknowledged messages the broker may push ahead; 0 leaves the broker's default.
    prefetch = 0
    #: A durable topic subscription: it keeps messages published while this user is away.
    durable = False
    #: Remove a durable subscription when the user stops (UNSUBSCRIBE with its name).
    remove_durable_on_stop = False
    #: Extra SUBSCRIBE headers, e.g. ``{"selector": "type = 'a'"}`` (which the audit does not know of).
    subscribe_headers: ClassVar[dict[str, str]] = {}
    #: Which producers' labels this user's selector takes (:mod:`mqusers.options.selectors`): ``all``,
    #: ``own``, ``L0,L2``; None subscribes without one. Needs ``labels``.
    select: str | None = None
    #: The share of messages to NACK (chosen by seq; needs ``client-individual``), and how many times
    #: each chosen one is NACKed before it is accepted (:mod:`mqusers.stomp.nacks`).
    nack_ratio = 0.0
    nack_times = 1
    #: Messages of other runs and foreign ones: ``apart`` (counted apart), ``fail`` (also Locust
    #: failures) or ``receive`` (other runs' messages count as received: draining a backlog).
    other_runs = "apart"
    #: ACKs per transaction, each committed with a receipt (``commit-acks``); 0: plain ACKs. Auto acks
    #: become client-individual: there must be ACKs to put in them.
    tx_ack = 0
    #: Priority levels the producers stamp (``--mq-priorities``): a backlog run counts inversions and
    #: latency per priority; RabbitMQ's queue is declared a priority queue.
    priorities = 0

    def __init__(self, environment: Any):
        super().__init__(environment)  # calls client_id(), which settles self.durable
        self.ack, self.prefetch = self.setting("ack"), self.setting("prefetch")
        self.nack_ratio, self.nack_times = self.setting("nack_ratio"), self.setting("nack_times")
        labels, select = self.setting("labels"), self.setting("select")
        selectors.check(labels, select)
        #: The labels its selector takes; None: no selector.
        self.selects = selectors.selected(select, labels, self.ordinal)
        #: A paced drain (``--mq-backlog-drain-rate``): ACKs wait their turn, so the broker must wait for
        #: them (no auto ack) and push few ahead, or the consumers would take the prefetch at once.
        self.pace = self.mq.backlog.pace if self.mq.backlog is not None else None
        if self.pace is not None:
            self.ack = "client-individual" if self.ack == "auto" else self.ack
            self.prefetch = self.mq.settings.prefetch or max(1, math.ceil(self.pace.rate * PACED_PREFETCH_S))
        self.tx_ack = self.setting("tx_ack")
        if self.tx_ack and self.ack == "auto":
            self.ack = "client-individual"
        #: Subscription ids by destination, while subscribed.
        self.subscriptions: dict[str, str] = {}
        self._joined = False
        self.receivers = [self.make_receiver(destination) for destination in self.lanes]
        # Producers send in message groups: each group's deliveries are timed for the audit's check.
        grouped = self.mq.settings.groups
        if grouped is None:
            grouped = any(getattr(user_class, "groups", 0) for user_class in environment.user_classes)
        for receiver in self.receivers:
            receiver.ack_in_transactions(self.tx_ack)
            receiver.spans = bool(grouped)
        #: The first (with a plain destination, the only) receiver.
        self.receiver = self.receivers[0]

    def client_id(self) -> str | None:
        self.durable = self.setting("durable")
        return self.durable_name() if self.durable else None

    def durable_name(self) -> str:
        """Stable across runs of the same topology: destination, worker index, user ordinal."""
        runner = self.environment.runner
        worker = getattr(runner, "worker_index", 0) if runner is not None else 0
        slug = self.destination.strip("/").replace("/", ".")
        return f"mqusers.{slug}.{worker}.{self.ordinal}"

    def make_receiver(self, destination: str) -> Receiver:
        # Its ACK batch is the dialect's, set once connected (on_connected).
        clock = coordinator_for(self.environment, self.mq).follower
        return Receiver(self.client, destination, self.ack, clock=clock, **self.receiver_options(destination))

    def receiver_options(self, destination: str) -> dict[str, Any]:
        """The run's id, other-runs mode and time-to-live; with a pattern, its label and the destination's own
        figures."""
        options: dict[str, Any] = {"run_id": self.mq.run_id, "other_runs": self.setting("other_runs"),
                                   "ttl_ns": self.setting("ttl_ms") * 1_000_000}  # fmt: skip
        if self.nack_ratio:
            # A queue's consumers in this process share its counts; a topic subscription has its own.
            key = f"{destination} {type(self).__name__}/{self.ordinal}"
            key = destination if destination_kind(destination) == "queue" else key
            options["nacks"] = self.mq.nacks.setdefault(key, NackCounts(as_ratio(self.nack_ratio), self.nack_times))
        if self.mq.backlog is not None:
            options.update(backlog=self.mq.backlog.figures, pace=self.pace, priorities=self.setting("priorities") or 0)
        if destination != self.destination:
            options.update(label=self.destination, spot=self.mq.spread.spot(destination))
        return options

    def last_ok_ns(self) -> int:
        return max(receiver.last_ns for receiver in self.receivers) or -1

    def on_start(self) -> None:
        phases = self.mq.backlog
        if phases is None or phases.gate.is_set():
            super().on_start()
            return
        # A backlog run's build: counted at the start barrier now (producers must not wait for this
        # consumer), subscribed once the build is over.
        self.count_as_joined()
        phases.hold()
        try:
            super().on_start()
        finally:
            phases.joined()

    def on_connection_lost(self, dropped: bool) -> None:
        now = time.time_ns()
        for receiver in self.receivers:
            if receiver.audit is not None:
                receiver.audit.leave(now, dropped)

    def on_connected(self) -> None:
        dialect = self.client.dialect
        # Small batches: ActiveMQ pages 200 messages in at a time, Artemis lets 10 KiB out, and both wait for ACKs.
        ack_every = dialect.ack_every(self.prefetch, self.message_size)
        headers = {**self.subscribe_headers, **dialect.prefetch_headers(self.prefetch, self.message_size, self.ack)}
        if self.selects is not None:
            headers["selector"] = selectors.expression(self.selects)
        if self.setting("priorities"):
            headers.update(dialect.priority_queue_headers(self.destination))
        if self.durable:
            headers.update(dialect.durable_headers(self.durable_name()))
            headers["id"] = self.durable_name()
        first = not self.subscriptions and not self._joined
        key = self.durable_name() if self.durable else f"{self.mq.process_tag}/{type(self).__name__}/{self.ordinal}"
        kind = destination_kind(self.destination)
        for destination, receiver in zip(self.lanes, self.receivers, strict=True):
            receiver.reset()
            receiver.batch_acks(1 if self.pace is not None else ack_every)  # paced: each its own turn
            # In place before SUBSCRIBE: deliveries may come before the RECEIPT is read.
            audit = receiver.audit = self.mq.received.subscription(
                key, destination, kind, None, self.durable, self.selects, self.at_broker()
            )
            self.subscriptions[destination] = self.client.subscribe(
                destination, receiver, ack=self.ack, headers=dict(headers), label=self.destination
            )
            # A broker confirms SUBSCRIBE with its RECEIPT: from now on this subscription expects messages.
            audit.join(time.time_ns())
        if first and self.crosses_network():
            self.await_network_demand()
        if first:
            self.count_as_joined()

    def at_broker(self) -> str:
        """The broker this consumer reads from when consumers are elsewhere than the producers, else ``""``."""
        return str(self.client.config.address) if self.mq.settings.consumer_brokers else ""

    def crosses_network(self) -> bool:
        """A topic subscriber on another broker than the producers': what is published before the network's
        demand reaches their broker is dropped there."""
        return self.client.config.address != self.mq.settings.broker and destination_kind(self.destination) == "topic"

    def await_network_demand(self) -> None:
        """Hold this subscriber from the start barrier until the producers' broker passes its probes on
        (:mod:`mqusers.stomp.probe`): the ``demand`` event times it; a wait past the bound is its failure."""
        probe = Probe(self.lanes)
        for receiver in self.receivers:
            receiver.probe = probe
        start = time.perf_counter()
        try:
            why = await_demand(client_config(self.mq.settings, None, "producer"), probe)
        except GreenletExit:
            # The run ended first: its messages were published with this subscriber not yet reached.
            self._demand_event(start, f"the run ended {time.perf_counter() - start:.1f} s into the wait for "
                                       "the network's demand, which had not arrived")  # fmt: skip
            raise
        finally:
            for receiver in self.receivers:
                receiver.probe = None
                if receiver.audit is not None:
                    receiver.audit.probes_sent += probe.sent.get(receiver.destination, 0)
        self._demand_event(start, why)

    def _demand_event(self, start: float, why: str | None) -> None:
        """The ``demand`` event: how long the wait took, and why it failed (None: it did not)."""
        self.client.fire(request_type=REQUEST_TYPE, name=event_name(DEMAND, self.destination),
                         response_time=(time.perf_counter() - start) * 1000.0, response_length=0,
                         exception=None if why is None else MqError(why), context={})  # fmt: skip

    def count_as_joined(self) -> None:
        """Count this consumer at the start barrier, once: subscribed, or never will (its on_start raised)."""
        if not self._joined:
            self._joined = True
            coordinator_for(self.environment, self.mq).joined()

    def on_stop(self) -> None:
        # Locust may call on_stop twice when a stop interrupts a task: act once. DISCONNECT ends a
        # plain subscription; an UNSUBSCRIBE racing in-flight deliveries makes RabbitMQ send ERRORs.
        subscriptions, self.subscriptions = self.subscriptions, {}
        self._check_back()
        now = time.time_ns()
        for receiver in self.receivers:
            if receiver.audit is not None:
                receiver.audit.leave(now)
        if self.client.connected and subscriptions:
            for receiver in self.receivers:
                receiver.flush()
                if self.pace is not None:  # what it received is acknowledged, not left to be redelivered
                    self.pace.release_all(receiver)
            if self.durable and self.remove_durable_on_stop:
                headers = self.client.dialect.durable_unsubscribe_headers(self.durable_name())
                # A failure is recorded as an event; disconnecting is all that is left to do.
                with contextlib.suppress(MqError):
                    self.client.unsubscribe(self.destination, subscriptions[self.destination], headers)
        super().on_stop()

    def wait_time(self) -> float:
        # Disconnected: try again when the back-off allows, not a second later.
        return 1.0 if self.client.connected else min(1.0, max(0.05, self.backoff_remaining()))

    @task
    def keep_connected(self) -> None:
        # The one task of every consumer (Locust runs a base class's tasks too): subclasses override tend.
        self.tend()

    def tend(self) -> None:
        """Reconnect when due; acknowledge a batch the stream stopped short of filling (a backlog's end)."""
        if self.ensure_connected():
            for receiver in self.receivers:
                receiver.flush()
            self._check_back()

    def _check_back(self) -> None:
        """After a reconnect, the first delivery ends the outage."""
        if self.availability.pending:
            first = min((receiver.first_ns for receiver in self.receivers if receiver.first_ns), default=0)
            if first:
                self.availability.back(first)


class StompResponderUser(StompConsumerUser):
    """Answers requests on ``destination`` (a queue) on each request's ``reply-to``."""

    abstract = True

    def make_receiver(self, destination: str) -> Receiver:
        replier = Replier(self.client, self.destination)
        clock = coordinator_for(self.environment, self.mq).follower
        return Receiver(
            self.client, destination, self.ack, observer=replier, clock=clock, **self.receiver_options(destination)
        )
