"""Synchronous request/reply: how long does a round trip through the broker take?

Requesters send to a request queue with ``reply-to`` (a temporary queue, or ``--mq-reply-to queue``
for a queue per requester) and wait for the reply; responders answer each request. The ``request``
entries time the round trip; ``receive`` entries time the request's one-way trip to a responder.

    locust -f locustfiles/request_reply.py --host stomp://127.0.0.1:61613 --headless -u 4 -r 4 -t 30s
"""

from mqusers import StompRequesterUser, StompResponderUser


class Responder(StompResponderUser):
    destination = "/queue/mqusers.requests"
    fixed_count = 2


class Requester(StompRequesterUser):
    destination = "/queue/mqusers.requests"
    rate = 100
