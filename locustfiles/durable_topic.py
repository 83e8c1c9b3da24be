"""Durable subscribers on a persistent topic: is nothing lost while a subscriber is away?

Persistent messages to a topic with durable subscriptions (stable client id and subscription
name). Stop the test, publish with ``put_only.py --mq-destination /topic/mqusers.durable
--mq-persistent true``, start again with ``--mq-other-runs receive``: each subscriber receives
what was published meanwhile (by another run, so counted as received only when asked). To only
subscribe (register the subscriptions, or collect what was published), name the class last:
``... --mq-other-runs receive DurableSubscriber``.
Run against a persistent broker (e.g. ``python -m services start activemq-persistent``, port 61615).

    locust -f locustfiles/durable_topic.py --host stomp://127.0.0.1:61615 --headless -u 3 -r 3 -t 30s
"""

from mqusers import StompConsumerUser, StompProducerUser


class DurableSubscriber(StompConsumerUser):
    destination = "/topic/mqusers.durable"
    fixed_count = 2
    durable = True
    ack = "client"
    prefetch = 100


class PersistentPublisher(StompProducerUser):
    destination = "/topic/mqusers.durable"
    persistent = True
    rate = 200
