"""ActiveMQ Artemis's own figures, read over HTTP from the Jolokia agent of its web console.

Every reading is one bulk ``POST /console/jolokia`` of read requests (:mod:`mqusers.brokers.artemisjson`),
bounded by ``timeout`` as a whole (:mod:`mqusers.brokers.httpcall`), as a user of the console's role
(``amq`` by default). The ``Origin`` header names the console itself: Artemis's
``jolokia-access.xml`` allows its own origin and, with ``<strict-checking/>`` (the default), wants one.

Destinations: Artemis names an address as the STOMP destination says, ``/queue/NAME``, unless the
acceptor strips an ``anycastPrefix`` / ``multicastPrefix`` (``/queue/``, ``/topic/``): then ``NAME``.
Both are asked for at once and the first that exists is taken. The figures are live (no collection
interval): a reading is the broker's state when it answered.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

import requests

from mqusers.brokers import artemisjson
from mqusers.brokers.httpcall import EndpointUnreachable, call, without_credentials
from mqusers.brokers.model import BrokerFigures, DestinationFigures, JvmFigures, LoginRefused, MetricsError
from mqusers.options.parsing import BrokerAddress

CONSOLE_PORT = 8161
#: Artemis's default STOMP port: a console on a shifted port is looked for as far away as the STOMP port is.
STOMP_PORT = 61613
JOLOKIA_PATH = "/console/jolokia"
#: The console login sent when none is given: an anonymous one, not a credential (docs/brokers.md).
ANONYMOUS = ("anonymous", "anonymous")
ACCEPTORS = f"{artemisjson.DOMAIN}:broker=*,component=acceptors,name=*"


def jolokia_url(url: str) -> str:
    """A console URL (``http://HOST:8161``) as its Jolokia agent's; a URL with a path is taken as given."""
    url = url.rstrip("/")
    return url if urlsplit(url).path not in ("", "/") else url + JOLOKIA_PATH


def console_urls(address: BrokerAddress) -> list[str]:
    """Where the console of the broker at ``address`` may be, in the order tried: port 8161 on the first
    STOMP host, then 8161 shifted as far as the STOMP port is from 61613 (``artemis create --port-offset``)."""
    host, port = address.hosts[0]
    shown = f"[{host}]" if ":" in host else host
    ports = dict.fromkeys([CONSOLE_PORT, CONSOLE_PORT + port - STOMP_PORT])
    return [f"http://{shown}:{p}{JOLOKIA_PATH}" for p in ports if 0 < p < 65_536]


class ArtemisJolokia:
    """:class:`~mqusers.brokers.model.Source` for Artemis: the Jolokia agent at ``url`` (see :func:`jolokia_url`)
    as ``user`` (None: the anonymous login :data:`ANONYMOUS`).

    With ``stomp_port`` (the URL was guessed, not given), ``url`` and then each of ``alternatives`` is
    tried until one belongs to the broker whose acceptors listen on that port.
    """

    name = "artemis"
    #: Counters move as the broker processes frames it has read: two readings this far apart that agree have settled.
    settle_s = 0.5

    def __init__(
        self,
        url: str,
        user: str | None,
        password: str | None,
        *,
        timeout: float = 5.0,
        stomp_port: int | None = None,
        alternatives: tuple[str, ...] = (),
    ) -> None:
        self.user, self.timeout, self.stomp_port = user, timeout, stomp_port
        # Without a login the console admits no request (hawtio answers 403), not even on a broker that allows
        # anonymous users; a login of this made-up name is what such a broker's GuestLoginModule takes as its guest.
        self._auth = (user, password or "") if user else ANONYMOUS
        self._candidates = [jolokia_url(u) for u in (url, *alternatives)]
        self._found = stomp_port is None
        self._use(self._candidates[0])
        self._session = self._new_session()

    def _use(self, url: str) -> None:
        self.url = url
        parts = urlsplit(url)
        self._origin = f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")
        self._shown = without_credentials(url)

    def _new_session(self) -> requests.Session:
        session = requests.Session()
        session.auth = self._auth
        return session

    # -- the Source -----------------------------------------------------------------------------

    def broker(self) -> BrokerFigures:
        broker, runtime = self.read(artemisjson.broker_requests())
        found = artemisjson.matched(broker)
        if not found:
            raise MetricsError(f"{self._where} has no Artemis broker MBean ({artemisjson.DOMAIN}:broker=*)")
        return artemisjson.broker_figures(found[0], artemisjson.value(runtime))

    def destination(self, destination: str) -> DestinationFigures:
        candidates = _addresses(destination)
        if not candidates:
            return DestinationFigures()
        answers = self.read([r for name in candidates for r in artemisjson.address_requests(name)])
        for at in range(0, len(answers), 2):
            address = artemisjson.matched(answers[at])
            if address:
                return artemisjson.destination_figures(address[0], artemisjson.matched(answers[at + 1]))
        return DestinationFigures()  # the broker does not know it (yet)

    def close(self) -> None:
        self._session.close()

    # -- calls ----------------------------------------------------------------------------------

    @property
    def _where(self) -> str:
        return f"Artemis's Jolokia at {self._shown}"

    def _find(self) -> None:
        """Keep the first candidate whose broker has an acceptor on :attr:`stomp_port`."""
        tried = []
        for url in self._candidates:
            self._use(url)
            try:
                [answer] = self._post([artemisjson.read(ACCEPTORS, ("Parameters",))])
            except LoginRefused:
                raise  # a console that refuses these credentials: that is the line to read
            except EndpointUnreachable as error:
                tried.append(f"{self._shown} {error.reason}")
                continue
            except MetricsError as error:  # something else listens there
                tried.append(str(error))
                continue
            ports = sorted({str(a["Parameters"].get("port")) for a in artemisjson.matched(answer)
                            if isinstance(a.get("Parameters"), dict)}, key=lambda p: (len(p), p))  # fmt: skip
            if not ports or str(self.stomp_port) in ports:
                self._found = True
                return
            tried.append(f"{self._shown} is another broker's (acceptors on {', '.join(ports)})")
        self._use(self._candidates[0])
        raise MetricsError(f"no Artemis console of the broker on STOMP port {self.stomp_port}: {'; '.join(tried)}; "
                           "give it with --mq-broker-metrics-url")  # fmt: skip

    def read(self, reads: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The answers to ``reads``, in order, from one bulk POST to this broker's agent (looked for first)."""
        if not self._found:
            self._find()
        return self._post(reads)

    def _post(self, reads: list[dict[str, Any]]) -> list[dict[str, Any]]:
        where = self._where
        try:
            response = call(self._session.post, self.url, where=where, timeout=self.timeout, json=reads,
                            headers={"Origin": self._origin})  # fmt: skip
            body = response.json() if response.status_code == 200 else None
        except (MetricsError, ValueError) as error:
            self._session.close()  # a call cut short may leave a half-read response in the pool
            self._session = self._new_session()
            if isinstance(error, MetricsError):
                raise
            raise MetricsError(f"{where} did not answer with JSON (is it Artemis's console?)") from None
        status = response.status_code
        if status == 401:
            who = f"user {self.user}" if self.user else "no user given: --mq-broker-metrics-user or --mq-user"
            raise LoginRefused(f"{where} refused the credentials ({who})")
        if status == 403 and not self.user:
            raise LoginRefused(f"{where} refused an anonymous login (HTTP 403): give a user of the console's role, "
                           "--mq-broker-metrics-user or --mq-user")  # fmt: skip
        if status == 403:
            raise LoginRefused(f"{where} refused the access (HTTP 403): the user needs the console's role (amq by "
                           "default), and jolokia-access.xml must allow this origin and address")  # fmt: skip
        if status == 404:
            raise MetricsError(f"{where} answered HTTP 404: no Jolokia agent there (give the console's URL with "
                               "--mq-broker-metrics-url)")  # fmt: skip
        if status != 200:
            raise MetricsError(f"{where} answered HTTP {status}")
        if isinstance(body, dict) and "error" in body:  # Jolokia refuses a whole request in an HTTP 200
            said = str(body["error"])[:200]
            if body.get("status") == 403:  # e.g. "Origin http://... is not allowed to call this agent"
                raise LoginRefused(f"{where} refused the access ({said}): jolokia-access.xml must allow this origin")
            raise MetricsError(f"{where} refused the bulk read: {said}")
        if not isinstance(body, list) or len(body) != len(reads) or not all(isinstance(a, dict) for a in body):
            raise MetricsError(f"{where} answered a bulk read oddly (is it a Jolokia agent?)")
        for answer in body:
            if answer.get("status") not in (200, 404):  # 404: no MBean matched, an answer too
                said = str(answer.get("error") or answer.get("status"))[:160]
                raise MetricsError(f"{where} could not read {answer.get('request', {}).get('mbean')}: {said}")
        return body


def _addresses(destination: str) -> list[str]:
    """The addresses a STOMP destination may be on Artemis: as named, and without its prefix."""
    for prefix in ("/queue/", "/topic/"):
        if destination.startswith(prefix) and len(destination) > len(prefix):
            return [destination, destination[len(prefix) :]]
    return []


class ArtemisJvm:
    """The sampler's JVM probe for an Artemis broker anywhere: its JVM's platform MBeans, through ``source``."""

    def __init__(self, source: ArtemisJolokia) -> None:
        self.source = source
        #: When the previous reading was taken (monotonic s) and the JVM's CPU time then (ns).
        self._cpu: tuple[float, int] | None = None

    def sample(self) -> JvmFigures:
        """Heap, GC, threads; ``cpu_percent`` (of one core) since the previous reading."""
        figures, cpu_ns = artemisjson.jvm_figures(self.source.read(artemisjson.jvm_requests()))
        now = time.monotonic()
        if cpu_ns is not None:
            if self._cpu is not None and now > self._cpu[0]:
                figures["cpu_percent"] = 100.0 * (cpu_ns - self._cpu[1]) / 1e9 / (now - self._cpu[0])
            self._cpu = (now, cpu_ns)
        return figures
