"""ActiveMQ Classic 6 assembled from its Maven Central jars (no binary distribution is served there).

``activemq6-pom.xml`` pins the broker, STOMP, KahaDB, JAAS, Spring (xbean config) jars and the ws
transport's (activemq-http, Jetty's WebSocket server);
``mvn dependency:copy-dependencies`` fetches them once (SHA-1 checked by Maven, strictly) into
``<project>/.services/cache/``. The broker reads the same activemq.xml the Debian 5.17 brokers get
(services/activemq.py; KahaDB for ``activemq6-persistent``) and runs from ``ActiveMQ6.java``, a
single-file program, so the PID is the JVM's.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from . import activemq
from .base import Ctx, cache_dir, cache_lock, maven, spawn
from .control import Service

POM = Path(__file__).with_name("activemq6-pom.xml")
# Pinned once, in the pom: the newest 6.1.x Maven Central serves (2026-12).
VERSION = re.search(r"<activemq.version>(.+?)</activemq.version>", POM.read_text()).group(1)  # type: ignore[union-attr]
MAIN = Path(__file__).with_name("ActiveMQ6.java")
# log4j2 (ActiveMQ 6 logs through slf4j 2 → log4j2, not Debian 5.17's log4j 1.2).
LOG4J2 = """\
rootLogger.level=INFO
rootLogger.appenderRef.file.ref=file
appender.file.type=File
appender.file.name=file
appender.file.fileName={log}
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=%d | %-5p | %m | %c | %t%n
logger.spring.name=org.springframework
logger.spring.level=WARN
"""


def lib() -> Path:
    """The jars for this very pom: a changed pom gets a fresh folder, never a mix."""
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()[:12]
    return cache_dir() / f"activemq-{VERSION}-{digest}"


def prepare() -> None:
    """Fetch the pom's runtime jars unless the cache has them."""
    done = lib() / ".complete"
    if done.is_file():
        return
    with cache_lock():
        if done.is_file():
            return
        partial = cache_dir() / "activemq6-partial"
        shutil.rmtree(partial, ignore_errors=True)
        maven(
            ["-f", str(POM), "dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={partial}"],
            f"ActiveMQ Classic {VERSION} jars",
        )
        (partial / ".complete").touch()
        shutil.rmtree(lib(), ignore_errors=True)
        partial.rename(lib())  # whole or not at all


def launcher(persistent: bool) -> Callable[[Ctx], int]:
    """A Service's launch: the shared activemq.xml (KahaDB when ``persistent``), the broker spawned."""

    def launch(ctx: Ctx) -> int:
        return _spawn(ctx, activemq.write_config(ctx, persistent=persistent))

    return launch


def _spawn(ctx: Ctx, xml: Path) -> int:
    log4j2 = ctx.dir / "conf" / "log4j2.properties"
    log4j2.write_text(LOG4J2.format(log=ctx.log_file))
    argv = [
        "java",
        "-Xms512m",
        f"-Xmx{activemq.HEAP}",
        "-XX:+ExitOnOutOfMemoryError",  # as services/activemq.py: a broker out of heap is better dead
        "-Djava.awt.headless=true",
        f"-Djava.io.tmpdir={ctx.dir / 'tmp'}",
        f"-Dactivemq.data={ctx.dir / 'data'}",
        f"-Dlog4j2.configurationFile={log4j2}",
        "-cp",
        f"{lib()}/*",
        str(MAIN),
        f"xbean:file:{xml}",
    ]
    # console.log catches what happens before log4j2 is up (JVM and compile errors).
    return spawn(ctx, argv, log=ctx.dir / "console.log")


SERVICE = Service(
    name="activemq6",
    package="openjdk-17-jdk-headless",  # javac, for the single-file ActiveMQ6.java
    # ws and wss: STOMP over WebSocket (activemq-http and Jetty's WebSocket server in the pom).
    base_ports={"stomp": 61620, "openwire": 61621, "ws": 61624, "wss": 61625},
    launch=launcher(persistent=False),
    ready=activemq.ready,
    logs=activemq.logs,
    prepare=prepare,
)
# KahaDB in its own folder, as activemq-persistent beside activemq: for the tests that kill a broker.
PERSISTENT = Service(
    name="activemq6-persistent",
    package="openjdk-17-jdk-headless",
    base_ports={"stomp": 61622, "openwire": 61623},
    launch=launcher(persistent=True),
    ready=activemq.ready,
    logs=activemq.logs,
    prepare=prepare,
)
