"""RabbitMQ's management API answers read: a queue, a topic's subscriber queues and the nodes as figures.

:mod:`mqusers.brokers.rabbitmq` asks the API (and says how a destination maps to queues); this
module only reads what it answered.
"""

from __future__ import annotations

from typing import Any

from mqusers.brokers.model import BrokerFigures, DestinationFigures


def _count(stats: dict[str, Any], key: str) -> int:
    # message_stats holds a counter only once its first event happened: absent is zero.
    return int(stats.get(key) or 0)


def _rate(stats: dict[str, Any], key: str) -> float:
    return float((stats.get(f"{key}_details") or {}).get("rate") or 0.0)


def queue_figures(queue: dict[str, Any]) -> DestinationFigures:
    """One queue of the API (``/api/queues/VHOST/NAME``) as :class:`DestinationFigures`.

    dequeued = ack + deliver_no_ack + get_no_ack: the messages consumers took off the queue;
    dispatched = deliver_get: every delivery, acknowledged or not, redeliveries included. Depth,
    unacked and consumers are left out while the API has not emitted them for a new queue.
    ``messages_ready`` is depth - unacked.
    """
    stats = queue.get("message_stats") or {}
    figures = DestinationFigures(
        enqueued=_count(stats, "publish"),
        dequeued=_count(stats, "ack") + _count(stats, "deliver_no_ack") + _count(stats, "get_no_ack"),
        dispatched=_count(stats, "deliver_get"),
        publish_rate=_rate(stats, "publish"),
        deliver_rate=_rate(stats, "deliver_get"),
        ack_rate=_rate(stats, "ack"),
    )
    if isinstance(queue.get("messages"), int):
        figures["depth"] = queue["messages"]
    if isinstance(queue.get("messages_unacknowledged"), int):
        figures["unacked"] = queue["messages_unacknowledged"]
    if isinstance(queue.get("consumers"), int):
        figures["consumers"] = queue["consumers"]
    return figures


def subscriber_figures(queues: list[dict[str, Any]]) -> DestinationFigures:
    """A topic's figures from its subscribers' queues (see the module's docstring)."""
    if not queues:
        return DestinationFigures()
    each = [queue_figures(queue) for queue in queues]
    return DestinationFigures(
        depth=sum(figures.get("depth", 0) for figures in each),
        unacked=sum(figures.get("unacked", 0) for figures in each),
        consumers=sum(figures.get("consumers", 0) for figures in each),
        publish_rate=max(figures.get("publish_rate", 0.0) for figures in each),
        deliver_rate=sum(figures.get("deliver_rate", 0.0) for figures in each),
        ack_rate=sum(figures.get("ack_rate", 0.0) for figures in each),
    )


def broker_figures(overview: dict[str, Any], nodes: list[dict[str, Any]]) -> BrokerFigures:
    """``/api/overview`` and ``/api/nodes`` as :class:`BrokerFigures`.

    On a cluster: memory bytes summed, ``memory_percent`` (of the high watermark) the highest node's
    (the first to block publishers), file descriptors those of the node using the largest share,
    ``alarms`` ("memory", "disk") raised on any node: RabbitMQ then blocks publishers cluster-wide.
    """
    figures = BrokerFigures(alarms=[])
    connections = (overview.get("object_totals") or {}).get("connections")
    if isinstance(connections, int):
        figures["connections"] = connections
    running = [node for node in nodes if node.get("running", True) and isinstance(node.get("mem_used"), int)]
    if running:
        figures["memory_bytes"] = sum(int(node["mem_used"]) for node in running)
        limited = [node for node in running if node.get("mem_limit")]
        if limited:
            figures["memory_percent"] = max(100.0 * node["mem_used"] / node["mem_limit"] for node in limited)
        with_fds = [node for node in running if node.get("fd_total")]
        if with_fds:
            busiest = max(with_fds, key=lambda node: int(node.get("fd_used") or 0) / int(node["fd_total"]))
            figures["fd_used"] = int(busiest.get("fd_used") or 0)
            figures["fd_total"] = int(busiest["fd_total"])
    if running:
        figures["instance"] = ",".join(sorted(f"{node.get('name')}/{node.get('os_pid')}" for node in running))
    if any(node.get("mem_alarm") for node in nodes):
        figures["alarms"].append("memory")
    if any(node.get("disk_free_alarm") for node in nodes):
        figures["alarms"].append("disk")
    return figures
