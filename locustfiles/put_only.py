"""Put-only phase: how fast can producers fill a queue nobody reads?

Each producer sends ``--mq-messages`` messages (default 100,000 / users) as fast as the broker takes
them, then idles; the ``send`` entries give the fill rate. Follow with ``get_only.py`` to drain.
Add ``--mq-receipts true`` to time every send against the broker's RECEIPT (sync send).

    locust -f locustfiles/put_only.py --host stomp://127.0.0.1:61613 --headless -u 2 -r 2 -t 60s --mq-messages 50000
"""

from mqusers import StompProducerUser


class Filler(StompProducerUser):
    destination = "/queue/mqusers.backlog"
    max_messages = 50_000
