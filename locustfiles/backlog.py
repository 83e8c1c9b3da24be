"""Backlog build, then drain, in one run: seed 002's put-only, get-only and concurrent phases together.

Producers fill the queue while the consumers wait (the build: ``--mq-backlog-messages`` sent, or
``--mq-backlog-seconds``); then the consumers subscribe and drain it while producers go on (at
``--mq-rate``: the new messages) or stop (``--mq-total-messages``). The report has a section per
phase: the backlog at the switch, time to empty, the drain per second, and the latency of the
backlog's messages (``receive-backlog``: their age in the queue) apart from the new ones (``receive-new``).

    locust -f locustfiles/backlog.py --host stomp://127.0.0.1:61613 --headless -u 3 -r 3 -t 60s \
        --mq-backlog-messages 20000 --mq-total-messages 20000
"""

from mqusers import StompConsumerUser, StompProducerUser


class Filler(StompProducerUser):
    destination = "/queue/mqusers.backlog.run"


class Drainer(StompConsumerUser):
    destination = "/queue/mqusers.backlog.run"
    fixed_count = 1
    ack = "client"
    prefetch = 1000
