"""Two producer/consumer pairs on two queues, for the network partition test (test_partition.py).

    MQ_PARTITION_QUEUE=/queue/x locust -f partition.py -u 4 -r 4 ...   # /queue/x.confirmed, /queue/x.unconfirmed

- ``.confirmed``: every send waits for the broker's RECEIPT, so a send the partition cut off is
  ``unconfirmed`` (outcome unknown) and at most one frame is ever outstanding on that socket.
- ``.unconfirmed``: the same rate without receipts, mqusers' default: frames pile up in the
  socket's send buffer while the link is dead, until a send blocks.

Each queue has one consumer acknowledging every message (client-individual), so what it had not
acknowledged when the link died comes back after its reconnect. ``--mq-destination`` would put
every User on one queue, hence the environment variable.
"""

import os

from mqusers import StompConsumerUser, StompProducerUser

QUEUE = os.environ.get("MQ_PARTITION_QUEUE", "/queue/mqusers.partition")
RATE = 200  # msg/s per producer


class ConfirmedReader(StompConsumerUser):
    destination = f"{QUEUE}.confirmed"
    fixed_count = 1
    ack = "client-individual"
    prefetch = 10


class ConfirmedSender(StompProducerUser):
    destination = f"{QUEUE}.confirmed"
    fixed_count = 1
    rate = RATE
    receipts = True


class UnconfirmedReader(ConfirmedReader):
    destination = f"{QUEUE}.unconfirmed"


class UnconfirmedSender(StompProducerUser):
    destination = f"{QUEUE}.unconfirmed"
    fixed_count = 1
    rate = RATE
