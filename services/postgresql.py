"""PostgreSQL (Debian ``postgresql``) from its own data folder, for ActiveMQ's JDBC store.

A private cluster, not Debian's system one (no pg_ctlcluster, nothing in /etc):
``initdb`` once into ``<folder>/data``, then ``postgres`` itself is the process we
record and stop. It listens on 127.0.0.1 and on a socket in ``<folder>/socket``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

from .base import LOOPBACK, Ctx, ServiceError, poll_until, reachable_by_others, spawn, wait_exit
from .control import Service

USER = "postgres"  # the server refuses to run as root
VERSIONS = Path("/usr/lib/postgresql")  # Debian keeps the binaries off PATH, one folder per major version
# ActiveMQ's database and login. A local test database's credential, not a secret.
DATABASE = ROLE = "activemq"
PASSWORD = "mqusers-local"


def _bin(program: str) -> str:
    """``program`` of the newest installed major version (15 on Debian 12)."""
    found = sorted(VERSIONS.glob(f"*/bin/{program}"), key=lambda path: int(path.parts[-3]))
    if not found:
        raise ServiceError(f"{program} not found under {VERSIONS}; is the postgresql package installed?")
    return str(found[-1])


def _data(ctx: Ctx) -> Path:
    return ctx.dir / "data"


def _socket(ctx: Ctx) -> Path:
    return ctx.dir / "socket"


def jdbc_url(ctx: Ctx) -> str:
    return f"jdbc:postgresql://{LOOPBACK}:{ctx.ports['postgres']}/{DATABASE}"


def _run(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30, env=env)


def _as_postgres(argv: list[str]) -> subprocess.CompletedProcess[str]:
    # runuser, not sudo: root switching user needs no password and no sudoers entry.
    return _run(["runuser", "-u", USER, "--", *argv])


def _initdb(ctx: Ctx) -> None:
    """Create the cluster once. Local (socket) logins are the OS user's (peer), TCP ones need a password."""
    data = _data(ctx)
    if (data / "PG_VERSION").exists():
        return
    shutil.rmtree(data, ignore_errors=True)  # a half-made cluster from an interrupted initdb
    data.mkdir(parents=True)
    reachable_by_others(data)
    shutil.chown(data, USER, USER)
    argv = [_bin("initdb"), "-D", str(data), "-U", USER, "--auth-local=peer", "--auth-host=scram-sha-256"]
    done = _as_postgres([*argv, "--encoding=UTF8", "--locale=C.UTF-8"])
    if done.returncode != 0:
        raise ServiceError(f"initdb failed: {(done.stderr or done.stdout).strip()[-500:]}")


def launch(ctx: Ctx) -> int:
    _initdb(ctx)
    _socket(ctx).mkdir(exist_ok=True)
    shutil.chown(_socket(ctx), USER, USER)
    argv = [
        _bin("postgres"),
        "-D", str(_data(ctx)),
        "-p", str(ctx.ports["postgres"]),
        "-h", LOOPBACK,
        "-k", str(_socket(ctx)),
    ]  # fmt: skip
    # spawn with user=, not runuser: runuser stays the parent, and its PID is not the server's.
    return spawn(ctx, argv, user=USER)


def _superuser(ctx: Ctx, sql: str) -> str:
    """Run ``sql`` as the superuser over the socket (peer login as the postgres OS user)."""
    psql = [_bin("psql"), "-h", str(_socket(ctx)), "-p", str(ctx.ports["postgres"]), "-d", "postgres"]
    done = _as_postgres([*psql, "-X", "-v", "ON_ERROR_STOP=1", "-tAc", sql])
    if done.returncode != 0:
        raise ServiceError(f"psql as {USER} failed: {done.stderr.strip()[-500:]}")
    return done.stdout.strip()


def _provision(ctx: Ctx) -> None:
    """ActiveMQ's role and database, made on the first start (checked on every start)."""
    if not _superuser(ctx, f"SELECT 1 FROM pg_roles WHERE rolname = '{ROLE}'"):
        _superuser(ctx, f"CREATE ROLE {ROLE} LOGIN PASSWORD '{PASSWORD}'")
    if not _superuser(ctx, f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE}'"):
        _superuser(ctx, f"CREATE DATABASE {DATABASE} OWNER {ROLE}")


def query(ctx: Ctx, sql: str) -> str:
    """Run ``sql`` as ActiveMQ's role over TCP, as the brokers log in; unaligned output, one row a line."""
    env = {**os.environ, "PGPASSWORD": PASSWORD, "PGCONNECT_TIMEOUT": "2"}
    psql = [_bin("psql"), "-h", LOOPBACK, "-p", str(ctx.ports["postgres"]), "-U", ROLE, "-d", DATABASE]
    done = _run([*psql, "-X", "-v", "ON_ERROR_STOP=1", "-tAc", sql], env)
    if done.returncode != 0:
        raise ServiceError(f"psql as {ROLE} failed: {done.stderr.strip()[-500:]}")
    return done.stdout.strip()


def ready(ctx: Ctx) -> bool:
    """A real password login as ActiveMQ's role answers a query."""
    try:
        return query(ctx, "SELECT 1") == "1"
    except ServiceError:
        return False


def _accepting(ctx: Ctx) -> bool:
    # As the postgres OS user over the socket: a peer login that succeeds leaves no FATAL in the server's log.
    isready = [_bin("pg_isready"), "-q", "-h", str(_socket(ctx)), "-p", str(ctx.ports["postgres"]), "-U", USER]
    return _as_postgres(isready).returncode == 0


def wait(ctx: Ctx, pid: int, deadline: float) -> bool:
    """Accepting connections, then the role and database made, then a login as that role."""
    if not poll_until(lambda: _accepting(ctx), pid, deadline):
        return False
    _provision(ctx)
    return poll_until(lambda: ready(ctx), pid, deadline)


def shutdown(ctx: Ctx, pid: int) -> None:
    """Fast shutdown (SIGINT): SIGTERM's smart shutdown would wait for connected brokers to leave."""
    os.kill(pid, signal.SIGINT)
    if not wait_exit(pid, 30.0):
        raise ServiceError(f"postgres (PID {pid}) did not stop within 30 s of SIGINT")


SERVICE = Service(
    name="postgresql",
    package="postgresql",
    base_ports={"postgres": 25432},  # below the ephemeral range (32768-60999): a client socket may hold a port there
    launch=launch,
    ready=ready,
    wait=wait,
    shutdown=shutdown,
)
