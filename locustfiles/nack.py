"""NACK, redelivery and dead letters: does the broker redeliver or dead-letter what a consumer refuses, to the message?

The consumer acks ``client-individual`` and NACKs one message in ten, chosen by seq (10, 20, ...,
``--mq-nack-ratio``), each once (``--mq-nack-times``), then accepts it. What the broker does with a
NACK is its own (mqusers.stomp.dialects): ActiveMQ Classic sends the message to ``ActiveMQ.DLQ`` at
once (persistent messages: a non-persistent one is dropped), so the audit counts it
``dead_lettered``, never lost; RabbitMQ puts it back and redelivers it, so it is ``redelivered`` and
received once, never a duplicate. Artemis's STOMP NACK acknowledges (the message is discarded): refused
before load.

    locust -f locustfiles/nack.py --host stomp://127.0.0.1:61613 --headless -u 2 -r 2 -t 10s
"""

from mqusers import StompConsumerUser, StompProducerUser


class Refuser(StompConsumerUser):
    destination = "/queue/mqusers.nack"
    fixed_count = 1
    ack = "client-individual"
    nack_ratio = 0.1
    nack_times = 1


class Producer(StompProducerUser):
    destination = "/queue/mqusers.nack"
    persistent = True
    rate = 200
