"""Message groups: does the broker give each group's messages to one consumer at a time, in order?

Each of the producer users sends all its messages in one group (``JMSXGroupID: mqusers.g<i mod 4>``)
to a queue three consumers compete for. The audit checks that no two consumers had a group at once
(from each consumer's first and last delivery of the group) and that each consumer got each
producer's messages in order (``reordered``); a violation fails the run. ActiveMQ and Artemis
(RabbitMQ has no message groups: refused before load). docs/semantics.md has real runs.

    locust -f locustfiles/groups.py --host stomp://127.0.0.1:61613 --headless -u 7 -r 7 -t 10s
"""

from mqusers import StompConsumerUser, StompProducerUser


class Worker(StompConsumerUser):
    destination = "/queue/mqusers.groups"
    fixed_count = 3
    ack = "client-individual"
    prefetch = 10


class Device(StompProducerUser):
    destination = "/queue/mqusers.groups"
    groups = 4
    rate = 100
