"""A producer that loses sequence numbers 10-19 on the way and sends 30-34 twice: injected faults.

The producer's ledger records 10-19 as sent but they never reach the broker (a loss in transit);
30-34 go out twice. The audit must report exactly 10 lost and 5 duplicated.
"""

import time

from mqusers import StompConsumerUser, StompProducerUser

SKIPPED = set(range(10, 20))
REPEATED = set(range(30, 35))


class Reader(StompConsumerUser):
    destination = "/queue/mqusers.gappy"
    fixed_count = 1


class GappyProducer(StompProducerUser):
    destination = "/queue/mqusers.gappy"
    fixed_count = 1
    rate = 200
    max_messages = 100

    def emit(self, seq: int) -> None:
        if seq in SKIPPED:
            self._sent.record(seq, time.time_ns())
            return
        super().emit(seq)
        if seq in REPEATED:
            super().emit(seq)
