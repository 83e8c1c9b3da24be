"""Network-demand probes: wait until the producers' broker passes a topic's messages on to another broker.

In a network of brokers a topic message published on the producers' broker before the network's demand
reached it (the consumers' broker's advisory, then the bridge's subscription) has no subscriber there
and is dropped: a run would read the start of its load as lost (docs/topologies.md). A subscriber on
another broker than the producers' therefore sends probes to the producers' broker, every
:data:`PROBE_EVERY_S`, until one of its own comes back through the network on each of its
subscriptions, before it counts at the start barrier. A probe is a SEND of no body with only an
``mq-probe`` header: every :class:`~mqusers.stomp.receiver.Receiver` sets it apart, acknowledged and
never audited, whoever's it is. Queues keep their messages until demand arrives: their consumers do not wait.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable

from gevent.event import Event

from mqusers.stomp.client import ClientConfig, MqError, StompClient
from mqusers.stomp.seam import Transport
from mqusers.stomp.wire import probe_frame

#: How long a subscriber waits for the network's demand before its wait is a failure (the run goes on).
DEMAND_WAIT_S = 30.0
#: A probe this often to each destination not yet reached: one lost to missing demand is sent again.
PROBE_EVERY_S = 0.2


class Probe:
    """One subscriber's token and the destinations it has not yet come back on."""

    def __init__(self, destinations: Iterable[str]):
        self.token = uuid.uuid4().hex.encode()
        self.pending = set(destinations)
        #: Probes written to each destination: the producers' broker counts them as enqueued.
        self.sent = dict.fromkeys(self.pending, 0)
        self.reached = Event()
        if not self.pending:
            self.reached.set()

    def back(self, destination: str) -> None:
        """Its token arrived on ``destination``'s subscription (the reader greenlet calls this)."""
        self.pending.discard(destination)
        if not self.pending:
            self.reached.set()


def await_demand(
    config: ClientConfig, probe: Probe, wait_s: float = DEMAND_WAIT_S, transport: Transport | None = None
) -> str | None:
    """Probe the producers' broker at ``config`` until ``probe`` came back on every destination: None, else
    why not, one line (no demand within ``wait_s``, or the producers' broker refused the probes)."""
    client = StompClient(config, lambda **_: None, transport=transport)
    deadline = time.monotonic() + wait_s
    try:
        client.connect()
        while not probe.reached.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                pending = ", ".join(sorted(probe.pending)[:3]) + (" ..." if len(probe.pending) > 3 else "")
                return (f"no network demand within {wait_s:g} s: {config.address} passed no probe on to this "
                        f"subscriber of {pending}")  # fmt: skip
            waiting = sorted(probe.pending)
            client.send_raw(b"".join(probe_frame(destination, probe.token) for destination in waiting))
            for destination in waiting:
                probe.sent[destination] += 1
            probe.reached.wait(min(PROBE_EVERY_S, left))
        return None
    except MqError as error:
        return f"network demand not probed: {config.address}: {error}"
    finally:
        client.disconnect()
