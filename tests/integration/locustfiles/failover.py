"""A broker killed and restarted mid-run: confirmed sends to a queue taken one by one, and a durable topic.

The destinations end in ``MQ_TEST_TAG`` so each test has its own; run against a persistent broker.
"""

import os

from mqusers import StompConsumerUser, StompProducerUser

TAG = os.environ.get("MQ_TEST_TAG", "manual")


class QueueProducer(StompProducerUser):
    destination = f"/queue/mqusers.failover.{TAG}"
    persistent = True
    receipts = True
    rate = 100
    weight = 1


class QueueConsumer(StompConsumerUser):
    destination = f"/queue/mqusers.failover.{TAG}"
    ack = "client-individual"
    fixed_count = 1


class TopicPublisher(StompProducerUser):
    destination = f"/topic/mqusers.failover.{TAG}"
    persistent = True
    receipts = True
    rate = 100
    weight = 1


class DurableSubscriber(StompConsumerUser):
    destination = f"/topic/mqusers.failover.{TAG}"
    durable = True
    ack = "client"
    fixed_count = 1
