"""An HTTP API test beside the pubsub broker test: the HttpUser takes --host, the broker --mq-host.

locust -f mixed.py --host http://API:PORT --mq-host stomp://BROKER:61613 --headless -u 4 -r 4 -t 5s
"""

from locust import HttpUser, constant, task

from locustfiles.pubsub import Publisher, Subscriber

__all__ = ["Api", "Publisher", "Subscriber"]


class Api(HttpUser):
    wait_time = constant(0.05)

    @task
    def fetch(self) -> None:
        self.client.get("/mixed.txt")
