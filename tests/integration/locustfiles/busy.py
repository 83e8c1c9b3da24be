"""A generator saturated on purpose: beside a light pub/sub, a User holds the gevent loop 50 ms at a time."""

from locust import User, constant, task

import time

from mqusers import StompConsumerUser, StompProducerUser


class Subscriber(StompConsumerUser):
    destination = "/topic/mqusers.busy"
    fixed_count = 1


class Publisher(StompProducerUser):
    destination = "/topic/mqusers.busy"
    fixed_count = 1
    rate = 100


class Burner(User):
    fixed_count = 1
    wait_time = constant(0)

    @task
    def burn(self) -> None:
        until = time.perf_counter() + 0.05
        while time.perf_counter() < until:
            pass
