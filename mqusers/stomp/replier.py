"""A responder's side of request/reply: each request answered on its ``reply-to``, body and correlation id echoed."""

from __future__ import annotations

import time

from mqusers.measure.names import REPLY, REQUEST_TYPE, event_name
from mqusers.stomp.client import MqError, StompClient
from mqusers.stomp.wire import CORRELATION, Headers, reply_frame


class Replier:
    """Answers each request on its ``reply-to`` destination, echoing the body and correlation id."""

    def __init__(self, client: StompClient, destination: str):
        self._client = client
        self._name = event_name(REPLY, destination)

    def __call__(self, headers: Headers, body: bytes) -> None:
        reply_to = headers.get(b"reply-to")  # raw: goes back to the broker as it came
        start = time.perf_counter()
        if reply_to is None:
            self._failed(start, MqError("request without a reply-to header"))
            return
        try:
            self._client.send_raw(reply_frame(reply_to, headers.get(CORRELATION, b""), body))
        except MqError as error:
            self._failed(start, error)

    def _failed(self, start: float, error: MqError) -> None:
        self._client.fire(
            request_type=REQUEST_TYPE,
            name=self._name,
            response_time=(time.perf_counter() - start) * 1000.0,
            response_length=0,
            exception=error,
            context={},
        )
