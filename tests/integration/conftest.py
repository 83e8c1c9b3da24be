"""Real brokers for the integration tests, started once per session by the project's scripts.

Each broker test is parametrized over the brokers and marked with the broker's name, so
``pytest -m activemq`` runs one of them. The fixture starts the service if it is not running
(``services.start`` is idempotent) and leaves it running for the next test.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import stomp

import services
from tests.integration import broker_stats

ROOT = Path(__file__).resolve().parents[2]
LOCUSTFILES = ROOT / "locustfiles"


@dataclass(frozen=True)
class Broker:
    name: str
    service: str
    port: int
    management_port: int = 0

    @property
    def url(self) -> str:
        return f"stomp://127.0.0.1:{self.port}"

    def counters(self, destination: str) -> dict[str, int]:
        """The broker's own counts for a destination: ``accepted`` and ``delivered``."""
        if self.name.startswith("activemq"):
            stats = broker_stats.activemq_destination_stats(self.port, destination)
            return {"accepted": stats["enqueueCount"], "delivered": stats["dispatchCount"], "held": stats["size"]}
        kind, name = destination.split("/")[1:3]
        if kind == "queue":
            stats = broker_stats.rabbitmq_queue_stats(self.management_port, name)
            delivered = stats["deliver_get"]
            return {"accepted": stats["publish"], "delivered": delivered, "held": stats["messages"]}
        stats = broker_stats.rabbitmq_exchange_stats(self.management_port)
        return {"accepted": stats["publish_in"], "delivered": stats["publish_out"], "held": 0}


BROKERS = {
    "activemq": Broker("activemq", "activemq", services.PORTS["activemq"]["stomp"]),
    "activemq-persistent": Broker(
        "activemq-persistent", "activemq-persistent", services.PORTS["activemq-persistent"]["stomp"]
    ),
    "activemq-stress": Broker("activemq-stress", "activemq-stress", services.PORTS["activemq-stress"]["stomp"]),
    "rabbitmq": Broker(
        "rabbitmq", "rabbitmq", services.PORTS["rabbitmq"]["stomp"], services.PORTS["rabbitmq"]["management"]
    ),
}


def broker_params(*names: str) -> list[Any]:
    return [pytest.param(name, marks=getattr(pytest.mark, name.split("-")[0]), id=name) for name in names]


def started(name: str) -> Broker:
    broker = BROKERS[name]
    services.start(broker.service)
    return broker


@pytest.fixture(params=broker_params("activemq", "rabbitmq"))
def broker(request: pytest.FixtureRequest) -> Broker:
    """Each shared-behaviour test runs once per broker."""
    return started(request.param)


def free_port() -> int:
    """A loopback port nobody listens on now, for a process that needs its port number up front."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def destination() -> Callable[[str], str]:
    """A fresh destination per call, so no test sees another's messages."""

    def make(kind: str = "queue") -> str:
        return f"/{kind}/mqusers.test.{uuid.uuid4().hex[:10]}"

    return make


@dataclass
class LocustRun:
    code: int
    output: str
    report: dict[str, Any]

    def row(self, destination: str) -> dict[str, Any]:
        rows = [r for r in self.report.get("destinations", []) if r["destination"] == destination]
        assert rows, f"no summary row for {destination} in:\n{self.output[-3000:]}"
        return rows[0]

    def operation(self, name: str) -> dict[str, Any]:
        rows = [r for r in self.report.get("operations", []) if r["name"] == name]
        assert rows, f"no operation {name} in:\n{self.output[-3000:]}"
        return rows[0]

    def locust_count(self, operation: str, destination: str) -> int:
        """The request count Locust's own final table printed for ``<operation> <destination>``."""
        final = self.output[self.output.rindex("Shutting down (exit code") :]
        found = re.search(rf"^STOMP +{operation} {re.escape(destination)} +(\d+) ", final, re.MULTILINE)
        assert found, final
        return int(found.group(1))


def locust_command(locustfile: str, host: str, *args: str, users: int, seconds: float, report: Path) -> list[str]:
    return [
        sys.executable, "-m", "locust", "-f", str(LOCUSTFILES / locustfile), "--host", host, "--headless",
        "-u", str(users), "-r", str(users), "-t", f"{seconds}s", "--only-summary", "--mq-report-json", str(report),
        *args,
    ]  # fmt: skip


def run_locust(
    locustfile: str,
    host: str,
    *args: str,
    users: int = 2,
    seconds: float = 3,
    env: dict[str, str] | None = None,
    tmp_path: Path,
) -> LocustRun:
    """Run ``locust -f locustfiles/<locustfile> --headless`` to completion and read its JSON report."""
    report = tmp_path / f"report-{uuid.uuid4().hex[:6]}.json"
    command = locust_command(locustfile, host, *args, users=users, seconds=seconds, report=report)
    process = subprocess.run(
        command, capture_output=True, text=True, timeout=seconds + 60, env={**os.environ, **(env or {})}, cwd=ROOT
    )
    output = process.stdout + process.stderr
    document = json.loads(report.read_text()) if report.exists() else {}
    return LocustRun(process.returncode, output, document)


@dataclass
class RunningLocust:
    """A locust run in the background, for tests that act on it (signals, a frozen broker) mid-run."""

    process: subprocess.Popen[str]
    report: Path
    #: In a process group of its own (--processes workers included): signal and kill the group.
    group: bool = False

    def signal(self, signum: int) -> None:
        if self.group:
            os.killpg(self.process.pid, signum)
        else:
            self.process.send_signal(signum)

    def finish(self, timeout: float) -> LocustRun:
        """Wait at most ``timeout`` s for the run to end by itself; kill it (and fail) if it does not."""
        try:
            output, _ = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            output, _ = self.process.communicate()
            raise AssertionError(f"locust did not end within {timeout} s:\n{output[-3000:]}") from None
        document = json.loads(self.report.read_text()) if self.report.exists() else {}
        return LocustRun(self.process.returncode, output, document)


def start_locust(
    locustfile: str, host: str, *args: str, users: int = 2, seconds: float = 3, tmp_path: Path, group: bool = False
) -> RunningLocust:
    """``group``: in a process group of its own, which a test can signal as a terminal's Ctrl-C does."""
    report = tmp_path / f"report-{uuid.uuid4().hex[:6]}.json"
    command = locust_command(locustfile, host, *args, users=users, seconds=seconds, report=report)
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, start_new_session=group
    )
    return RunningLocust(process, report, group)


def publish_outside(broker: Broker, destination: str, count: int, *, stamped: bool) -> None:
    """Persistent messages from plain stomp.py, not mqusers: an independent producer.

    ``stamped`` gives them mqusers headers of another run ("outside"); otherwise they carry none.
    The last one waits for its RECEIPT, so the broker holds them all on return.
    """
    connection = stomp.Connection12([("127.0.0.1", broker.port)], vhost="/")
    connection.connect(wait=True)  # both local brokers let an anonymous loopback client in
    for seq in range(count):
        body = b"x" * 100 if stamped else f"foreign {seq}".encode()
        headers = {"persistent": "true"}
        if stamped:
            headers.update({"mq-run": "outside", "mq-producer": "outside", "mq-seq": str(seq),
                            "mq-sent-ns": str(time.time_ns()), "mq-size": "100",
                            "mq-crc32": str(zlib.crc32(body))})  # fmt: skip
        connection.send(destination, body, headers=headers, receipt=f"r{seq}" if seq == count - 1 else None)
    connection.disconnect(receipt="bye")
