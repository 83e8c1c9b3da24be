"""Transactions: producers BEGIN, send ``--mq-tx-size`` messages in each, then COMMIT or ABORT.

A share of the transactions (``--mq-tx-abort-ratio``, spread evenly: 0.25 aborts every 4th) is
aborted; the audit expects none of their messages ("aborted", never "lost") and counts one that
arrives anyway as ``aborted_delivered``, which fails the run. The ``commit`` and ``abort`` rows time
COMMIT and ABORT to the broker's RECEIPT; the summary's transactions line gives transactions/s.

    locust -f locustfiles/transactions.py --host stomp://127.0.0.1:61613 --headless -u 3 -r 3 -t 30s \
        --mq-tx-abort-ratio 0.25
"""

from mqusers import StompConsumerUser, StompTransactionProducerUser


class Reader(StompConsumerUser):
    destination = "/queue/mqusers.transactions"
    fixed_count = 2


class Batcher(StompTransactionProducerUser):
    destination = "/queue/mqusers.transactions"
    rate = 500
    tx_size = 10
    tx_abort_ratio = 0.1
