"""ActiveMQ Classic networks of brokers: store-and-forward between brokers over network connectors.

- ``activemq-net-a`` / ``-b`` / ``-c``: non-persistent brokers joined in a full mesh (or a line, below). Start ``a`` and
  ``b`` for a network of 2; ``c`` as well for a network of 3 (a connector to a member that is not
  running retries in the background, as in production).

Each link forwards on demand: a consumer on one broker makes the others' bridges subscribe to the
destination for it (advisory messages, on for these brokers only). Settings read at each start from
the environment pick the shape and what the brokers document as the choices that change delivery; a
member started while others run takes theirs unless the environment sets one (a restart keeps its
network as it was):

- ``MQUSERS_NETWORK_SHAPE`` (``mesh``, default): every pair linked; ``line``: a-b and b-c only, so a
  message from a to c crosses two links (b stores and forwards it): the cost of a second hop.
- ``MQUSERS_NETWORK_TTL`` (default 1; 2 for a line): how many links a message (and a consumer's
  demand) may cross. In a mesh, 1 keeps every message on the direct link; 2 lets demand also travel
  round through the third broker.
- ``MQUSERS_NETWORK_DUPLEX`` (``true``, default): one connector a pair, carrying both ways (the
  broker earlier in a-b-c dials the later); ``false``: each broker dials every other, one way each.
- ``MQUSERS_NETWORK_CONDUIT`` (``true``, default): a broker's topic subscribers share one
  subscription across a link, so a message crosses it once per broker; ``false``: one each, and it
  crosses once per remote subscriber. The brokers document duplicates for the latter; 5.17 delivers
  none (measured in a mesh and a line, TTL 1 and 2: each subscription's duplicate audit drops the
  extra copies), and the cost shows in the brokers' own counts, which mqusers' cross-check reads.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from xml.sax.saxutils import quoteattr

from . import activemq
from .base import Ctx, ServiceError, live_pid
from .control import Service

NAMES = ("activemq-net-a", "activemq-net-b", "activemq-net-c")
PORTS = {name: {"stomp": 61640 + 2 * i, "openwire": 61641 + 2 * i} for i, name in enumerate(NAMES)}
# Three JVMs beside the suite's others: non-persistent messages in flight, not a backlog, live here.
HEAP = "1g"

CONNECTOR = """\
      <networkConnector name={name} uri={uri} duplex="{duplex}" conduitSubscriptions="{conduit}"
          networkTTL="{ttl}" decreaseNetworkConsumerPriority="false" suppressDuplicateQueueSubscriptions="true"/>
"""


#: What each member records of its settings at start, for a member started later while it runs.
RECORD = "network.json"


def _peers_settings(ctx: Ctx) -> dict[str, str]:
    """The settings a running member of ``ctx``'s network was started with (none running: empty). A member
    started again on its own (a restart, ``python -m services fail-over``) joins its network as it is, not as
    the caller's environment would have it."""
    for peer in NAMES:
        peer_ctx = replace(ctx, name=peer, dir=ctx.dir.parent / peer)
        record = peer_ctx.dir / RECORD
        if peer != ctx.name and record.is_file() and live_pid(peer_ctx) is not None:
            return dict(json.loads(record.read_text()))
    return {}


def _setting(variable: str, default: str, allowed: tuple[str, ...], peers: dict[str, str]) -> str:
    """The environment's value, else the running members', else ``default``."""
    value = os.environ.get(variable, peers.get(variable, default)).strip().lower()
    if value not in allowed:
        raise ServiceError(f"{variable} is {' or '.join(allowed)}, not {value!r}")
    return value


def dialed(name: str, duplex: bool, line: bool = False) -> list[str]:
    """The network members ``name`` opens a connector to: of its neighbours (every other member in a mesh, the
    adjacent ones in a line), the later ones when links are duplex, else all of them."""
    index = NAMES.index(name)
    linked = [i for i in range(len(NAMES)) if i != index and (not line or abs(i - index) == 1)]
    return [NAMES[i] for i in linked if (i > index or not duplex)]


def connectors(ctx: Ctx) -> str:
    """The ``<networkConnectors>`` element of ``ctx``'s broker, as the environment (or the running members) pick it;
    the settings recorded in its folder."""
    peers, flags = _peers_settings(ctx), ("true", "false")
    chosen = {"MQUSERS_NETWORK_DUPLEX": _setting("MQUSERS_NETWORK_DUPLEX", "true", flags, peers),
              "MQUSERS_NETWORK_CONDUIT": _setting("MQUSERS_NETWORK_CONDUIT", "true", flags, peers),
              "MQUSERS_NETWORK_SHAPE": _setting("MQUSERS_NETWORK_SHAPE", "mesh", ("mesh", "line"), peers)}  # fmt: skip
    line = chosen["MQUSERS_NETWORK_SHAPE"] == "line"
    chosen["MQUSERS_NETWORK_TTL"] = _setting("MQUSERS_NETWORK_TTL", "2" if line else "1", ("1", "2", "3"), peers)
    ctx.dir.mkdir(parents=True, exist_ok=True)
    (ctx.dir / RECORD).write_text(json.dumps(chosen) + "\n")
    duplex, conduit = chosen["MQUSERS_NETWORK_DUPLEX"] == "true", chosen["MQUSERS_NETWORK_CONDUIT"] == "true"
    ttl = chosen["MQUSERS_NETWORK_TTL"]
    lines = []
    for peer in dialed(ctx.name, duplex, line):
        port = PORTS[peer]["openwire"] + (ctx.ports["openwire"] - PORTS[ctx.name]["openwire"])  # the same offset
        lines.append(CONNECTOR.format(name=quoteattr(f"{ctx.name}-to-{peer}"),
                                      uri=quoteattr(f"static:(tcp://{ctx.host}:{port})"),
                                      duplex=str(duplex).lower(), conduit=str(conduit).lower(), ttl=ttl))  # fmt: skip
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
