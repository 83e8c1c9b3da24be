"""A consumer whose on_start raises beside one that works: the summary must name the one that never ran."""

from mqusers import StompConsumerUser, StompProducerUser


class BrokenConsumer(StompConsumerUser):
    destination = "/queue/mqusers.broken-start"
    fixed_count = 1

    def on_start(self) -> None:
        raise RuntimeError("planted: this consumer cannot start")


class Consumer(StompConsumerUser):
    destination = "/queue/mqusers.broken-start"
    fixed_count = 1


class Producer(StompProducerUser):
    destination = "/queue/mqusers.broken-start"
    rate = 100
