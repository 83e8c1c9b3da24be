"""Message selectors: does the broker hand each consumer only what its selector takes, and what does that cost?

Each producer user stamps its messages ``mqlabel: L0`` or ``L1`` (user i: ``L<i mod 2>``); each of
the two consumers subscribes with a selector on its own label (``mqlabel IN ('L0')``, ``... ('L1')``),
so each takes one producer's messages. ``--mq-select L0`` leaves L1's messages *not selected* (on
the queue), never lost; a delivery a selector does not take is a *selector violation* and fails the
run. ``--mq-select all`` (a selector that takes everything) against ``--mq-select none`` (no
selector) is a selector's cost alone. ActiveMQ and Artemis (RabbitMQ's STOMP has no selectors:
refused before load). docs/semantics.md has real runs.

    locust -f locustfiles/selectors.py --host stomp://127.0.0.1:61613 --headless -u 4 -r 4 -t 10s
"""

from mqusers import StompConsumerUser, StompProducerUser


class Picker(StompConsumerUser):
    destination = "/queue/mqusers.selectors"
    fixed_count = 2
    labels = 2
    select = "own"


class Producer(StompProducerUser):
    destination = "/queue/mqusers.selectors"
    labels = 2
    rate = 200
