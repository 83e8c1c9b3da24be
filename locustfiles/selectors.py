"""Message selectors: does the broker hand each consumer only what its selector takes, and what does that cost?

Each producer user stamps its messages ``mqlabel: L0`` or ``L1`` (user i: ``L<i mod 2>``); the
consumer subscribes with the selector ``mqlabel IN ('L0')``. The audit expects L0's messages, each
once; L1's are *not selected* (they stay on the queue), never lost; a delivery the selector does not
take is a *selector violation* and fails the run. ``--mq-select all`` (a selector that takes
everything) against ``--mq-select none`` (no selector) is a selector's cost alone. ActiveMQ and
Artemis (RabbitMQ's STOMP has no selectors: refused before load).

    locust -f locustfiles/selectors.py --host stomp://127.0.0.1:61613 --headless -u 3 -r 3 -t 10s
"""

from mqusers import StompConsumerUser, StompProducerUser


class Picker(StompConsumerUser):
    destination = "/queue/mqusers.selectors"
    fixed_count = 1
    labels = 2
    select = "L0"


class Producer(StompProducerUser):
    destination = "/queue/mqusers.selectors"
    labels = 2
    rate = 200
