"""A consumer that takes ``HELD`` messages, never acknowledges them and leaves: the broker gives them again.

Beside it a producer and a consumer that acknowledges; the redelivered ones must count as
``redelivered`` (by the broker's flag), not as duplicates of what the leaver took.
"""

from locust import task
from locust.exception import StopUser

from mqusers import StompConsumerUser, StompProducerUser
from mqusers.stomp.receiver import Receiver

HELD = 20


class Reader(StompConsumerUser):
    destination = "/queue/mqusers.leaver"
    fixed_count = 1


class Leaver(StompConsumerUser):
    destination = "/queue/mqusers.leaver"
    fixed_count = 1
    ack = "client"
    prefetch = HELD  # the broker pushes it no more than it holds

    def make_receiver(self, destination: str) -> Receiver:
        receiver = super().make_receiver(destination)
        receiver.flush = lambda: None  # type: ignore[method-assign]  # the ACK a batch or a leave would send
        return receiver

    def on_connected(self) -> None:
        super().on_connected()
        self.receiver.batch_acks(10 * HELD)  # one cumulative ACK after more than it will take: none

    def wait_time(self) -> float:
        return 0.05  # leaves early in the run: what it held comes back to the reader before the end

    @task
    def leave_once_full(self) -> None:
        if self.receiver.received >= HELD:
            raise StopUser  # DISCONNECT, its ``HELD`` unacknowledged


class Producer(StompProducerUser):
    destination = "/queue/mqusers.leaver"
    fixed_count = 1
