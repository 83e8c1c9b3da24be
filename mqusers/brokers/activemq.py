"""ActiveMQ Classic's own figures, asked over STOMP of its statistics plugin.

Debian's ActiveMQ has no web console, Jolokia or REST API, and JMX needs a connector opened on
purpose; the ``<statisticsBrokerPlugin/>`` answers over the messaging port the load already uses.
A request is an empty SEND to ``ActiveMQ.Statistics.Broker`` or
``ActiveMQ.Statistics.Destination.<name>`` with a ``reply-to``; the answer is a MapMessage, which
the subscription's ``transformation:jms-map-json`` turns into JSON (the broker needs XStream and
Jettison on its classpath for that).

One long-lived connection through mqusers' own client, with a ``fire`` that never reaches
Locust: the broker's figures are not requests of the test. Every call is bounded by ``timeout``
(connecting included); a call that failed drops the connection and the next one connects again.
The answers' maps are read by :mod:`mqusers.brokers.activemqmaps`.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from typing import Any

import gevent
from gevent.event import Event
from gevent.lock import Semaphore

from mqusers.brokers.activemqmaps import MapValue, broker_figures, destination_figures, parse_map_json
from mqusers.brokers.model import BrokerFigures, DestinationFigures, MetricsError
from mqusers.stomp.client import ClientConfig, MqError, StompClient
from mqusers.stomp.seam import Transport
from mqusers.stomp.wire import Headers, unescape

BROKER_QUERY = "/queue/ActiveMQ.Statistics.Broker"
DESTINATION_PREFIX = "ActiveMQ.Statistics.Destination."
#: A request header that makes the plugin end a destination query's replies with an empty map, so
#: "no such destination" is an answer rather than a timeout. Older brokers ignore it: there a query
#: ends at the timeout, with what arrived by then.
END_WITH_EMPTY_MAP = "ActiveMQ.Statistics.Destination.List.End.With.Null"
#: A temporary queue of the connection: its replies reach nobody else and vanish with it.
REPLY_TO = "/temp-queue/mqusers-statistics"
#: Lifetime of a request the plugin did not take (ms).
REQUEST_TTL_MS = 60_000
PLUGIN_HINT = "enable the statistics plugin (<statisticsBrokerPlugin/> in activemq.xml's <plugins>)"


def destination_query(destination: str) -> tuple[str, str] | None:
    """Where to ask about ``/queue/NAME`` or ``/topic/NAME``, and the name its reply carries.

    The plugin looks the name up as a destination of the request's own kind, so a topic is asked
    for on a topic. The name is an ActiveMQ wildcard pattern (``*``, ``>``), hence the reply's
    ``destinationName`` (``queue://NAME``) picks the exact one. None for any other form
    (``/temp-queue/...``): the plugin cannot be asked about those by name.
    """
    for kind in ("queue", "topic"):
        prefix = f"/{kind}/"
        if destination.startswith(prefix) and len(destination) > len(prefix):
            name = destination[len(prefix) :]
            return f"/{kind}/{DESTINATION_PREFIX}{name}", f"{kind}://{name}"
    return None


@dataclasses.dataclass
class _Pending:
    """The replies to one request: one map (the broker), or maps until an empty one (destinations)."""

    until_empty: bool
    maps: list[dict[str, MapValue]] = dataclasses.field(default_factory=list)
    failure: str | None = None
    done: Event = dataclasses.field(default_factory=Event)


class ActiveMQStatistics:
    """:class:`~mqusers.brokers.model.Source` for ActiveMQ Classic, over STOMP, with the credentials
    of ``config`` (the load's). ``transport`` as for :class:`~mqusers.stomp.client.StompClient`."""

    name = "activemq"
    #: ActiveMQ counts a send without a receipt a moment after it arrives (milliseconds).
    settle_s = 0.25

    def __init__(self, config: ClientConfig, *, timeout: float = 5.0, transport: Transport | None = None) -> None:
        # No client-id: the load's durable subscribers may hold it, and ActiveMQ refuses a second.
        self.config = dataclasses.replace(config, timeout=timeout, client_id=None)
        self.timeout = timeout
        self._transport = transport
        self._client: StompClient | None = None
        self._connecting = Semaphore()
        self._pending: dict[bytes, _Pending] = {}
        self._ids = itertools.count(1)
        #: The last failure the client reported through ``fire`` (e.g. an unclaimed ERROR frame).
        self._last_error: str | None = None
        #: The plugin has answered before: silence is then no proof that it is missing.
        self._answered = False

    def broker(self) -> BrokerFigures:
        replies = self._ask(BROKER_QUERY, {}, until_empty=False)
        if not replies:
            raise MetricsError(f"ActiveMQ at {self.config.address} answered {BROKER_QUERY} with an empty map")
        return broker_figures(replies[0])

    def destination(self, destination: str) -> DestinationFigures:
        query = destination_query(destination)
        if query is None:
            return DestinationFigures()
        target, wanted = query
        for stats in self._ask(target, {END_WITH_EMPTY_MAP: "true"}, until_empty=True):
            if stats.get("destinationName") == wanted:
                return destination_figures(stats)
        return DestinationFigures()

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.disconnect()

    # -- one request -------------------------------------------------------------------------

    def _ask(self, target: str, headers: dict[str, str], *, until_empty: bool) -> list[dict[str, MapValue]]:
        correlation = b"mq-stats-%d" % next(self._ids)
        pending = self._pending[correlation] = _Pending(until_empty)
        where = f"ActiveMQ at {self.config.address}"
        stage = "CONNECT and SUBSCRIBE"
        timer = gevent.Timeout(self.timeout)
        timer.start()
        try:
            client = self._connected()
            stage = "the statistics request (no RECEIPT)"
            self._last_error = None
            # The RECEIPT proves the broker took the request: silence after it is the plugin's. Without
            # the plugin the request stays on a queue of that name: it expires instead of piling up.
            expires = str(int(time.time() * 1000) + REQUEST_TTL_MS)
            send = {"destination": target, "reply-to": REPLY_TO, "correlation-id": correlation.decode(),
                    "expires": expires, **headers}  # fmt: skip
            client.frame_with_receipt(f"statistics {target}", "SEND", send)
            stage = "reply"
            pending.done.wait()
        except gevent.Timeout as expired:
            if expired is not timer:
                raise
            if stage == "reply" and pending.until_empty and (pending.maps or self._answered):
                return pending.maps  # a plugin that does not end its replies (an older broker)
            if stage != "reply":
                self._drop()
            raise MetricsError(self._silence(where, stage, target)) from None
        except MqError as error:
            self._drop()
            said = str(error)  # connect failures name the address themselves
            raise MetricsError(
                f"ActiveMQ statistics: {said}" if str(self.config.address) in said else f"{where}: {said}"
            ) from None
        finally:
            timer.close()
            self._pending.pop(correlation, None)
        if pending.failure is not None:
            raise MetricsError(f"{where}: {pending.failure}")
        return pending.maps

    def _silence(self, where: str, stage: str, target: str) -> str:
        """The error line for a call that ran out of time at ``stage``."""
        if stage != "reply":
            return f"{where} did not answer {stage} within {self.timeout:g}s"
        # The broker took the request (RECEIPT) but nothing answered it: no plugin intercepts it.
        said = f" (the broker said: {self._last_error})" if self._last_error else ""
        asked = target.split("/", 2)[2]
        return f"{where} does not answer {asked} within {self.timeout:g}s{said}: {PLUGIN_HINT}"

    def _connected(self) -> StompClient:
        with self._connecting:  # concurrent first calls share one connection
            if self._client is not None and self._client.connected:
                return self._client
            self._drop()
            client = StompClient(self.config, self._fire, transport=self._transport)
            self._client = client
            client.connect()
            server = client.server.lower()
            if "rabbitmq" in server or "artemis" in server:
                self._drop()
                raise MqError(f"the broker is {client.server}, not ActiveMQ Classic: it has no statistics plugin")
            client.subscribe(REPLY_TO, self._take_reply, ack="auto", headers={"transformation": "jms-map-json"})
            return client

    def _drop(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.abort()

    def _fire(self, **event: Any) -> None:
        # Never Locust's: only the reason of a failure is kept, for the error line.
        exception = event.get("exception")
        if exception is not None:
            self._last_error = str(exception)

    def _take_reply(self, headers: Headers, body: bytes, received_ns: int) -> None:
        self._answered = True
        pending = self._pending.get(unescape(headers.get(b"correlation-id", b"")))
        if pending is None:
            return  # the reply to a request that gave up waiting
        failed = headers.get(b"transformation-error")
        if failed is not None:
            reason = unescape(failed).decode("utf-8", "replace")
            pending.failure = (f"the statistics reply could not be turned into JSON ({reason}): "
                               "put xstream.jar and jettison.jar on the broker's classpath")  # fmt: skip
        else:
            try:
                stats = parse_map_json(body)
            except ValueError as error:
                pending.failure = str(error)
            else:
                if stats:
                    pending.maps.append(stats)
                if stats and pending.until_empty:
                    return
        pending.done.set()
