"""The summary's load line: the rate asked and the messages, as the producers will really send them."""

from __future__ import annotations

from mqusers import StompConsumerUser, StompProducerUser
from mqusers.options.payloadspec import PayloadSpec
from mqusers.options.settings import Settings
from mqusers.wiring.endscreen import payload_of, rate_asked


class Producer(StompProducerUser):
    abstract = True
    rate = 300.0


class Consumer(StompConsumerUser):
    abstract = True


def test_the_rate_asked_is_the_one_the_producers_follow() -> None:
    classes: list[type] = [Producer, Consumer]
    assert rate_asked(classes, Settings()) == "asked Producer 300 msg/s each"
    assert rate_asked(classes, Settings(rate=0.0)) == "producers unpaced"
    assert rate_asked(classes, Settings(total_rate=2000.0, total_messages=5000)) == "2,000 msg/s asked in all"
    # A shared count without a shared rate is unpaced: the class's 300 msg/s is not what ran.
    assert rate_asked(classes, Settings(total_messages=5000)) == "producers unpaced, 5,000 messages in all"


def test_the_messages_are_named_by_their_payload_and_size() -> None:
    classes: list[type] = [Producer, Consumer]
    assert payload_of(classes, Settings()) == "1,024 B printable messages"
    assert payload_of(classes, Settings(size=2048, payload=PayloadSpec("json"))) == "2,048 B json messages"
