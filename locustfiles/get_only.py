"""Get-only phase: how fast can consumers drain a backlog?

Consumers drain the queue ``put_only.py`` filled; ``receive`` entries give the drain rate, and
their latency is the age of each message (time spent in the backlog), not the broker's speed.
The messages are another run's, so they count as received here (``other_runs = "receive"``).

    locust -f locustfiles/get_only.py --host stomp://127.0.0.1:61613 --headless -u 2 -r 2 -t 60s
"""

from mqusers import StompConsumerUser


class Drainer(StompConsumerUser):
    destination = "/queue/mqusers.backlog"
    ack = "client"
    prefetch = 1000
    other_runs = "receive"
