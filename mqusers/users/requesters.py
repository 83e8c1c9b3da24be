"""Abstract requester Users: a producer whose every message is a request, timed to its reply (sync request/reply).

Replies come on a temporary queue where the broker has them (``reply_to = "temp"``), else on a queue
of the requester's own; :mod:`mqusers.stomp.dialects` says which.
"""

from __future__ import annotations

import time
from typing import Any

from mqusers.measure.names import QUEUE_REPLY_PREFIX, TEMP_REPLY_PREFIX
from mqusers.users.producers import StompProducerUser


class StompRequesterUser(StompProducerUser):
    """Sends requests to ``destination`` and times each reply (sync request/reply)."""

    abstract = True
    #: ``temp`` replies on a temporary queue; ``queue`` on a queue of this requester's own.
    reply_to = "temp"

    def __init__(self, environment: Any):
        super().__init__(environment)
        self.reply_to = self.setting("reply_to")
        self.reply_destination = ""

    def on_connected(self) -> None:
        super().on_connected()
        dialect = self.client.dialect
        name = self.producer_id.replace(".", "-")
        if self.reply_to == "temp":
            self.reply_destination = TEMP_REPLY_PREFIX + name
            if not dialect.temp_queue_needs_subscribe:
                self.client.route(self.reply_destination, self.client.reply_arrived)
                return
            self.client.subscribe(self.reply_destination, self.client.reply_arrived, ack="auto", headers={})
            return
        queue = QUEUE_REPLY_PREFIX + name
        headers = dict(dialect.reply_queue_subscribe)
        self.client.subscribe(queue, self.client.reply_arrived, ack="auto", headers=headers)
        self.reply_destination = dialect.reply_queue_address.format(name=queue.removeprefix("/queue/"))

    def emit(self, seq: int) -> None:
        outcome = self.client.request(self.publisher(seq), seq, self.reply_destination)
        if outcome:
            self.ok_ns = time.time_ns()
            self._sent.record(seq, self.ok_ns)
