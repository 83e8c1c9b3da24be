"""ActiveMQ Classic networks of brokers: store-and-forward between brokers over network connectors.

- ``activemq-net-a`` / ``-b`` / ``-c``: non-persistent brokers joined in a full mesh. Start ``a`` and
  ``b`` for a network of 2; ``c`` as well for a network of 3 (a connector to a member that is not
  running retries in the background, as in production).

Each link forwards on demand: a consumer on one broker makes the others' bridges subscribe to the
destination for it (advisory messages, on for these brokers only), and ``networkTTL`` is 1, so a
message crosses one link at most. Two settings, read at each start from the environment, pick what
the brokers document as the choices that change delivery:

- ``MQUSERS_NETWORK_DUPLEX`` (``true``, default): one connector a pair, carrying both ways (the
  broker earlier in a-b-c dials the later); ``false``: each broker dials every other, one way each.
- ``MQUSERS_NETWORK_CONDUIT`` (``true``, default): a broker's topic subscribers share one
  subscription across a link; ``false``: one each, and a topic message can arrive twice across a
  network where a broker relays another's subscription (what conduit subscriptions prevent).
"""

from __future__ import annotations

import os
from xml.sax.saxutils import quoteattr

from . import activemq
from .base import Ctx, ServiceError
from .control import Service

NAMES = ("activemq-net-a", "activemq-net-b", "activemq-net-c")
PORTS = {name: {"stomp": 61640 + 2 * i, "openwire": 61641 + 2 * i} for i, name in enumerate(NAMES)}
# Three JVMs beside the suite's others: non-persistent messages in flight, not a backlog, live here.
HEAP = "1g"

CONNECTOR = """\
      <networkConnector name={name} uri={uri} duplex="{duplex}" conduitSubscriptions="{conduit}"
          networkTTL="1" decreaseNetworkConsumerPriority="false" suppressDuplicateQueueSubscriptions="true"/>
"""


def _flag(variable: str) -> bool:
    value = os.environ.get(variable, "true").strip().lower()
    if value not in ("true", "false"):
        raise ServiceError(f"{variable} is true or false, not {value!r}")
    return value == "true"


def dialed(name: str, duplex: bool) -> list[str]:
    """The network members ``name`` opens a connector to: the later ones when links are duplex, else all others."""
    index = NAMES.index(name)
    return [peer for i, peer in enumerate(NAMES) if (i > index if duplex else i != index)]


def connectors(ctx: Ctx) -> str:
    """The ``<networkConnectors>`` element of ``ctx``'s broker, as the environment picks it."""
    duplex, conduit = _flag("MQUSERS_NETWORK_DUPLEX"), _flag("MQUSERS_NETWORK_CONDUIT")
    lines = []
    for peer in dialed(ctx.name, duplex):
        port = PORTS[peer]["openwire"] + (ctx.ports["openwire"] - PORTS[ctx.name]["openwire"])  # the same offset
        lines.append(CONNECTOR.format(name=quoteattr(f"{ctx.name}-to-{peer}"),
                                      uri=quoteattr(f"static:(tcp://{ctx.host}:{port})"),
                                      duplex=str(duplex).lower(), conduit=str(conduit).lower()))  # fmt: skip
    if not lines:
        return ""
    return "    <networkConnectors>\n" + "".join(lines) + "    </networkConnectors>\n"


SERVICES = [
    Service(
        name=name,
        package="activemq",
        base_ports=PORTS[name],
        launch=activemq.launcher(persistent=False, heap=HEAP, network=connectors),
        ready=activemq.ready,
        logs=activemq.logs,
    )
    for name in NAMES
]
