"""What a broker-metrics source reports: one :class:`BrokerSample` per interval, the same shape for every broker.

Figures a broker does not have are left out (``total=False``), never zero: "not reported" is not "none".
Counters (``enqueued``, ``dequeued``...) are the broker's own, cumulative since it started; the report
takes the difference between the first and the last sample of a test.
"""

from __future__ import annotations

from typing import Protocol, TypedDict

from mqusers.errors import MqusersError


class DestinationFigures(TypedDict, total=False):
    """One destination, named as mqusers names it (``/queue/orders``, ``/topic/prices``)."""

    #: Messages the broker accepted (ActiveMQ enqueueCount; RabbitMQ publish count; Artemis the address's
    #: routedMessageCount + unRoutedMessageCount).
    enqueued: int
    #: Messages acknowledged by consumers and removed (ActiveMQ dequeueCount; RabbitMQ ack + no-ack
    #: deliveries; Artemis messagesAcknowledged).
    dequeued: int
    #: Messages dispatched to consumers, acknowledged or not (ActiveMQ dispatchCount; RabbitMQ deliver_get).
    dispatched: int
    expired: int
    #: Messages the broker gave up on: sent to the dead-letter address, or removed (Artemis messagesKilled).
    killed: int
    #: Messages held now: ready and unacknowledged (ActiveMQ size; RabbitMQ messages; Artemis messageCount).
    depth: int
    #: Dispatched, not yet acknowledged (ActiveMQ inflightCount; RabbitMQ messages_unacknowledged; Artemis
    #: deliveringCount).
    unacked: int
    consumers: int
    producers: int
    #: Of the destination's memory limit (ActiveMQ memoryPercentUsage; Artemis addressLimitPercent).
    memory_percent: float
    #: What its messages take in memory (Artemis addressSize: what paging and blocking are decided on).
    memory_bytes: int
    #: What its durable messages take in the store (Artemis: its queues' durablePersistentSize).
    store_bytes: int
    #: 1 while the broker pages the destination's messages to disk, 0 otherwise (Artemis isPaging).
    paging: int
    #: Page files the destination has on disk (Artemis numberOfPages).
    pages: int
    #: Rates the broker computes itself (RabbitMQ), msg/s.
    publish_rate: float
    deliver_rate: float
    ack_rate: float


#: The cumulative ones of :class:`DestinationFigures`: a test's figure is the difference of two readings.
COUNTERS = ("enqueued", "dequeued", "dispatched", "expired", "killed")


class BrokerFigures(TypedDict, total=False):
    """The broker as a whole."""

    memory_percent: float
    #: The message store's use of its limit: at 100 producers block (ActiveMQ storePercentUsage; Artemis
    #: the store's disk against max-disk-usage).
    store_percent: float
    temp_percent: float
    #: How full the message store's disk is (Artemis diskStoreUsage).
    disk_percent: float
    connections: int
    memory_bytes: int
    #: What the message store uses (ActiveMQ storeUsage). 0 while persistent messages are held: a
    #: memory-only broker (persistent="false"), or a JDBC store, which reports no usage.
    store_bytes: int
    fd_used: int
    fd_total: int
    #: Resource alarms that block publishers (RabbitMQ: "memory", "disk"; Artemis: "disk"); empty when none.
    alarms: list[str]
    #: Which broker process answered (ActiveMQ's brokerId, RabbitMQ's nodes and their OS pids, Artemis's
    #: NodeID and its JVM's start time): it
    #: changes when the broker restarts, and with it every counter starts again.
    instance: str


class JvmFigures(TypedDict, total=False):
    """The broker's JVM: a local one's ``jstat``/``/proc`` on its PID, or Artemis's through Jolokia."""

    heap_used_mb: float
    heap_committed_mb: float
    gc_count: int
    gc_seconds: float
    threads: int
    #: Of one core, since the previous sample.
    cpu_percent: float


class BrokerSample(TypedDict):
    ts_ns: int
    #: ``activemq``, ``rabbitmq`` or ``artemis`` (``jvm``: the JVM's figures only).
    source: str
    broker: BrokerFigures
    destinations: dict[str, DestinationFigures]
    #: None when no JVM is read (no local broker PID given, and not Artemis).
    jvm: JvmFigures | None


class MetricsError(MqusersError):
    """A source could not answer; the message is one line saying why (and how to fix it, when known)."""


class LoginRefused(MetricsError):
    """The management API refused the credentials, or the user's access."""


class Source(Protocol):
    """A broker-metrics source: blocking calls, each bounded by its own timeout (run in a greenlet)."""

    name: str
    #: At the end, two readings this far apart that agree count as settled (the broker's counters lag).
    settle_s: float

    def broker(self) -> BrokerFigures: ...

    def destination(self, destination: str) -> DestinationFigures:
        """Figures of one destination; an empty dict when the broker does not know it (yet)."""
        ...

    def close(self) -> None: ...
