"""ActiveMQ master/slave and Artemis primary/backup pairs, and PostgreSQL, from services/, judged from outside.

Each fixture starts its services through the Python API (``services.start`` is idempotent) and
stops at the end only what it started. Which broker serves is seen with a raw STOMP CONNECT on
each port; what survived a failover is counted and compared body by body with what was sent.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest

import services
from services import postgresql
from tests.integration import broker_stats as bs
from tests.integration.reference_client import Inbox, connect

N = 200  # persistent messages per test
FAILOVER_LIMIT_S = 30.0  # a slave retries the lock every 0.5 s (shared) or 3 s (JDBC); an Artemis backup is told


def serves_stomp(port: int) -> bool:
    """A raw STOMP 1.2 CONNECT answered with CONNECTED (not the services' own probe)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2.0) as sock:
            sock.sendall(b"CONNECT\naccept-version:1.2\nhost:/\n\n\0")
            return sock.recv(4096).lstrip(b"\n").startswith(b"CONNECTED")
    except OSError:
        return False


def stomp_port(name: str) -> int:
    return services.ports(name)["stomp"]


def serving(names: tuple[str, ...]) -> list[str]:
    return [name for name in names if serves_stomp(stomp_port(name))]


def anycast(names: tuple[str, ...], command: str) -> dict[str, str]:
    """Artemis makes an unknown /queue/ address MULTICAST unless told (its messages would go nowhere)."""
    if not names[0].startswith("artemis"):
        return {}
    return {"destination-type" if command == "SEND" else "subscription-type": "ANYCAST"}


def send_confirmed(port: int, queue: str, bodies: list[str], routing: dict[str, str]) -> None:
    """Persistent messages, each with a RECEIPT: the broker has stored every one on return."""
    inbox = Inbox()
    conn = connect(port, inbox)
    for n, body in enumerate(bodies):
        conn.send(queue, body, headers={"persistent": "true", **routing}, receipt=f"r{n}")
    assert bs.wait_for(lambda: len(inbox.receipts) == len(bodies), 30), f"{len(inbox.receipts)}/{len(bodies)} receipts"
    conn.disconnect()


def receive(port: int, queue: str, count: int, routing: dict[str, str]) -> list[str]:
    inbox = Inbox()
    conn = connect(port, inbox)
    conn.subscribe(queue, id="1", ack="auto", headers=routing)
    bs.wait_for(lambda: len(inbox) >= count, 30)
    conn.disconnect()
    return [frame.body for frame in inbox.frames]


@contextlib.contextmanager
def running(*names: str) -> Iterator[None]:
    """``names`` started in order; on the way out, the ones this call started are stopped."""
    started: list[str] = []
    try:
        for name in names:
            if services.start(name):
                started.append(name)
        yield
    finally:
        for name in reversed(started):
            services.stop(name)


@pytest.fixture(scope="module")
def database() -> Iterator[None]:
    with running("postgresql"):
        yield


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("shared", marks=pytest.mark.cluster),
        pytest.param("jdbc", marks=[pytest.mark.cluster, pytest.mark.postgresql]),
        pytest.param("artemis-shared", marks=[pytest.mark.cluster, pytest.mark.artemis]),
        pytest.param("artemis-replicated", marks=[pytest.mark.cluster, pytest.mark.artemis]),
    ],
)
def pair(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """Both brokers of a pair, the first started first (it becomes the master of a free store)."""
    if request.param == "jdbc":
        request.getfixturevalue("database")
    names = services.PAIRS[request.param]
    with running(*names):
        yield names


def test_failover_keeps_every_persistent_message(pair: tuple[str, str]) -> None:
    assert len(serving(pair)) == 1, f"expected one master: {services.status()}"
    master = serving(pair)[0]
    assert services.master_of(pair) == master
    slave = next(name for name in pair if name != master)
    assert services.is_running(slave), "the slave's process runs and waits for the lock"

    queue = f"/queue/mqusers.test.{uuid.uuid4().hex[:10]}"
    sent = [f"{master}-{n}" for n in range(N)]
    send_confirmed(stomp_port(master), queue, sent, anycast(pair, "SEND"))

    began = time.monotonic()
    assert services.stop(master)
    deadline = began + FAILOVER_LIMIT_S
    while not serves_stomp(stomp_port(slave)):
        assert time.monotonic() < deadline, f"{slave} did not take over within {FAILOVER_LIMIT_S} s"
        time.sleep(0.05)
    print(f"\n{pair}: {slave} serves STOMP {time.monotonic() - began:.2f} s after `stop {master}` was called")
    assert serving(pair) == [slave]

    received = receive(stomp_port(slave), queue, N, anycast(pair, "SUBSCRIBE"))
    assert len(received) == N and sorted(received) == sorted(sent)

    assert services.start(master)
    assert serving(pair) == [slave], "the restarted broker waits as the slave"
    assert services.master_of(pair) == slave and services.is_running(master)


# ------------------------------------------------------------------ PostgreSQL


def psql(password: str, sql: str) -> subprocess.CompletedProcess[str]:
    """The client itself, not the service's helper: a password login over TCP."""
    port = services.ports("postgresql")["postgres"]
    argv = ["psql", "-h", "127.0.0.1", "-p", str(port), "-U", postgresql.ROLE]
    env = {**os.environ, "PGPASSWORD": password, "PGCONNECT_TIMEOUT": "5"}
    return subprocess.run(
        [*argv, "-d", postgresql.DATABASE, "-XtAc", sql], env=env, capture_output=True, text=True, timeout=30
    )


@pytest.mark.postgresql
def test_postgresql_takes_a_password_login_and_refuses_a_wrong_one(database: None) -> None:
    login = psql(postgresql.PASSWORD, "SELECT current_user || ' ' || current_database()")
    assert login.returncode == 0 and login.stdout.strip() == "activemq activemq", login.stderr
    refused = psql("not-the-password", "SELECT 1")
    assert refused.returncode != 0 and "password authentication failed" in refused.stderr


@pytest.mark.postgresql
def test_activemq_tables_exist_once_a_jdbc_broker_started(database: None) -> None:
    names = services.PAIRS["jdbc"]
    with running(*names):
        tables = psql(postgresql.PASSWORD, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        assert {"activemq_msgs", "activemq_acks", "activemq_lock"} <= set(tables.stdout.split())
        holder = psql(postgresql.PASSWORD, "SELECT broker_name FROM activemq_lock WHERE id = 1").stdout.strip()
        assert holder == services.master_of(names)
