"""``python -m services`` as the Makefile uses it: report what a start started, print a shifted port."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.locust_runs import ROOT


def services_cli(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "services", *argv],
        capture_output=True, text=True, timeout=180, cwd=ROOT, env={**os.environ, **env},
    )  # fmt: skip


def test_port_prints_the_port_with_the_offset_applied() -> None:
    assert services_cli("port", "activemq", "stomp", MQUSERS_PORT_OFFSET="1000").stdout == "62613\n"
    unknown = services_cli("port", "rabbitmq", "stom")
    assert (unknown.returncode, unknown.stdout) == (2, "")
    assert unknown.stderr == "error: rabbitmq has no port 'stom' (known: amqp, stomp, management, dist, web_stomp)\n"


@pytest.mark.activemq
def test_start_records_only_what_it_started(tmp_path: Path) -> None:
    # An ActiveMQ of its own (own folder, shifted ports), so the shared brokers are never touched.
    own = {"MQUSERS_SERVICES_DIR": str(tmp_path / "services"), "MQUSERS_PORT_OFFSET": "1700"}
    first, second = tmp_path / "first", tmp_path / "second"
    try:
        assert services_cli("start", "--started", str(first), "activemq", **own).returncode == 0
        assert services_cli("start", "--started", str(second), "activemq", **own).returncode == 0
        pid = services_cli("pid", "activemq", **own)
        assert pid.returncode == 0 and pid.stdout.strip().isdigit()
        restarted = services_cli("fail-over", "activemq", **own)  # one broker: a restart
        assert restarted.returncode == 0 and restarted.stdout.startswith("activemq: stopped"), restarted
        assert services_cli("pid", "activemq", **own).stdout != pid.stdout
    finally:
        stopped = services_cli("stop", "activemq", **own)
    assert (first.read_text(), second.read_text()) == ("activemq\n", "")
    assert stopped.stdout.startswith("activemq: stopped")
    gone = services_cli("pid", "activemq", **own)
    assert (gone.returncode, gone.stderr) == (1, "error: activemq is not running\n")
