"""Brokers from Maven Central (Artemis 2.x, Classic 6.x): started by services/, a raw STOMP round trip, stopped by PID.

The first start on a fresh machine downloads and verifies the broker (~35 s for Artemis), hence a longer timeout.
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
import stomp

import services
from services.base import pid_alive, port_open

# alone: it stops and restarts the shared Artemis and Classic 6
pytestmark = pytest.mark.alone

FIRST_START_TIMEOUT = 240.0  # a download from Maven Central, then a JVM boot on a busy 2-core machine
RECEIVE_TIMEOUT = 10.0


class Inbox(stomp.ConnectionListener):  # type: ignore[misc]
    def __init__(self) -> None:
        self.frames: list[Any] = []
        self.arrived = threading.Event()

    def on_message(self, frame: Any) -> None:
        self.frames.append(frame)
        self.arrived.set()


# Artemis makes an unknown /queue/... a MULTICAST address unless told (destination-type on SEND,
# subscription-type on SUBSCRIBE): a message sent before anyone subscribes would be dropped.
# Classic knows /queue/ and ignores the headers.
BROKERS = [
    pytest.param("artemis", f"apache-artemis-{services.artemis.VERSION}/", marks=pytest.mark.artemis),
    pytest.param("activemq6", f"activemq-{services.activemq6.VERSION}-", marks=pytest.mark.activemq6),
]


@pytest.mark.parametrize(("name", "dist"), BROKERS)
def test_starts_round_trips_and_stops_by_pid(name: str, dist: str) -> None:
    started = services.start(name, timeout=FIRST_START_TIMEOUT)
    ports = services.ports(name)
    try:
        pid = services.pid(name)
        assert dist in Path(f"/proc/{pid}/cmdline").read_text()  # the pinned version from the cache, really
        # Sent before anyone subscribes: only a queue (ANYCAST) keeps it for the later subscriber.
        queue, body = f"/queue/x.{uuid.uuid4().hex[:8]}", "round trip"
        conn = stomp.Connection12([("127.0.0.1", ports["stomp"])], heartbeats=(0, 0))
        inbox = Inbox()
        conn.set_listener("inbox", inbox)
        conn.connect(wait=True)
        conn.send(queue, body, headers={"destination-type": "ANYCAST"})
        conn.subscribe(queue, id="1", ack="auto", headers={"subscription-type": "ANYCAST"})
        assert inbox.arrived.wait(RECEIVE_TIMEOUT)
        conn.disconnect()
        assert [frame.body for frame in inbox.frames] == [body]

        assert services.stop(name) is True
        assert not pid_alive(pid)
        assert not services.is_running(name)
        assert [port for port in ports.values() if port_open(port)] == []
        assert services.stop(name) is False  # nothing left to stop
    finally:
        if not started:
            services.start(name)  # someone else's broker: leave it running as found
