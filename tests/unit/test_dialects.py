import gevent
import pytest

from mqusers.stomp.client import StompClient
from mqusers.stomp.dialects import ACTIVEMQ, ARTEMIS, DIALECTS, RABBITMQ, dialect_for
from tests.unit.fake_client import CONFIG, environment
from tests.unit.memory_transport import MemoryTransport


@pytest.mark.parametrize(
    ("server", "dialect"),
    [
        ("ActiveMQ/5.17.2", ACTIVEMQ),
        ("ActiveMQ/6.1.8", ACTIVEMQ),
        ("RabbitMQ/3.10.8", RABBITMQ),
        ("ActiveMQ-Artemis/2.40.0 ActiveMQ Artemis Messaging Engine", ARTEMIS),
        ("", ACTIVEMQ),
    ],
)
def test_auto_detects_from_the_server_header(server: str, dialect: object) -> None:
    assert dialect_for("auto", server) is dialect


def test_explicit_choice_wins() -> None:
    assert dialect_for("rabbitmq", "ActiveMQ/5.17.2") is RABBITMQ


def test_prefetch_headers() -> None:
    assert ACTIVEMQ.prefetch_headers(10, 1024) == {"activemq.prefetchSize": "10"}
    assert RABBITMQ.prefetch_headers(10, 1024) == {"prefetch-count": "10"}
    # A window of bytes: the body and what Artemis counts beside it, per message.
    assert ARTEMIS.prefetch_headers(10, 1024) == {"consumer-window-size": str(10 * (1024 + 512))}
    assert ACTIVEMQ.prefetch_headers(0, 1024) == {}
    assert ARTEMIS.prefetch_headers(0, 1024) == {}
    # Artemis refills its window on ACKs only: auto acks send none, a window would stall the subscription.
    assert ARTEMIS.prefetch_headers(10, 1024, "auto") == {}
    assert ACTIVEMQ.prefetch_headers(10, 1024, "auto") == {"activemq.prefetchSize": "10"}


def test_durable_headers() -> None:
    assert ACTIVEMQ.durable_headers("s1") == {"activemq.subscriptionName": "s1"}
    assert RABBITMQ.durable_headers("s1") == {"durable": "true", "auto-delete": "false"}
    assert ARTEMIS.durable_headers("s1") == {"durable-subscription-name": "s1"}
    assert ARTEMIS.durable_unsubscribe_headers("s1") == {"durable-subscription-name": "s1"}


def test_artemis_is_told_how_to_route_each_destination() -> None:
    assert ARTEMIS.send_headers("/queue/q") == {"destination-type": "ANYCAST"}
    assert ARTEMIS.send_headers("/topic/t") == {"destination-type": "MULTICAST"}
    assert ARTEMIS.subscribe_headers("/queue/q") == {"subscription-type": "ANYCAST"}
    assert ARTEMIS.subscribe_headers("/topic/t") == {"subscription-type": "MULTICAST"}
    assert ARTEMIS.send_headers("orders") == {}  # a bare address: the broker's own default
    # The others route by the name alone: no header for them to misread as a message property.
    for dialect in (ACTIVEMQ, RABBITMQ):
        assert dialect.send_headers("/queue/q") == dialect.subscribe_headers("/topic/t") == {}


def test_client_acks_come_before_the_broker_stops_sending() -> None:
    # Classic and RabbitMQ let far more than 50 out: one cumulative ACK per 50, or per half the prefetch.
    assert ACTIVEMQ.ack_every(0, 1024) == RABBITMQ.ack_every(0, 100) == 50
    assert ACTIVEMQ.ack_every(10, 1024) == 5
    # Artemis lets 10 KiB out by default: ~6 messages of 1 KiB, so an ACK every 3 (it stalled at 50).
    assert ARTEMIS.ack_every(0, 1024) == 3
    assert ARTEMIS.ack_every(0, 100_000) == 1
    assert ARTEMIS.ack_every(10, 1024) == 5  # a prefetch asked is a window of that many messages
    for dialect in DIALECTS.values():
        assert 1 <= dialect.ack_every(1, 1) <= dialect.ack_every(0, 1) <= 50


def test_a_subscribe_carries_the_routing_of_the_broker_that_answered() -> None:
    artemis = b"CONNECTED\nversion:1.2\nserver:ActiveMQ-Artemis/2.40.0\n\n\x00"
    for connected, expected in [(artemis, {b"subscription-type": b"ANYCAST"}), (None, {})]:
        transport = MemoryTransport(connected) if connected else MemoryTransport()
        client = StompClient(CONFIG, environment().events.request.fire, transport=transport)
        client.connect()
        subscribing = gevent.spawn(client.subscribe, "/queue/q", lambda *_: None, ack="auto", headers={"id": "s"})
        _, headers, _ = transport.connection.answer_receipt()
        subscribing.get(timeout=2)
        assert {k: v for k, v in headers.items() if k == b"subscription-type"} == expected
