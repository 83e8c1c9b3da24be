"""Connection churn: web scripts that connect, send one message, DISCONNECT and go, and workers that come and go.

Each ``Script`` opens a connection, sends ``--mq-per-connection`` messages (default 1), DISCONNECTs
with a receipt and, after ``--mq-churn-pause`` seconds, does it again: the ``connect`` and
``disconnect`` rows give the connections/s and CONNECT-to-CONNECTED and DISCONNECT-to-RECEIPT
latency. ``Worker`` consumers do the same on the receiving side, 100 messages per connection,
acknowledged one by one, so the audit stays exact across the churn.

    locust -f locustfiles/churn.py --host stomp://127.0.0.1:61613 --headless -u 20 -r 20 -t 30s --mq-churn-pause 0.1
"""

from mqusers import StompChurnConsumerUser, StompChurnProducerUser


class Worker(StompChurnConsumerUser):
    destination = "/queue/mqusers.churn"
    fixed_count = 2
    per_connection = 100


class Script(StompChurnProducerUser):
    destination = "/queue/mqusers.churn"
    per_connection = 1
