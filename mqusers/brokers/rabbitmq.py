"""RabbitMQ's own figures, from its management HTTP API (the ``rabbitmq_management`` plugin).

One keep-alive session, every call bounded by ``timeout`` as a whole (:mod:`mqusers.brokers.httpcall`).
The API refreshes its figures every ``collect_statistics_interval`` (5 s by default), so they lag
the load by up to that much.

Destinations, as RabbitMQ's STOMP plugin maps them:

- ``/queue/NAME`` and ``/amq/queue/NAME``: the queue NAME, every figure.
- ``/topic/KEY`` (and ``/exchange/EX/KEY``): no queue holds the topic: each subscriber has its own
  queue bound to ``amq.topic`` (EX) with routing key KEY. Reported: the sum of those queues' depth,
  unacked, consumers, deliver and ack rates, and the publish rate of one of them (each gets every
  message published on KEY). Counters (enqueued, dequeued, dispatched) are left out: subscriber
  queues come and go with their subscribers, so a sum of their counters is no counter. An exchange's
  own totals cover every routing key, so they are not reported per topic either.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import requests

from mqusers.brokers.httpcall import EndpointUnreachable, call, without_credentials
from mqusers.brokers.model import BrokerFigures, DestinationFigures, LoginRefused, MetricsError
from mqusers.brokers.rabbitmqjson import broker_figures, queue_figures, subscriber_figures
from mqusers.options.parsing import BrokerAddress

MANAGEMENT_PORT = 15672
#: RabbitMQ's STOMP port by default, and where this project's services put it (beside ActiveMQ's 61613).
STOMP_PORTS = (61613, 61614)
#: The web_stomp plugin's port by default (STOMP over WebSocket, ws://HOST:15674/ws).
WEB_STOMP_PORT = 15674
#: What a queue listing needs, so a broker with many queues sends little.
_QUEUE_COLUMNS = "name,messages,messages_unacknowledged,consumers,message_stats"


def management_url(address: BrokerAddress, port: int = MANAGEMENT_PORT) -> str:
    """The management API beside the first STOMP host: ``http://HOST:15672``."""
    host = address.hosts[0][0]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def management_urls(address: BrokerAddress) -> list[str]:
    """Where the management API of the broker at ``address`` may be, in the order tried: 15672, then
    15672 shifted as far as the STOMP port is from 61613 or 61614, a WebSocket's from 15674 (a second
    broker on shifted ports, e.g. ``MQUSERS_PORT_OFFSET``). :class:`RabbitManagement` keeps the one
    whose broker listens on that STOMP (or web_stomp) port."""
    shift = [address.hosts[0][1] - port for port in ((WEB_STOMP_PORT,) if address.websocket else STOMP_PORTS)]
    ports = dict.fromkeys([MANAGEMENT_PORT, *(MANAGEMENT_PORT + s for s in shift)])
    return [management_url(address, port) for port in ports if 0 < port < 65_536]


def stomp_ports(overview: dict[str, Any]) -> list[int]:
    """The STOMP ports a broker listens on (web_stomp's too), from ``/api/overview``'s ``listeners``."""
    listeners = overview.get("listeners") or []
    stomp = ("stomp", "http/web-stomp", "https/web-stomp")
    return sorted({int(x["port"]) for x in listeners if str(x.get("protocol", "")).startswith(stomp)})


class RabbitManagement:
    """:class:`~mqusers.brokers.model.Source` for RabbitMQ: the management API at ``url`` (e.g.
    :func:`management_url`) as ``user``; ``vhost`` is the one the load's destinations live in.

    With ``stomp_port`` (the URL was not given but guessed), ``url`` and then each of ``alternatives``
    is tried until one belongs to the broker listening on that STOMP port: a management API on the
    default port may be another broker's, whose figures would silently stand for this one's.
    """

    name = "rabbitmq"
    #: The management API refreshes its figures every collect_statistics_interval (0.5 s on the local
    #: service, 5 s by default), and later on a busy node (two readings 1 s apart once agreed 600
    #: messages short): two readings this far apart that agree have settled on the local service.
    settle_s = 2.5

    def __init__(
        self,
        url: str,
        user: str,
        password: str,
        *,
        vhost: str = "/",
        timeout: float = 5.0,
        stomp_port: int | None = None,
        alternatives: tuple[str, ...] = (),
    ) -> None:
        self.user = user
        self.vhost = vhost
        self.timeout = timeout
        self.stomp_port = stomp_port
        self._candidates = [url, *alternatives]
        self._found = stomp_port is None
        self._use(url)
        self._session = requests.Session()
        self._session.auth = (user, password)

    def _use(self, url: str) -> None:
        self.url = url.rstrip("/")
        self._shown = without_credentials(url)

    def _find(self) -> Any:
        """The overview of the first candidate whose broker listens on :attr:`stomp_port`."""
        tried = []
        for url in self._candidates:
            self._use(url)
            try:
                overview = self._get("overview")
            except EndpointUnreachable as error:
                tried.append(f"{self._shown} {error.reason}")
                continue
            except LoginRefused:
                raise  # a management API that refuses these credentials: that is the line to read
            except MetricsError as error:  # something else listens there
                tried.append(str(error))
                continue
            ports = stomp_ports(overview) if isinstance(overview, dict) else []
            if not ports or self.stomp_port in ports:
                self._found = True
                return overview
            tried.append(f"{self._shown} is another broker's (STOMP on {', '.join(map(str, ports))})")
        self._use(self._candidates[0])
        raise MetricsError(f"no RabbitMQ management API of the broker on STOMP port {self.stomp_port}: "
                           f"{'; '.join(tried)}; give it with --mq-broker-metrics-url")  # fmt: skip

    def broker(self) -> BrokerFigures:
        overview = self._get("overview") if self._found else self._find()
        nodes = self._get("nodes")
        if not isinstance(overview, dict) or not isinstance(nodes, list):
            raise MetricsError(f"RabbitMQ management at {self._shown} answered /api/overview or /api/nodes oddly")
        return broker_figures(overview, nodes)

    def destination(self, destination: str) -> DestinationFigures:
        vhost = quote(self.vhost, safe="")
        for prefix in ("/queue/", "/amq/queue/"):
            if destination.startswith(prefix) and len(destination) > len(prefix):
                queue = self._get(f"queues/{vhost}/{quote(destination[len(prefix) :], safe='')}")
                return queue_figures(queue) if isinstance(queue, dict) else DestinationFigures()
        bound = _topic_binding(destination)
        if bound is None:
            return DestinationFigures()  # a temporary or reply queue: nothing to ask about by name
        exchange, key = bound
        bindings = self._get(f"exchanges/{vhost}/{quote(exchange, safe='')}/bindings/source") or []
        names = {
            binding.get("destination")
            for binding in bindings
            if binding.get("destination_type") == "queue" and binding.get("routing_key") == key
        }
        if not names:
            return DestinationFigures()  # no subscriber: no queue holds anything of the topic
        queues = self._get(f"queues/{vhost}", columns=_QUEUE_COLUMNS) or []
        return subscriber_figures([queue for queue in queues if queue.get("name") in names])

    def close(self) -> None:
        self._session.close()

    def _get(self, path: str, **params: str) -> Any:
        """The JSON of ``GET /api/PATH``; None when the API answers 404 (no such queue)."""
        where = f"RabbitMQ management at {self._shown}"
        try:
            response = call(self._session.get, f"{self.url}/api/{path}", where=where, timeout=self.timeout,
                            params=params)  # fmt: skip
            body = response.json() if response.status_code == 200 else None
        except (MetricsError, ValueError) as error:
            self._reset()
            if isinstance(error, MetricsError):
                raise
            raise MetricsError(f"{where} did not answer /api/{path} with JSON ({type(error).__name__})") from None
        status = response.status_code
        if status == 401:
            raise LoginRefused(f"{where} refused the credentials (user {self.user})")
        if status == 403:
            needs = f"the monitoring tag and access to vhost {self.vhost}"
            raise LoginRefused(f"{where} refused user {self.user} access to /api/{path} (HTTP 403): it needs {needs}")
        if status == 404:
            return None
        if status != 200:
            raise MetricsError(f"{where} answered HTTP {status} to /api/{path}")
        return body

    def _reset(self) -> None:
        # A call cut short may leave a half-read response in the pool: start the next one afresh.
        self._session.close()
        auth = self._session.auth
        self._session = requests.Session()
        self._session.auth = auth


def _topic_binding(destination: str) -> tuple[str, str] | None:
    """``/topic/KEY`` -> ("amq.topic", KEY); ``/exchange/EX/KEY`` -> (EX, KEY); else None."""
    if destination.startswith("/topic/") and len(destination) > len("/topic/"):
        return "amq.topic", destination[len("/topic/") :]
    if destination.startswith("/exchange/"):
        exchange, _, key = destination[len("/exchange/") :].partition("/")
        if exchange and key:
            return exchange, key
    return None
