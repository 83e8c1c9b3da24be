"""Transactions with a witness: once the ABORT of its first aborted transaction is answered, the producer
writes its id and that transaction's first seq to $MQUSERS_TEST_ABORTED, so that a client outside
mqusers can publish that very message (a planted violation the audit must catch).

One producer, 300 messages in transactions of 10, every 4th aborted: 23 committed (230 messages), 7
aborted (70).
"""

import os
from typing import Any

from mqusers import StompConsumerUser, StompTransactionProducerUser


class Reader(StompConsumerUser):
    destination = "/queue/mqusers.tx"
    fixed_count = 1


class Batcher(StompTransactionProducerUser):
    destination = "/queue/mqusers.tx"
    fixed_count = 1
    rate = 300
    max_messages = 300
    tx_size = 10
    tx_abort_ratio = 0.25

    def _settle(self, messages: list[Any], how: str) -> None:
        super()._settle(messages, how)
        path = os.environ.get("MQUSERS_TEST_ABORTED")
        if how == "aborted" and path and not os.path.exists(path):
            with open(path + ".part", "w") as handle:
                handle.write(f"{self.producer_id} {messages[0][1]}")
            os.replace(path + ".part", path)
