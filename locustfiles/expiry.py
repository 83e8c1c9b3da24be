"""Expiry: messages with a time-to-live wait in a backlog past it; the broker drops them, the audit counts them.

Producers stamp every message with a time-to-live (``ttl_ms`` here, ``--mq-ttl`` on the command line;
ActiveMQ and Artemis get an ``expires`` time, RabbitMQ an ``expiration``) while the consumer waits
(``--mq-backlog-seconds``), so what the backlog holds longer than that expires before anyone reads it.
The audit counts those ``expired``, not lost, beside the broker's own expired count; a message delivered
after its expiry is ``delivered_expired`` and fails the run (docs/semantics.md#expiry).

    locust -f locustfiles/expiry.py --host stomp://127.0.0.1:61613 --headless -u 2 -r 2 -t 10s \
        --mq-rate 200 --mq-ttl 1s --mq-backlog-seconds 3
"""

from mqusers import StompConsumerUser, StompProducerUser


class Expiring(StompProducerUser):
    destination = "/queue/mqusers.expiry"
    ttl_ms = 1000


class LateReader(StompConsumerUser):
    destination = "/queue/mqusers.expiry"
    fixed_count = 1
    ttl_ms = 1000
    ack = "client"
    # What the broker pushes ahead waits in the socket, its expiry running: a small window keeps that short.
    prefetch = 10
