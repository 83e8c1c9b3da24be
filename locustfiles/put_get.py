"""Concurrent put/get on one queue: the broker's throughput with producers and consumers together.

Producers send as fast as they can while consumers read; compare ``send`` and ``receive`` rates
(a growing gap is a backlog) and watch latency climb as the broker saturates. For latency figures
that mean the broker's speed rather than queueing, pace producers: ``--mq-rate 1000``.

    locust -f locustfiles/put_get.py --host stomp://127.0.0.1:61613 --headless -u 4 -r 4 -t 30s
"""

from mqusers import StompConsumerUser, StompProducerUser


class Getter(StompConsumerUser):
    destination = "/queue/mqusers.putget"
    fixed_count = 2


class Putter(StompProducerUser):
    destination = "/queue/mqusers.putget"
