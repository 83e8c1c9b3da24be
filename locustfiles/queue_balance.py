"""Load-balanced queue: do competing consumers share the work, and how late is each message?

Producers send to one queue; consumers compete for it, so each message is delivered once across
all of them: received = sent. Client acknowledgements with a prefetch window, as real workers use.

    locust -f locustfiles/queue_balance.py --host stomp://127.0.0.1:61613 --headless -u 6 -r 6 -t 30s
"""

from mqusers import StompConsumerUser, StompProducerUser


class Worker(StompConsumerUser):
    destination = "/queue/mqusers.balance"
    fixed_count = 3
    ack = "client-individual"
    prefetch = 10


class Producer(StompProducerUser):
    destination = "/queue/mqusers.balance"
    rate = 300
