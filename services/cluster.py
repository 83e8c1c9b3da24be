"""ActiveMQ master/slave pairs: two brokers on one store, a lock electing the master.

- ``activemq-shared-a`` / ``-b``: one KahaDB folder, ``<state dir>/activemq-shared-store/``;
  KahaDB's lock file elects the master (shared-file-system master/slave).
- ``activemq-jdbc-a`` / ``-b``: one PostgreSQL database (the ``postgresql`` service, started
  first); a lease row in ACTIVEMQ_LOCK elects the master (JDBC master/slave, lease locker).

A slave opens no connector until it holds the lock, so a pair's broker is ready when it
serves STOMP or when its log, since this launch, says it waits for the lock. Each broker has
its own ports; clients fail over by trying both (``services.master_of`` says which serves).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from xml.sax.saxutils import quoteattr

from . import activemq, control, postgresql
from .activemq import Store
from .base import Ctx, ServiceError, ensure_package, live_pid
from .control import Service

# The machine runs many JVMs; a pair's brokers hold persistent messages on disk, not on the heap.
HEAP = "1g"
SHARED_STORE = "activemq-shared-store"  # folder under the state dir, beside the brokers' own
DRIVER = "/usr/share/java/postgresql.jar"  # from libpostgresql-jdbc-java
LAUNCH_MARK = "log-offset"  # the broker log's size when this launch began

SHARED_PERSISTENCE = """\
    <persistenceAdapter>
      <kahaDB directory={kahadb}>
        <!-- A slave retries the lock file every 0.5 s (default 10 s): a fast takeover. -->
        <locker><shared-file-locker lockAcquireSleepInterval="500"/></locker>
      </kahaDB>
    </persistenceAdapter>"""

# The master renews its lease every lockKeepAlivePeriod ms; a lease lasts lockAcquireSleepInterval
# ms, which is also how often a slave retries. Renewing at a third of the lease leaves room for a
# master's GC pause on a busy machine before a slave may take a lease still in use.
JDBC_PERSISTENCE = """\
    <persistenceAdapter>
      <jdbcPersistenceAdapter dataSource="#postgres" createTablesOnStartup="{create}" lockKeepAlivePeriod="1000">
        <locker><lease-database-locker lockAcquireSleepInterval="3000"/></locker>
      </jdbcPersistenceAdapter>
    </persistenceAdapter>"""

# A pooled DataSource (Debian's commons-dbcp, in activemq's lib/optional on the broker's path): the
# driver's own PGSimpleDataSource opens a connection, with a password login, per store operation
# (1,000 persistent sends with receipts: 8.0 s unpooled, 0.9 s pooled): the pair's figures would be
# the logins'.
POSTGRES_DATASOURCE = """\
  <bean id="postgres" class="org.apache.commons.dbcp.BasicDataSource" destroy-method="close">
    <property name="driverClassName" value="org.postgresql.Driver"/>
    <property name="url" value={url}/>
    <property name="username" value={user}/>
    <property name="password" value={password}/>
    <property name="poolPreparedStatements" value="true"/>
  </bean>
"""

# "Lease held by <other> till <date>" is logged at DEBUG only, once per retry.
LEASE_DEBUG = "log4j.logger.org.apache.activemq.store.jdbc.LeaseDatabaseLocker=DEBUG\n"


def _shared_store(ctx: Ctx) -> Store:
    kahadb = ctx.dir.parent / SHARED_STORE / "kahadb"
    kahadb.mkdir(parents=True, exist_ok=True)
    return Store(persistence=SHARED_PERSISTENCE.format(kahadb=quoteattr(str(kahadb))))


def _jdbc_store(ctx: Ctx) -> Store:
    """The pair's database as a DataSource bean; ActiveMQ creates its tables only while they are
    missing (on every later start 5.17 would run its CREATE and ALTER statements again and log
    each failure with a stack trace)."""
    # A clear refusal rather than a broker that retries a dead database; starting the database
    # here would leave it out of what `start --started FILE` records for its caller to stop.
    service = postgresql.SERVICE
    if not control.is_running(service):
        raise ServiceError(f"{ctx.name} keeps its messages in PostgreSQL: `python -m services start postgresql` first")
    ensure_package("libpostgresql-jdbc-java")  # the driver; the Service's own package is activemq
    pg = service.ctx()
    bean = POSTGRES_DATASOURCE.format(
        url=quoteattr(postgresql.jdbc_url(pg)),
        user=quoteattr(postgresql.ROLE),
        password=quoteattr(postgresql.PASSWORD),
    )
    exists = postgresql.query(pg, "SELECT to_regclass('activemq_lock') IS NOT NULL") == "t"
    persistence = JDBC_PERSISTENCE.format(create=str(not exists).lower())
    return Store(persistence=persistence, beans=bean, jars=(DRIVER,), logging=LEASE_DEBUG)


@dataclass(frozen=True)
class Pair:
    """A master/slave pair: its brokers, their common store, and how a slave says it waits."""

    names: tuple[str, str]
    ports: tuple[dict[str, int], dict[str, int]]
    store: Callable[[Ctx], Store]
    #: What ActiveMQ 5.17 logs once a broker found the lock taken and waits for it.
    waiting: str


PAIRS = {
    "shared": Pair(
        names=("activemq-shared-a", "activemq-shared-b"),
        ports=({"stomp": 61630, "openwire": 61631}, {"stomp": 61632, "openwire": 61633}),
        store=_shared_store,
        # SharedFileLocker, INFO, once: "Database <kahadb>/lock is locked by another server. ..."
        waiting="is locked by another server. This broker is now in slave mode waiting a lock to be acquired",
    ),
    "jdbc": Pair(
        names=("activemq-jdbc-a", "activemq-jdbc-b"),
        ports=({"stomp": 61634, "openwire": 61635}, {"stomp": 61636, "openwire": 61637}),
        store=_jdbc_store,
        # LeaseDatabaseLocker, DEBUG, every retry: "<this broker> Lease held by <master> till <date>"
        waiting=" Lease held by ",
    ),
}


def logged_since_launch(ctx: Ctx, line: str) -> bool:
    """Our broker runs and logged ``line`` since it was launched (earlier runs' lines do not count)."""
    if live_pid(ctx) is None:
        return False
    try:
        start = int((ctx.dir / LAUNCH_MARK).read_text())
        with open(ctx.log_file, "rb") as log:
            if log.seek(0, 2) < start:
                start = 0  # the log rolled over since the launch
            log.seek(start)
            return line.encode() in log.read()
    except (FileNotFoundError, ValueError):
        return False


def marked(launch: Callable[[Ctx], int]) -> Callable[[Ctx], int]:
    """``launch``, noting first where this launch's log lines begin (``logged_since_launch``)."""

    def launch_marked(ctx: Ctx) -> int:
        ctx.dir.mkdir(parents=True, exist_ok=True)
        size = ctx.log_file.stat().st_size if ctx.log_file.exists() else 0
        (ctx.dir / LAUNCH_MARK).write_text(f"{size}\n")
        return launch(ctx)

    return launch_marked


def _ready(pair: Pair) -> Callable[[Ctx], bool]:
    def ready(ctx: Ctx) -> bool:
        return activemq.ready(ctx) or logged_since_launch(ctx, pair.waiting)

    return ready


def _role(pair: Pair) -> Callable[[Ctx], str]:
    def role(ctx: Ctx) -> str:
        if activemq.ready(ctx):
            return "master"
        return "slave" if logged_since_launch(ctx, pair.waiting) else "starting"

    return role


SERVICES = [
    Service(
        name=name,
        package="activemq",
        base_ports=ports,
        launch=marked(activemq.launcher(persistent=True, store=pair.store, heap=HEAP)),
        ready=_ready(pair),
        role=_role(pair),
        logs=activemq.logs,
    )
    for pair in PAIRS.values()
    for name, ports in zip(pair.names, pair.ports, strict=True)
]
