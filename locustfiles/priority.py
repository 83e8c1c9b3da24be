"""Priority: does the broker hand the highest priority first out of a backlog, and what is each priority's latency?

The producers build a backlog (``--mq-backlog-messages``) with priorities (``--mq-priorities K``:
message seq has level seq mod K, sent as ``priority`` 0 to 9); then one consumer, one message at a
time (prefetch 1), drains it. The report counts *inversions* (a lower priority delivered while a
higher one of the backlog waited) and shows the latency per priority (``receive-p9``, ...).
ActiveMQ Classic orders by priority only where its destination policy says ``prioritizedMessages``
(the local brokers: queues ``mqusers.prio.*``); RabbitMQ declares the queue with ``x-max-priority``
(a queue declared before without it is refused: ERROR); Artemis orders by priority as it is.
docs/semantics.md has real runs.

    locust -f locustfiles/priority.py --host stomp://127.0.0.1:61613 --headless -u 2 -r 2 -t 15s \\
        --mq-backlog-messages 5000 --mq-total-messages 5000
"""

from mqusers import StompConsumerUser, StompProducerUser


class Producer(StompProducerUser):
    destination = "/queue/mqusers.prio.run"
    priorities = 4
    # The build ends once the broker confirmed N: the whole backlog is at the broker when the drain
    # begins, so a message of it delivered late was waiting (unconfirmed ones may still be on the way).
    receipts = True
    in_flight = 100


class Drainer(StompConsumerUser):
    destination = "/queue/mqusers.prio.run"
    fixed_count = 1
    priorities = 4
    ack = "client-individual"
    prefetch = 1
