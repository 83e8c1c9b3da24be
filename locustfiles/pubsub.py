"""Pub/sub topic fan-out: does every subscriber get every message, and how late?

N subscribers each receive every message a producer publishes to one topic, so the broker delivers
subscribers x sent messages. The summary shows per-destination received = subscribers x sent.

    locust -f locustfiles/pubsub.py --host stomp://127.0.0.1:61613 --headless -u 4 -r 4 -t 30s --mq-consumers 2
"""

from mqusers import StompConsumerUser, StompProducerUser


class Subscriber(StompConsumerUser):
    destination = "/topic/mqusers.pubsub"
    fixed_count = 2


class Publisher(StompProducerUser):
    destination = "/topic/mqusers.pubsub"
    rate = 500
