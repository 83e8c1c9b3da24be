"""ActiveMQ Classic (Debian ``activemq``), one broker per folder.

Started straight from ``activemq.jar`` rather than the Debian init script: the
script sleeps a fixed 5 s and logs to /dev/null, and we want our own folder,
our own PID and a log we can show when start fails.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import quoteattr

from .base import LOOPBACK, Ctx, port_open, spawn, stomp_handshake
from .control import Service

HOME = Path("/usr/share/activemq")
# What Debian 12's `activemq` installs (upstream part of its version; held by tests/unit/test_compose.py).
VERSION = "5.17.2"
# The statisticsBrokerPlugin and the jms-map-json STOMP transformation need
# XStream/Jettison, which Debian's activemq does not put on the broker's path.
# The launcher (console Main) appends -Dactivemq.classpath entries to it.
EXTRA_JARS = ("/usr/share/java/xstream.jar", "/usr/share/java/jettison.jar")
# A non-persistent broker has no temp store to spool to, so with flow control
# off every unconsumed message stays on the heap (~22 KB per 20 KB STOMP body):
# 1g died at ~45,000 such messages; 4g holds a 100,000-message backlog.
HEAP = os.environ.get("MQUSERS_ACTIVEMQ_HEAP", "4g")
STATISTICS_PLUGIN = """\
      <!-- Broker's own counters over messaging; see tests/integration/broker_stats.py -->
      <statisticsBrokerPlugin/>
"""

BROKER_XML = """\
<beans xmlns="http://www.springframework.org/schema/beans"
       xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
       xsi:schemaLocation="http://www.springframework.org/schema/beans
         http://www.springframework.org/schema/beans/spring-beans.xsd
         http://activemq.apache.org/schema/core
         http://activemq.apache.org/schema/core/activemq-core.xsd">
  <!-- Written by `python -m services`; rewritten on every start. -->
{beans}  <broker xmlns="http://activemq.apache.org/schema/core"
          brokerName={broker_name} dataDirectory={data}
          persistent="{persistent}" useJmx="false"
          schedulerSupport="false" advisorySupport="{advisories}">
    <!-- Load tests must measure the broker, not flow-control stalls (except on the
         broker that tests them). Without flow control memoryUsage only decides when
         cursors stop caching (persistent broker) and what memoryPercentUsage reports. -->
    <destinationPolicy>
      <policyMap>
        <policyEntries>
          <policyEntry queue="&gt;" producerFlowControl="false"/>
          <policyEntry topic="&gt;" producerFlowControl="false"/>
          <!-- Queues named mqusers.prio.* deliver by priority (docs/brokers.md, docs/semantics.md). -->
          <policyEntry queue="mqusers.prio.&gt;" producerFlowControl="false" prioritizedMessages="true"/>
{flow_policy}        </policyEntries>
      </policyMap>
    </destinationPolicy>
{persistence}{tls_context}{network}
    <systemUsage>
      <systemUsage>
        <memoryUsage><memoryUsage limit="2 gb"/></memoryUsage>
        <storeUsage><storeUsage limit="16 gb"/></storeUsage>
        <tempUsage><tempUsage limit="8 gb"/></tempUsage>
      </systemUsage>
    </systemUsage>
    <transportConnectors>
      <transportConnector name="openwire"
          uri="tcp://{host}:{openwire}?transport.tcpNoDelay=true"/>
      <transportConnector name="stomp"
          uri="stomp+nio://{host}:{stomp}?transport.tcpNoDelay=true"/>
{tls_connector}    </transportConnectors>
    <plugins>
{statistics}      <!-- One account so tests can prove a wrong password is refused; anonymous clients
           (no login header) keep working. A local test broker's credential, not a secret. -->
      <simpleAuthenticationPlugin anonymousAccessAllowed="true">
        <users>
          <authenticationUser username="{user}" password="{password}" groups="users"/>
        </users>
      </simpleAuthenticationPlugin>
    </plugins>
  </broker>
</beans>
"""

KAHADB_XML = """\
    <persistenceAdapter>
      <kahaDB directory={kahadb}/>
    </persistenceAdapter>"""

# log4j 1.2: Debian's ActiveMQ ships log4j-1.2 + slf4j-log4j12; its log4j2 file is ignored.
LOG4J = """\
log4j.rootLogger=INFO, file
log4j.logger.org.springframework=WARN
log4j.logger.org.apache.xbean=WARN
log4j.appender.file=org.apache.log4j.RollingFileAppender
log4j.appender.file.file={log}
log4j.appender.file.append=true
log4j.appender.file.maxFileSize=20MB
log4j.appender.file.maxBackupIndex=2
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=%d | %-5p | %m | %c | %t%n
"""


# stomp+ssl rather than stomp+nio+ssl: with NIO+SSL, ActiveMQ 5.17 sometimes processed a client's
# first frame twice ("Already connected" ERROR on about one connection in five under load).
TLS_CONNECTOR = """\
      <transportConnector name="stomp+ssl"
          uri="stomp+ssl://{host}:{port}?transport.tcpNoDelay=true"/>
"""
# STOMP over WebSocket (Classic 6 only: Debian's 5.17 has no activemq-http and no Jetty WebSocket jars).
WS_CONNECTOR = """\
      <transportConnector name="ws" uri="ws://{host}:{port}?transport.tcpNoDelay=true"/>
"""
WSS_CONNECTOR = """\
      <transportConnector name="wss" uri="wss://{host}:{port}?transport.tcpNoDelay=true"/>
"""
TLS_CONTEXT = """\
    <sslContext>
      <sslContext keyStore={keystore} keyStorePassword="{password}" keyStoreType="PKCS12"/>
    </sslContext>
"""
# Protects a throw-away self-signed key of a loopback test broker; nothing else.
KEYSTORE_PASSWORD = "mqusers-local"
#: The one account (anonymous clients allowed too): a local test broker's credential, not a secret.
USER, PASSWORD = "mqusers", "mqusers-local"


def certificate(ctx: Ctx) -> Path:
    """The broker's self-signed certificate (PEM), for clients to verify stomp+ssl against."""
    return ctx.dir / "broker-cert.pem"


def _tls_keystore(ctx: Ctx) -> Path:
    """A self-signed key for 127.0.0.1 / localhost (and the bind host), made once per service folder with keytool."""
    keystore = ctx.dir / "conf" / "broker.p12"
    san = "SAN=ip:127.0.0.1,dns:localhost" + (f",ip:{ctx.host}" if ctx.host != LOOPBACK else "")
    if not keystore.exists():
        store = ["-keystore", str(keystore), "-storepass", KEYSTORE_PASSWORD, "-storetype", "PKCS12"]
        subprocess.run(
            ["keytool", "-genkeypair", "-alias", "broker", "-keyalg", "RSA", "-keysize", "2048", "-validity", "3650",
             "-dname", "CN=127.0.0.1", "-ext", san, *store],
            check=True, capture_output=True,
        )  # fmt: skip
        subprocess.run(
            ["keytool", "-exportcert", "-rfc", "-alias", "broker", "-file", str(certificate(ctx)), *store],
            check=True, capture_output=True,
        )  # fmt: skip
    return keystore


#: On the broker that tests producer flow control, queues named mqusers.flow.* block their producers
#: once 1 MB of messages waits (a non-persistent broker has no temp store to spool to).
FLOW_POLICY = """\
          <policyEntry queue="mqusers.flow.&gt;" producerFlowControl="true" memoryLimit="1 mb"/>
"""


@dataclass(frozen=True)
class Store:
    """A persistent store other than KahaDB in the broker's own folder (the master/slave pairs)."""

    persistence: str  # the <persistenceAdapter> element
    beans: str = ""  # Spring beans beside <broker>, e.g. the JDBC DataSource it refers to
    jars: tuple[str, ...] = ()  # added to the broker's classpath, e.g. the JDBC driver
    logging: str = ""  # further log4j.properties lines, e.g. a lock's DEBUG messages


def statistics_enabled() -> bool:
    """MQUSERS_ACTIVEMQ_STATISTICS=off leaves the statistics plugin out: a broker as many run in
    production, on which mqusers' statistics source must say what is missing."""
    return os.environ.get("MQUSERS_ACTIVEMQ_STATISTICS", "on").strip().lower() != "off"


def write_config(
    ctx: Ctx, persistent: bool, flow_control: bool = False, store: Store | None = None, network: str | None = None
) -> Path:
    """Write conf/activemq.xml and conf/log4j.properties; return the XML path.

    One function for every flavour: only persistence, flow control, ports and a network's
    ``<networkConnectors>`` differ. A member of a network (``network`` not None, empty when the others
    dial it) has its advisories on: a bridge forwards on the demand they carry.
    """
    conf, data = ctx.dir / "conf", ctx.dir / "data"
    for folder in (conf, data, ctx.dir / "tmp"):
        folder.mkdir(parents=True, exist_ok=True)
    persistence = ""
    if store is not None:
        persistence = store.persistence
    elif persistent:
        persistence = KAHADB_XML.format(kahadb=quoteattr(str(data / "kahadb")))
    tls_connector = tls_context = ""
    if "stomp_ssl" in ctx.ports:
        tls_connector = TLS_CONNECTOR.format(host=ctx.host, port=ctx.ports["stomp_ssl"])
    if "ws" in ctx.ports:
        tls_connector += WS_CONNECTOR.format(host=ctx.host, port=ctx.ports["ws"])
    if "wss" in ctx.ports:
        tls_connector += WSS_CONNECTOR.format(host=ctx.host, port=ctx.ports["wss"])
    if "stomp_ssl" in ctx.ports or "wss" in ctx.ports:
        keystore = quoteattr(str(_tls_keystore(ctx)))
        tls_context = TLS_CONTEXT.format(keystore=keystore, password=KEYSTORE_PASSWORD)
    xml = BROKER_XML.format(
        beans=store.beans if store is not None else "",
        tls_connector=tls_connector,
        tls_context=tls_context,
        host=ctx.host,
        broker_name=quoteattr(ctx.name),
        data=quoteattr(str(data)),
        persistent=str(persistent).lower(),
        persistence=persistence,
        openwire=ctx.ports["openwire"],
        stomp=ctx.ports["stomp"],
        flow_policy=FLOW_POLICY if flow_control else "",
        statistics=STATISTICS_PLUGIN if statistics_enabled() else "",
        network=network or "",
        advisories=str(network is not None).lower(),
        user=USER,
        password=PASSWORD,
    )
    (conf / "activemq.xml").write_text(xml)
    logging = store.logging if store is not None else ""
    (conf / "log4j.properties").write_text(LOG4J.format(log=ctx.log_file) + logging)
    return conf / "activemq.xml"


def _java_argv(ctx: Ctx, xml: Path, heap: str = HEAP, jars: tuple[str, ...] = ()) -> list[str]:
    base = ctx.dir
    return [
        "java",
        "-Xms512m",
        f"-Xmx{heap}",
        # Non-persistent messages without flow control live on the heap: a broker
        # that ran out of it is better dead (tests notice) than wedged.
        "-XX:+ExitOnOutOfMemoryError",
        # Its collector's pauses, beside a run's latency: a p99 near the knee moves with them.
        f"-Xlog:gc:file={base / 'gc.log'}:uptime,pid:filecount=2,filesize=8m",
        "-Djava.awt.headless=true",
        "--add-opens",
        "java.base/java.lang=ALL-UNNAMED",
        f"-Djava.io.tmpdir={base / 'tmp'}",
        f"-Dactivemq.home={HOME}",
        f"-Dactivemq.base={base}",
        f"-Dactivemq.conf={base / 'conf'}",
        f"-Dactivemq.data={base / 'data'}",
        f"-Dactivemq.classpath={':'.join((*EXTRA_JARS, *jars))}",
        f"-Dlog4j.configuration=file:{base / 'conf' / 'log4j.properties'}",
        "-jar",
        str(HOME / "bin" / "activemq.jar"),
        "start",
        f"xbean:file:{xml}",
    ]


def launcher(
    persistent: bool,
    flow_control: bool = False,
    store: Callable[[Ctx], Store] | None = None,
    heap: str = HEAP,
    network: Callable[[Ctx], str] | None = None,
) -> Callable[[Ctx], int]:
    """A Service's launch: config written, broker spawned. ``store`` is asked at each launch
    (it may check what the store needs, e.g. a running database), and ``network`` for the
    ``<networkConnectors>`` element (read from the environment at each launch)."""

    def launch(ctx: Ctx) -> int:
        chosen = store(ctx) if store is not None else None
        xml = write_config(ctx, persistent, flow_control, chosen, network(ctx) if network is not None else None)
        argv = _java_argv(ctx, xml, heap, chosen.jars if chosen is not None else ())
        # console.log catches what happens before log4j is up (JVM errors).
        return spawn(ctx, argv, log=ctx.dir / "console.log")

    return launch


def ready(ctx: Ctx) -> bool:
    """Every connector up and STOMP completes a CONNECT handshake (at ctx.host, from this namespace)."""
    host = ctx.host
    tls_up = all(port_open(ctx.ports[name], host) for name in ("stomp_ssl", "ws", "wss") if name in ctx.ports)
    return tls_up and port_open(ctx.ports["openwire"], host) and stomp_handshake(ctx.ports["stomp"], host=host)


def logs(ctx: Ctx) -> list[Path]:
    return [ctx.dir / "console.log"]


SERVICES = [
    Service(
        name="activemq",
        package="activemq",
        base_ports={"stomp": 61613, "openwire": 61616, "stomp_ssl": 61612},
        launch=launcher(persistent=False),
        ready=ready,
        logs=logs,
        placeable=True,
    ),
    Service(
        name="activemq-persistent",
        package="activemq",
        base_ports={"stomp": 61615, "openwire": 61617},
        launch=launcher(persistent=True),
        ready=ready,
        logs=logs,
        placeable=True,
    ),
    # For the stress tests: frozen with SIGSTOP and under producer flow control, so the brokers
    # other tests share are never touched.
    Service(
        name="activemq-stress",
        package="activemq",
        base_ports={"stomp": 61618, "openwire": 61619},
        launch=launcher(persistent=False, flow_control=True),
        ready=ready,
        logs=logs,
    ),
]
