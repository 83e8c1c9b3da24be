"""The base of mqusers' Locust Users: one STOMP connection, reconnected with back-off when it drops.

Configure by subclassing and setting attributes: each class attribute is the scenario's default; a
non-empty ``--mq-*`` option overrides it for the run. The Users hold no sockets:
:class:`mqusers.stomp.client.StompClient` (``client_cls``) does the messaging and fires the request
events. Producers and requesters are in :mod:`mqusers.users.producers`, consumers and responders in
:mod:`mqusers.users.consumers`.
"""

from __future__ import annotations

from locust import User
from locust.exception import StopUser

import random
import time
from typing import Any, ClassVar

from mqusers.measure.outages import Availability
from mqusers.options.destpattern import parse_pattern, share
from mqusers.run.context import RunContext, client_config, context
from mqusers.stomp.client import MqError, StompClient

#: Reconnect back-off: doubling from the minimum, capped so a client is back within ~1 s of its broker.
_RETRY_MIN_S, _RETRY_MAX_S = 0.25, 1.0
#: A connection that lived this long has worked: the next reconnect starts the back-off afresh.
_STABLE_S = _RETRY_MAX_S


class StompUser(User):
    """Connects on start, reconnects with back-off when the connection drops, disconnects on stop."""

    abstract = True
    client_cls: type[StompClient] = StompClient
    #: ``"producer"`` or ``"consumer"``: ``--mq-consumers N`` pins the number of consumer users.
    role: ClassVar[str] = "producer"
    #: The destination, e.g. ``/queue/orders`` or ``/topic/prices``.
    destination = "/queue/mqusers"
    #: Body size in bytes.
    message_size = 1024
    #: Labels producers stamp (``mqlabel: L<ordinal mod labels>``) for selectors; 0: none.
    labels = 0
    #: Messages expire this long after their send (ms; 0: never): producers stamp it, consumers count a
    #: delivery after it (``--mq-ttl``).
    ttl_ms = 0
    #: Message groups producers send in (``JMSXGroupID: mqusers.g<ordinal mod groups>``); 0: none.
    groups = 0

    def __init__(self, environment: Any):
        super().__init__(environment)
        self.mq: RunContext = context(environment)
        if self.mq.error:
            raise StopUser()
        settings = self.mq.settings
        self.destination = settings.destination or self.destination
        #: The destinations this user sends to or reads: ``destination``, or with a pattern its share of them.
        users = self.mq.role_users.get(self.role) or _local_users(environment.runner, self.role)
        index = self.mq.next_in_role(self.role)
        self.lanes = lanes(self.destination, index, users, self.mq.part)
        self.message_size = settings.size or self.message_size
        self.ordinal = self.mq.next_ordinal(type(self))
        # Consumers spread over several brokers take them in turn, each worker one further along.
        config = client_config(settings, self.client_id(), self.role, turn=index + self.mq.part[0])
        self.client = self.client_cls(config, environment.events.request.fire, recorder=self.mq.recorder)
        self._retry_at = 0.0
        self._retry_s = _RETRY_MIN_S
        self._lost_generation = 0
        self.availability = Availability(
            self.mq.outages, self.role, self.destination, f"{self.mq.process_tag}.{type(self).__name__}.{self.ordinal}"
        )

    def client_id(self) -> str | None:
        """The CONNECT ``client-id``; only durable subscribers need a stable one."""
        return None

    def on_start(self) -> None:
        self.ensure_connected()

    def on_stop(self) -> None:
        self.close_connection()

    def close_connection(self, *, timed: bool = False) -> None:
        """DISCONNECT with a receipt and close (``timed``: the ``disconnect`` event, for churning Users);
        the connection's end is then settled as any other's."""
        client = self.client
        confirmed = client.disconnect(timed=timed)
        if self._take_connection_end():
            # No DISCONNECT receipt (a broker that stopped reading: flow control, a freeze): what
            # was written may still sit in socket buffers the close throws away.
            self.on_connection_lost(client.dropped or not confirmed)

    def _take_connection_end(self) -> bool:
        """True the first time the last connection's end is looked at, False after: once per connection."""
        if self.client.generation == self._lost_generation:
            return False
        self._lost_generation = self.client.generation
        return True

    def ensure_connected(self) -> bool:
        """Connect if needed, at most once per back-off period; the connect event records each try.

        The back-off (doubling, jittered, capped) starts afresh only after a connection that lasted:
        a broker that accepts CONNECT and then refuses the subscription must not be hammered.
        """
        client = self.client
        if client.connected:
            return True
        now = time.monotonic()
        if self._take_connection_end():
            if now - client.connected_at >= _STABLE_S:
                self._retry_s, self._retry_at = _RETRY_MIN_S, 0.0
            else:
                self._back_off(now)
            if client.dropped:
                self.availability.lost(self.last_ok_ns(), client.lost_ns)
            self.on_connection_lost(client.dropped)
        if now < self._retry_at:
            return False
        attempt_ns = time.time_ns()
        try:
            client.connect()
            connected_ns = time.time_ns()
            self.on_connected()
        except MqError as error:
            client.abort()
            self._lost_generation = client.generation
            self._back_off(now)
            self.availability.refused(attempt_ns, str(error))
            return False
        self.availability.reconnected(connected_ns)
        return True

    def _back_off(self, now: float) -> None:
        self._retry_at = now + self._retry_s * random.uniform(0.5, 1.0)
        self._retry_s = min(self._retry_s * 2, _RETRY_MAX_S)

    def backoff_remaining(self) -> float:
        """Seconds until the next reconnect attempt (0 when connected or due)."""
        return 0.0 if self.client.connected else max(0.0, self._retry_at - time.monotonic())

    def last_ok_ns(self) -> int:
        """When this User last did its job (a send, a delivery), -1 for never: where an outage starts."""
        return -1

    def on_connected(self) -> None:
        """Subscribe or prepare frames once connected (again)."""

    def on_connection_lost(self, dropped: bool) -> None:
        """A connection ended: called once for each, before reconnecting or at stop. ``dropped``: not
        by this User, or at stop without the broker's receipt for DISCONNECT."""

    def setting(self, name: str) -> Any:
        """The run's ``--mq-<name>`` value when given, else this class's attribute."""
        value = getattr(self.mq.settings, name)
        return getattr(self, name) if value is None else value


def lanes(destination: str, index: int, users: int, part: tuple[int, int] = (0, 1)) -> list[str]:
    """``[destination]``, or with a pattern the share of user ``index`` of ``users`` in its role (in this
    process) of this process's part (worker ``part[0]`` of ``part[1]``) of the pattern's destinations."""
    pattern = parse_pattern(destination)  # admission refused a bad one before any User was made
    if pattern is None:
        return [destination]
    mine = share(len(pattern), *part)
    return [pattern.name(mine[i]) for i in share(len(mine), index, max(users, 1))]


def _local_users(runner: Any, role: str) -> int:
    """A worker's users of ``role`` in its latest spawn message (a ramp's later users share again)."""
    counts = getattr(runner, "target_user_classes_count", None) or {}
    return sum(n for c in getattr(runner, "user_classes", []) for name, n in counts.items()
               if c.__name__ == name and getattr(c, "role", None) == role)  # fmt: skip
