"""Broker-metrics samples shaped like each source's (what ActiveMQ's, RabbitMQ's and Artemis's APIs report), for
the sink's tests.

Between them the three cover every figure of :mod:`mqusers.brokers.model`, so feeding one of each
writes every field :mod:`mqusers.sinks.schema` declares for the broker measurements.
"""

from __future__ import annotations

from mqusers.brokers.model import BrokerSample

RATE = 200  #: msg/s the counters grow by


def activemq(ts_ns: int, second: int, destination: str) -> BrokerSample:
    """ActiveMQ (its statistics plugin) with a local broker's JVM: no fd, no alarms, no broker-computed rates."""
    return {
        "ts_ns": ts_ns,
        "source": "activemq",
        "broker": {
            "memory_percent": 1.0 + second % 3,
            "store_percent": 0.5,
            "temp_percent": 0.0,
            "connections": 5,
            "memory_bytes": 1_200_000 + 1000 * second,
            "store_bytes": 33_554_432,
        },
        "destinations": {
            destination: {
                "enqueued": 10_000 + RATE * second,
                "dequeued": 10_000 + RATE * second - 3,
                "dispatched": 10_000 + RATE * second - 1,
                "expired": 0,
                "depth": 3,
                "unacked": 2,
                "consumers": 3,
                "producers": 2,
                "memory_percent": 0.25,
            }
        },
        "jvm": {
            "heap_used_mb": 180.5 + second,
            "heap_committed_mb": 512.0,
            "gc_count": 40 + second,
            "gc_seconds": 0.8 + 0.004 * second,
            "threads": 61,
            "cpu_percent": 35.0,
        },
    }


def rabbitmq(ts_ns: int, second: int, destination: str, alarms: tuple[str, ...] = ()) -> BrokerSample:
    """RabbitMQ (management API): fd, alarms and its own rates; no store/temp %, no JVM."""
    return {
        "ts_ns": ts_ns,
        "source": "rabbitmq",
        "broker": {
            "memory_percent": 4.5,
            "connections": 5,
            "memory_bytes": 95_000_000,
            "fd_used": 64,
            "fd_total": 1_048_576,
            "alarms": list(alarms),
        },
        "destinations": {
            destination: {
                "enqueued": 500 + RATE * second,
                "dequeued": 500 + RATE * second - 4,
                "dispatched": 500 + RATE * second - 2,
                "depth": 4,
                "unacked": 2,
                "consumers": 3,
                "publish_rate": float(RATE),
                "deliver_rate": RATE - 0.5,
                "ack_rate": RATE - 1.0,
            }
        },
        "jvm": None,
    }


def artemis(ts_ns: int, second: int, destination: str) -> BrokerSample:
    """Artemis (Jolokia): disk %, killed, paging and sizes, its JVM through Jolokia; no dispatched, no rates."""
    return {
        "ts_ns": ts_ns,
        "source": "artemis",
        "broker": {
            "memory_percent": 2.0,
            "memory_bytes": 4_200_000,
            "disk_percent": 41.5,
            "store_percent": 46.1,
            "connections": 4,
            "alarms": [],
        },
        "destinations": {
            destination: {
                "enqueued": 700 + RATE * second,
                "dequeued": 690 + RATE * second,
                "expired": 3,
                "killed": 2,
                "depth": 5,
                "unacked": 4,
                "consumers": 1,
                "memory_percent": 0.0,
                "memory_bytes": 5_200,
                "store_bytes": 4_800,
                "paging": 1,
                "pages": 2,
            }
        },
        "jvm": {"heap_used_mb": 95.0, "heap_committed_mb": 256.0, "gc_count": 12, "gc_seconds": 0.09, "threads": 70},
    }
