"""Consumers beside a User that holds files of its own, which the open-file check counts as one.

``MQUSERS_TEST_HOG_FILES`` files are opened by the hog before any consumer connects (fixed-count
Users spawn first), so the consumers run out of file descriptors partway.
"""

from locust import User, constant, task

import os

from mqusers import StompConsumerUser


class FileHog(User):
    fixed_count = 1
    wait_time = constant(1)

    def on_start(self) -> None:
        count = int(os.environ.get("MQUSERS_TEST_HOG_FILES", "0"))
        self.files = [os.open(os.devnull, os.O_RDONLY) for _ in range(count)]

    def on_stop(self) -> None:
        for fd in self.files:
            os.close(fd)

    @task
    def hold(self) -> None:
        pass


class Reader(StompConsumerUser):
    destination = "/queue/mqusers.hog"
