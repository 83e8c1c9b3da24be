import pytest

from mqusers.stomp.dialects import ACTIVEMQ, ARTEMIS, RABBITMQ, dialect_for


@pytest.mark.parametrize(
    ("server", "dialect"),
    [
        ("ActiveMQ/5.17.2", ACTIVEMQ),
        ("RabbitMQ/3.10.8", RABBITMQ),
        ("ActiveMQ-Artemis/2.31.2", ARTEMIS),
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
    assert ARTEMIS.prefetch_headers(10, 1024) == {"consumer-window-size": "10240"}
    assert ACTIVEMQ.prefetch_headers(0, 1024) == {}


def test_durable_headers() -> None:
    assert ACTIVEMQ.durable_headers("s1") == {"activemq.subscriptionName": "s1"}
    assert RABBITMQ.durable_headers("s1") == {"durable": "true", "auto-delete": "false"}
    assert ARTEMIS.durable_unsubscribe_headers("s1") == {"durable-subscription-name": "s1"}
