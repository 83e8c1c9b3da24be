"""Every broker difference mqusers knows about, in one table.

STOMP leaves routing, durable subscriptions, prefetch, and temporary destinations to each broker, so
the headers that ask for them differ. Nothing outside this module names a broker-specific header.
"""

from __future__ import annotations

from dataclasses import dataclass

from mqusers.options.priorities import TOP


@dataclass(frozen=True)
class Dialect:
    name: str
    #: SUBSCRIBE header that bounds unacknowledged messages pushed to one consumer.
    prefetch_header: str
    #: True when the prefetch header counts bytes (Artemis' credit window) rather than messages.
    prefetch_in_bytes: bool
    #: SUBSCRIBE headers for a durable topic subscription named ``{name}``.
    durable_subscribe: tuple[tuple[str, str], ...]
    #: UNSUBSCRIBE headers that remove the durable subscription for good.
    durable_unsubscribe: tuple[tuple[str, str], ...]
    #: Whether ``/temp-queue/x`` replies need a SUBSCRIBE (ActiveMQ, Artemis) or arrive unasked (RabbitMQ).
    temp_queue_needs_subscribe: bool
    #: SUBSCRIBE headers for a per-requester reply queue, so the broker removes it with its consumer.
    reply_queue_subscribe: tuple[tuple[str, str], ...] = ()
    #: How a responder addresses that queue (``{name}``) without declaring it anew.
    reply_queue_address: str = "/queue/{name}"
    #: SEND and SUBSCRIBE headers that say how to route a destination the broker may not know yet
    #: (Artemis makes an unknown name MULTICAST unless told); ``""``: the name says it.
    send_routing_header: str = ""
    subscribe_routing_header: str = ""
    #: Destination prefix → the routing type those headers carry.
    routing_types: tuple[tuple[str, str], ...] = ()
    #: Bytes the broker counts per message besides its body, in a window of bytes (an estimate).
    message_overhead: int = 0
    #: ``client`` acks without a prefetch asked: the broker's default window in bytes (0: ample).
    default_ack_window: int = 0
    #: Only ACKs refill the window: with ``auto`` acks (none sent) it fills once and the subscription
    #: stalls, so none is asked (Artemis 2.40.0 stopped a drain at 1,100 of 3,000 1 KiB messages).
    window_needs_acks: bool = False
    #: A SUBSCRIBE's ``selector`` header (JMS SQL-92 on headers) filters what the consumer gets.
    selectors: bool = True
    #: ``JMSXGroupID`` message groups: one consumer at a time per group.
    groups: bool = True
    #: What the broker does with a message a client-individual consumer NACKs: ``dead-letter`` (to its
    #: dead-letter queue), ``requeue`` (redelivered, flagged ``redelivered``) or ``discard`` (gone for good).
    nack: str = "dead-letter"
    #: The queue argument a SEND or SUBSCRIBE that declares a /queue/ must carry for its messages'
    #: ``priority`` to count (RabbitMQ's ``x-max-priority``: every declaration the same, or an ERROR);
    #: ``""``: the broker orders by priority without one (Artemis) or by its own configuration
    #: (ActiveMQ Classic: ``prioritizedMessages="true"`` in the queue's destination policy, docs/brokers.md).
    priority_queue_header: str = ""

    #: The SEND header of a message's expiry; ``expiry_absolute``: it holds the epoch ms it expires at (the
    #: JMS expiration ActiveMQ and Artemis keep), else the ms it may live from its arrival (RabbitMQ's per-message TTL).
    expiry_header: str = "expires"
    expiry_absolute: bool = True

    def prefetch_headers(self, prefetch: int, message_size: int, ack: str = "client") -> dict[str, str]:
        if prefetch <= 0 or (ack == "auto" and self.window_needs_acks):
            return {}
        amount = prefetch * self._message_bytes(message_size) if self.prefetch_in_bytes else prefetch
        return {self.prefetch_header: str(amount)}

    def ack_every(self, prefetch: int, message_size: int) -> int:
        """``client`` acks: deliveries per cumulative ACK, half of what the broker lets a consumer hold
        unacknowledged (at most 50), so the broker never waits for an ACK the consumer holds back."""
        held = prefetch or 100
        if not prefetch and self.default_ack_window:
            held = self.default_ack_window // self._message_bytes(message_size)
        return max(1, min(held, 100) // 2)

    def _message_bytes(self, message_size: int) -> int:
        return max(message_size, 1) + self.message_overhead

    def expiry_headers(self, ttl_ms: int) -> dict[str, str]:
        """The constant SEND header of a relative time-to-live; {} when the expiry is absolute, so per message
        (:class:`mqusers.stomp.wire.SendFrames`' ``ttl_ms``), or there is none."""
        return {self.expiry_header: str(ttl_ms)} if ttl_ms and not self.expiry_absolute else {}

    def send_headers(self, destination: str) -> dict[str, str]:
        return self._routing(self.send_routing_header, destination)

    def subscribe_headers(self, destination: str) -> dict[str, str]:
        return self._routing(self.subscribe_routing_header, destination)

    def _routing(self, header: str, destination: str) -> dict[str, str]:
        if header:
            for prefix, routing in self.routing_types:
                if destination.startswith(prefix):
                    return {header: routing}
        return {}

    def priority_queue_headers(self, destination: str) -> dict[str, str]:
        """Headers that declare ``destination`` a priority queue (priorities 0 to 9), where a header must."""
        if self.priority_queue_header and destination.startswith("/queue/"):
            return {self.priority_queue_header: str(TOP)}
        return {}

    def durable_headers(self, name: str) -> dict[str, str]:
        return {key: value.format(name=name) for key, value in self.durable_subscribe}

    def durable_unsubscribe_headers(self, name: str) -> dict[str, str]:
        return {key: value.format(name=name) for key, value in self.durable_unsubscribe}


ACTIVEMQ = Dialect(
    name="activemq",
    prefetch_header="activemq.prefetchSize",
    prefetch_in_bytes=False,
    durable_subscribe=(("activemq.subscriptionName", "{name}"),),
    durable_unsubscribe=(("activemq.subscriptionName", "{name}"),),
    temp_queue_needs_subscribe=True,
    # 5.17.2 and 6.1.8: a STOMP NACK is a poison ack: the message goes to ActiveMQ.DLQ at once, never
    # redelivered (maximumRedeliveries does not apply); a non-persistent one is dropped instead (the
    # dead-letter strategy's processNonPersistent is false by default).
    nack="dead-letter",
)
RABBITMQ = Dialect(
    name="rabbitmq",
    prefetch_header="prefetch-count",
    prefetch_in_bytes=False,
    # RabbitMQ keys the durable queue on the subscription id, which mqusers makes stable.
    durable_subscribe=(("durable", "true"), ("auto-delete", "false")),
    durable_unsubscribe=(("durable", "true"),),
    temp_queue_needs_subscribe=False,
    # A SEND to /queue/x would re-declare the queue with other arguments (ERROR resource_locked).
    reply_queue_subscribe=(("auto-delete", "true"), ("durable", "false")),
    reply_queue_address="/amq/queue/{name}",
    # Its STOMP plugin ignores a selector header: every consumer would get every message.
    selectors=False,
    # Its STOMP plugin maps `expiration` (ms from arrival, as text) to the AMQP property; it ignores `expires`.
    # It drops an expired message only at the queue's head, and its management API counts none of them.
    expiry_header="expiration",
    expiry_absolute=False,
    # Nor has it message groups (its single active consumer is per queue): groups would be shared.
    groups=False,
    # A NACK (requeue:true by default) puts the message back, redelivered flagged; a classic queue has no
    # maximum, so one NACKed every time never leaves: dead letters need a dead-letter exchange or a quorum
    # queue's x-delivery-limit declared with the queue, which mqusers does not (3.10.8: requeued, 3 of 3 flagged).
    nack="requeue",
    priority_queue_header="x-max-priority",
)
ARTEMIS = Dialect(
    name="artemis",
    prefetch_header="consumer-window-size",
    prefetch_in_bytes=True,
    window_needs_acks=True,
    # The queue is named client-id.subscription-name: the CONNECT client-id is the same stable name.
    durable_subscribe=(("durable-subscription-name", "{name}"),),
    durable_unsubscribe=(("durable-subscription-name", "{name}"),),
    # /temp-queue/x is a temporary queue of the subscribing connection (2.40.0: the reply arrived only
    # after a SUBSCRIBE, as on Classic); the responder sends to the reply-to as it came.
    temp_queue_needs_subscribe=True,
    # A broker whose default routing type is MULTICAST (default-address-routing-type, no anycastPrefix
    # on its acceptor) would give each competing consumer of /queue/x every message: say what is meant.
    send_routing_header="destination-type",
    subscribe_routing_header="subscription-type",
    routing_types=(("/queue/", "ANYCAST"), ("/topic/", "MULTICAST")),
    # Its redelivered:true marks only the first of the messages a consumer left unacknowledged (2.40.0:
    # 1 of 10 came back flagged); the others come back false, so the audit counts them as duplicates.
    # Its credits count the core message: mqusers' ~10 properties (UTF-16 names and values) and address.
    message_overhead=512,
    # stompConsumerWindowSize: 10 KiB for client and client-individual acks unless the SUBSCRIBE asks
    # (2.40.0 let a stomp.py consumer hold 8 of 200 1 KiB messages). One ACK per 50 stalled mqusers'
    # client-ack consumers: 316 of 796 received at 100 msg/s, p50 16.6 s.
    default_ack_window=10240,
    # Its STOMP NACK acknowledges (2.40.0: the NACKed message was neither redelivered nor in DLQ, the queue
    # empty): max-delivery-attempts and the DLQ address never see it, so --mq-nack-ratio is refused.
    nack="discard",
)
DIALECTS = {dialect.name: dialect for dialect in (ACTIVEMQ, RABBITMQ, ARTEMIS)}


def dialect_for(choice: str, server_header: str) -> Dialect:
    """The configured dialect, or (``auto``) the one the CONNECTED ``server`` header names."""
    if choice != "auto":
        return DIALECTS[choice]
    server = server_header.lower()
    if "artemis" in server:
        return ARTEMIS
    if "rabbitmq" in server:
        return RABBITMQ
    return ACTIVEMQ
