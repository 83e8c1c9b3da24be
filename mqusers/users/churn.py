"""Users that churn connections: connect, send (or receive) a few messages, DISCONNECT with a receipt, again.

The web-script pattern: each connection lives for ``per_connection`` messages, then closes politely
(its DISCONNECT timed to the broker's RECEIPT: the ``disconnect <broker>`` event) and, after
``churn_pause`` seconds, the next opens (``connect <broker>``: CONNECT to CONNECTED). The messages
go through the same stamps, ledgers and audit as a long-lived User's, so the audit stays exact
across the churn. Configured like every mqusers User: class attributes, ``--mq-per-connection``
and ``--mq-churn-pause`` override them.
"""

from __future__ import annotations

from typing import Any

from gevent.event import Event

from mqusers.run.context import coordinator_for
from mqusers.stomp.receiver import Receiver
from mqusers.users.consumers import StompConsumerUser
from mqusers.users.producers import StompProducerUser


class StompChurnProducerUser(StompProducerUser):
    """Sends ``per_connection`` messages on each connection to ``destination``, then reconnects."""

    abstract = True
    #: Messages sent on one connection before it closes.
    per_connection = 1
    #: Seconds between a DISCONNECT and the next CONNECT.
    churn_pause = 0.0

    def __init__(self, environment: Any):
        super().__init__(environment)
        self.per_connection, self.churn_pause = self.setting("per_connection"), self.setting("churn_pause")
        #: Messages this User had sent when its current connection opened.
        self.seq_at_connect = 0

    def on_connected(self) -> None:
        super().on_connected()
        self.seq_at_connect = self.seq

    def wait_time(self) -> float:
        if not self.client.connected and not self.done():
            return self.churn_pause  # between two connections
        return super().wait_time()

    def burst_size(self) -> int:
        left_here = self.per_connection - (self.seq - self.seq_at_connect)
        return max(1, min(super().burst_size(), left_here))

    def send_burst(self) -> None:
        super().send_burst()
        sent_here = self.seq - self.seq_at_connect
        if self.client.connected and sent_here and (sent_here >= self.per_connection or self.done()):
            self.close_connection(timed=True)


class _Quota:
    """Wakes the consumer's task when its connection has received its ``per_connection`` messages."""

    def __init__(self) -> None:
        self.reached = Event()
        self.target = self.count = 0

    def start(self, target: int) -> None:
        self.target, self.count = target, 0
        self.reached.clear()

    def __call__(self, headers: Any, body: bytes) -> None:
        self.count += 1
        if self.count >= self.target:
            self.reached.set()


class StompChurnConsumerUser(StompConsumerUser):
    """Subscribes, receives ``per_connection`` messages, acknowledges them, disconnects, and again.

    Client-individual acks with a prefetch of ``per_connection`` by default: what the broker pushed
    beyond the quota is never acknowledged, so it goes to another consumer rather than being lost.
    """

    abstract = True
    ack = "client-individual"
    #: Messages received on one connection before it closes.
    per_connection = 10
    #: Seconds between a DISCONNECT and the next CONNECT.
    churn_pause = 0.0

    def __init__(self, environment: Any):
        #: One per connection, whichever of its destinations the messages come from; made first, as the
        #: base's __init__ makes the receivers.
        self.quota = _Quota()
        super().__init__(environment)

    def make_receiver(self, destination: str) -> Receiver:
        # Called by the base's __init__ per destination, once the run's settings are read.
        self.per_connection, self.churn_pause = self.setting("per_connection"), self.setting("churn_pause")
        self.prefetch = self.prefetch or self.per_connection
        clock = coordinator_for(self.environment, self.mq).follower
        return Receiver(self.client, destination, self.ack, ack_every=1, observer=self.quota, clock=clock,
                        **self.receiver_options(destination))  # fmt: skip

    def on_connected(self) -> None:
        self.quota.start(self.per_connection)
        super().on_connected()

    def wait_time(self) -> float:
        if self.client.connected:
            return 0.0  # the task itself waits for the quota
        return self.churn_pause if not self.backoff_remaining() else super().wait_time()

    def tend(self) -> None:
        if not self.ensure_connected():
            return
        # Bounded: the stop, a drop or the drain's end are seen within a second.
        if self.quota.reached.wait(1.0) and self.client.connected:
            for receiver in self.receivers:
                receiver.flush()
            self.subscriptions = {}  # DISCONNECT ends them
            self.close_connection(timed=True)
