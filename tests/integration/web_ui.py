"""Locust's web UI served from this checkout on a free loopback port, for the web UI tests to drive."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import requests

from tests.integration.broker_stats import wait_for
from tests.integration.brokers import started
from tests.integration.locust_runs import LOCUSTFILES, ROOT, free_port


def answers(port: int) -> bool:
    """Locust's web UI on loopback ``port`` serves its page (not while it starts, nor when it is refused)."""
    try:
        return requests.get(f"http://127.0.0.1:{port}/", timeout=5).ok
    except requests.RequestException:  # refused while it starts, or its first page slow on a busy machine
        return False


@contextlib.contextmanager
def serve(locustfile: str, tmp_path: Path, *extra: str) -> Iterator[tuple[str, Any]]:
    """Locust's web UI on a free loopback port, ``extra`` on its command line: (base URL, its log file)."""
    broker = started("activemq")
    port = free_port()
    log = (tmp_path / "locust.log").open("w+")
    env = {**os.environ, "LOCUST_MQ_USER": "mqusers", "LOCUST_MQ_PASSWORD": "mqusers-local"}
    command = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILES / locustfile), "--host", broker.url,
               "--web-host", "127.0.0.1", "--web-port", str(port), *extra]  # fmt: skip
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    base = f"http://127.0.0.1:{port}"
    try:
        assert wait_for(lambda: answers(port), timeout=30), "web UI did not come up"
        yield base, log
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()
