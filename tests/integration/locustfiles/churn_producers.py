"""Churning producers beside one long-lived consumer: every connect but the consumer's is a producer's,
so connections, messages and the broker's counts can be held to exact figures."""

from mqusers import StompChurnProducerUser, StompConsumerUser


class Reader(StompConsumerUser):
    destination = "/queue/mqusers.churn-producers"
    fixed_count = 1


class Script(StompChurnProducerUser):
    destination = "/queue/mqusers.churn-producers"
    per_connection = 3
    max_messages = 30
