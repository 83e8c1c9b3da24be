"""Artemis's Jolokia answers read: what to ask for (MBean patterns, attributes) and the figures in the answers.

:mod:`mqusers.brokers.artemis` sends the requests and says which address a destination is; this
module builds the read requests and reads the values they answered. Every read names its MBeans
by pattern (``broker=*``), so the broker's name need not be known; a pattern's value is a map of
MBean name to attributes. An attribute the broker could not read (``ignoreErrors``) is a string:
left out, never zero.
"""

from __future__ import annotations

from typing import Any

from mqusers.brokers.model import BrokerFigures, DestinationFigures, JvmFigures

DOMAIN = "org.apache.activemq.artemis"
BROKER_ATTRIBUTES = ("AddressMemoryUsage", "AddressMemoryUsagePercentage", "DiskStoreUsage", "MaxDiskUsage",
                     "ConnectionCount", "NodeID")  # fmt: skip
ADDRESS_ATTRIBUTES = ("RoutedMessageCount", "UnRoutedMessageCount", "AddressSize", "Paging", "NumberOfPages",
                      "AddressLimitPercent")  # fmt: skip
QUEUE_ATTRIBUTES = ("MessagesAdded", "MessagesAcknowledged", "MessagesExpired", "MessagesKilled", "MessageCount",
                    "DeliveringCount", "ConsumerCount", "DurablePersistentSize")  # fmt: skip
#: The JVM's platform MBeans: cheap reads of values the JVM keeps anyway.
JVM_READS = {
    "java.lang:type=Memory": ("HeapMemoryUsage",),
    "java.lang:type=GarbageCollector,name=*": ("CollectionCount", "CollectionTime"),
    "java.lang:type=Threading": ("ThreadCount",),
    "java.lang:type=OperatingSystem": ("ProcessCpuTime",),
}
#: The JVM's start (ms since the epoch): with the broker's NodeID, which process answered.
RUNTIME = "java.lang:type=Runtime"


def quote(value: str) -> str:
    """``value`` as a quoted ObjectName value (``javax.management.ObjectName.quote``), as Artemis names its MBeans."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("*", "\\*").replace("?", "\\?")
    return '"' + escaped.replace("\n", "\\n") + '"'


def read(mbean: str, attributes: tuple[str, ...]) -> dict[str, Any]:
    """One Jolokia read request; an attribute that fails is an error string in the answer, not a failed read."""
    return {"type": "read", "mbean": mbean, "attribute": list(attributes), "config": {"ignoreErrors": True}}


def broker_requests() -> list[dict[str, Any]]:
    return [read(f"{DOMAIN}:broker=*", BROKER_ATTRIBUTES), read(RUNTIME, ("StartTime",))]


def address_requests(address: str) -> list[dict[str, Any]]:
    """The address ``address`` and its queues, whatever their routing type."""
    mbean = f"{DOMAIN}:broker=*,component=addresses,address={quote(address)}"
    queues = f"{mbean},subcomponent=queues,routing-type=*,queue=*"
    return [read(mbean, ADDRESS_ATTRIBUTES), read(queues, QUEUE_ATTRIBUTES)]


def jvm_requests() -> list[dict[str, Any]]:
    return [read(mbean, attributes) for mbean, attributes in JVM_READS.items()]


def matched(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """A pattern read's MBeans' attributes, in name order; none when nothing matched (HTTP 404 in the answer)."""
    return [attributes for _, attributes in sorted(value(answer).items()) if isinstance(attributes, dict)]


def _number(attributes: dict[str, Any], name: str) -> int | float | None:
    value = attributes.get(name)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _int(attributes: dict[str, Any], name: str) -> int | None:
    value = _number(attributes, name)
    return int(value) if value is not None else None


def broker_figures(broker: dict[str, Any], runtime: dict[str, Any]) -> BrokerFigures:
    """The broker MBean's attributes (and ``java.lang:type=Runtime``'s) as :class:`BrokerFigures`.

    ``memory_percent`` is the addresses' memory against ``global-max-size`` (beyond it addresses
    page, drop or block); ``disk_percent`` how full the store's disk is, ``store_percent`` the same
    against ``max-disk-usage`` (at 100 the broker blocks producers: the ``disk`` alarm).
    """
    figures = BrokerFigures(alarms=[])
    if (memory := _int(broker, "AddressMemoryUsage")) is not None:
        figures["memory_bytes"] = memory
    if (percent := _number(broker, "AddressMemoryUsagePercentage")) is not None:
        figures["memory_percent"] = float(percent)
    if (connections := _int(broker, "ConnectionCount")) is not None:
        figures["connections"] = connections
    disk, limit = _number(broker, "DiskStoreUsage"), _number(broker, "MaxDiskUsage")
    if disk is not None and disk >= 0:
        figures["disk_percent"] = 100.0 * disk
        if limit is not None and 0 < limit <= 100:
            figures["store_percent"] = 100.0 * (100.0 * disk) / limit
            if 100.0 * disk >= limit:
                figures["alarms"].append("disk")
    node, started = broker.get("NodeID"), runtime.get("StartTime")
    if isinstance(node, str) and node:
        figures["instance"] = f"{node}/{started}" if isinstance(started, int) else node
    return figures


def destination_figures(address: dict[str, Any], queues: list[dict[str, Any]]) -> DestinationFigures:
    """An address (a destination) and its queues as :class:`DestinationFigures`.

    ``enqueued`` is the address's own count of the messages sent to it, routed to a queue or not:
    it outlives the queues (a subscriber's goes with it). ``dequeued``, ``expired`` and ``killed`` are
    its queue's counters, reported only when the address has one queue (a /queue/ destination, or a
    topic with one subscriber): summed over subscribers that come and go they would be no counters.
    Depth, unacked and consumers are the sums over its queues; ``paging``, ``pages`` and
    ``memory_bytes`` (its queues' estimated size in memory) the address's; ``store_bytes`` its
    queues' durable messages' size.
    """
    figures = DestinationFigures()
    routed, unrouted = _int(address, "RoutedMessageCount"), _int(address, "UnRoutedMessageCount")
    if routed is not None and unrouted is not None:
        figures["enqueued"] = routed + unrouted
    if (size := _int(address, "AddressSize")) is not None:
        figures["memory_bytes"] = size
    if isinstance(address.get("Paging"), bool):
        figures["paging"] = int(address["Paging"])
    if (pages := _int(address, "NumberOfPages")) is not None:
        figures["pages"] = pages
    if (limit := _number(address, "AddressLimitPercent")) is not None and limit >= 0:
        figures["memory_percent"] = float(limit)
    if len(queues) == 1:
        for field, attribute in (("dequeued", "MessagesAcknowledged"), ("expired", "MessagesExpired"),
                                 ("killed", "MessagesKilled")):  # fmt: skip
            if (value := _int(queues[0], attribute)) is not None:
                figures[field] = value  # type: ignore[literal-required]
    for field, attribute in (("depth", "MessageCount"), ("unacked", "DeliveringCount"), ("consumers", "ConsumerCount"),
                             ("store_bytes", "DurablePersistentSize")):  # fmt: skip
        values = [_int(queue, attribute) for queue in queues]
        if values and None not in values:
            figures[field] = sum(v for v in values if v is not None)  # type: ignore[literal-required]
    return figures


def jvm_figures(answers: list[dict[str, Any]]) -> tuple[JvmFigures, int | None]:
    """:data:`JVM_READS`' answers, in order, as :class:`JvmFigures` and the process's CPU time (ns) so far."""
    memory, collectors, threading, system = (value(answer) for answer in answers)
    figures = JvmFigures()
    heap = memory.get("HeapMemoryUsage")
    if isinstance(heap, dict) and isinstance(heap.get("used"), int) and isinstance(heap.get("committed"), int):
        figures["heap_used_mb"] = heap["used"] / 2**20
        figures["heap_committed_mb"] = heap["committed"] / 2**20
    gcs = [c for c in collectors.values() if isinstance(c, dict)]
    counts = [_int(c, "CollectionCount") for c in gcs]
    times = [_int(c, "CollectionTime") for c in gcs]
    if gcs and None not in counts and None not in times:
        figures["gc_count"] = sum(c for c in counts if c is not None)
        figures["gc_seconds"] = sum(t for t in times if t is not None) / 1000.0  # ms
    if (threads := _int(threading, "ThreadCount")) is not None:
        figures["threads"] = threads
    return figures, _int(system, "ProcessCpuTime")


def value(answer: dict[str, Any]) -> dict[str, Any]:
    """A read's value (a map of attributes, or of MBeans for a pattern); empty when it failed."""
    value = answer.get("value")
    return value if answer.get("status") == 200 and isinstance(value, dict) else {}
