"""The machine's limits: open files under a lowered ``ulimit -n``, the web UI's address, a TLS name mismatch."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import requests

from tests.integration.broker_stats import wait_for
from tests.integration.brokers import started
from tests.integration.locust_runs import LOCUSTFILES, ROOT, LocustRun, free_port, locust_command
from tests.integration.web_ui import answers

pytestmark = pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs util-linux's prlimit")
TESTS_LOCUSTFILES = Path(__file__).parent / "locustfiles"


def limited(nofile: str, locustfile: str, *args: str, users: int, seconds: float, tmp_path: Path,
            env: dict[str, str] | None = None) -> LocustRun:  # fmt: skip
    """``locust`` run under ``prlimit --nofile=SOFT:HARD``; its result once the first process (the master) ends.

    Workers forked by ``--processes`` are in its process group, killed then: a master that refuses a run
    leaves them waiting for it (Locust's own behaviour, as for any refusal before load).
    """
    report = tmp_path / f"report-{uuid.uuid4().hex[:6]}.json"
    log = tmp_path / f"locust-{uuid.uuid4().hex[:6]}.log"
    host = started("activemq").url  # MQUSERS_PORT_OFFSET applied
    command = [
        "prlimit", f"--nofile={nofile}",
        *locust_command(locustfile, host, *args, users=users, seconds=seconds, report=report),
    ]  # fmt: skip
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
                                   env={**os.environ, **(env or {})}, start_new_session=True)  # fmt: skip
        try:
            code = process.wait(timeout=seconds + 90)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    document = json.loads(report.read_text()) if report.exists() else {}
    return LocustRun(code, log.read_text(), document)


@pytest.mark.activemq
@pytest.mark.alone  # 400 users connect at once and a paced producer must finish before -t
def test_a_soft_limit_below_the_users_needs_is_raised_when_the_hard_one_allows(destination, tmp_path: Path) -> None:
    broker = started("activemq")
    queue = destination("queue")
    run = limited(
        "256:2048", "put_get.py", "--mq-consumers", "399", "--mq-destination", queue, "--mq-messages", "200",
        "--mq-rate", "100", users=400, seconds=6, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    assert "mqusers: raised the open-file limit (ulimit -n) from 256 to 2,048 for 400 users" in run.output
    # Every User connected (Locust alone could not raise it: its 10,000 is above the hard limit).
    connect = run.operation(f"connect {started('activemq').url}")
    assert (connect["count"], connect["errors"]) == (400, 0)
    assert run.operation(f"subscribe {queue}")["count"] == 399
    assert (run.row(queue)["sent"], run.row(queue)["received"]) == (200, 200)
    assert broker.counters(queue)["accepted"] == 200


@pytest.mark.activemq
def test_a_hard_limit_too_low_refuses_the_run_before_load(destination, tmp_path: Path) -> None:
    started("activemq")
    queue = destination("queue")
    run = limited("256:256", "put_get.py", "--mq-consumers", "399", "--mq-destination", queue,
                  users=400, seconds=5, tmp_path=tmp_path)  # fmt: skip
    assert run.code == 2, run.output[-3000:]
    last = run.output.strip().splitlines()[-1]
    assert last.startswith("mqusers: 400 users need about ") and "ulimit -n allows 256 (hard limit 256)" in last
    assert "Ramping" not in run.output and run.report == {}
    # With --processes the need is each worker's share: 200 users per process still do not fit.
    port = str(free_port())  # the forked workers connect to --master-port: never another run's master
    split = limited("256:256", "put_get.py", "--mq-consumers", "399", "--mq-destination", queue, "--processes", "2",
                    "--master-bind-port", port, "--master-port", port, users=400, seconds=5,
                    tmp_path=tmp_path)  # fmt: skip
    assert split.code == 2, split.output[-3000:]
    assert "mqusers: 200 users per process need about " in split.output and "Ramping" not in split.output


@pytest.mark.activemq
def test_running_out_mid_run_fails_connects_with_that_cause_and_ends_by_time(destination, tmp_path: Path) -> None:
    """A User holding 200 files (counted as one by the check) leaves the consumers too few: the run goes on
    to -t past Locust's 10 s CPU reading, whose EMFILE used to kill it with a traceback, "interrupted"."""
    started("activemq")
    queue = destination("queue")
    run = limited(
        "300:300", str(TESTS_LOCUSTFILES / "file_hog.py"), "--mq-destination", queue, users=121, seconds=13,
        tmp_path=tmp_path, env={"MQUSERS_TEST_HOG_FILES": "200"},
    )  # fmt: skip
    assert run.report, run.output[-3000:]
    assert "Traceback" not in run.output
    assert run.report["ended_by"] == "time"
    # Failures (Locust's 1), and consumers only that drained nothing from their queue: the gate's 3 wins.
    assert run.code == 3 and "gate failed: nothing was received" in run.output, run.output[-3000:]
    connect = run.operation(f"connect {started('activemq').url}")
    # The one failure kind: every failed operation is a connect, and each for want of a file descriptor.
    assert {op["name"] for op in run.report["operations"] if op["errors"]} == {connect["name"]}
    assert f'{connect["errors"]} STOMP connect {started("activemq").url}: MqError("cannot reach the broker' in (
        " ".join(run.output.split())
    )
    assert "out of file descriptors (EMFILE)" in run.output
    note = f"the generator ran out of file descriptors: {connect['errors']:,} operations failed (EMFILE)"
    assert any(line.startswith(note) for line in run.report["notes"]), run.report["notes"]
    # Some consumers got a file, not all 120: 300 files less the hog's 200 and Locust's own.
    subscribed = run.operation(f"subscribe {queue}")["count"]
    assert 0 < subscribed < 100


def non_loopback_address() -> str | None:
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family == socket.AF_INET and not address.address.startswith("127."):
                return str(address.address)
    return None


@contextlib.contextmanager
def web_ui(*extra: str, nofile: str = "1024:1024") -> Iterator[tuple[int, subprocess.Popen[str]]]:
    """Locust's web UI on a free port, ``extra`` on its command line: (port, process)."""
    broker = started("activemq")
    port = free_port()
    command = ["prlimit", f"--nofile={nofile}", sys.executable, "-m", "locust", "-f", str(LOCUSTFILES / "put_get.py"),
               "--host", broker.url, "--web-port", str(port), *extra]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    try:
        assert wait_for(lambda: answers(port), timeout=30), "web UI did not come up"
        yield port, process
    finally:
        process.terminate()
        process.wait(timeout=30)


def reachable(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=2):
            return True
    except OSError:
        return False


def bound_addresses(pid: int, port: int) -> set[str]:
    """Where ``pid`` listens on ``port`` (``ss -Hltnp``)."""
    lines = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, check=True).stdout.splitlines()
    return {
        line.split()[3].rsplit(":", 1)[0]
        for line in lines
        if f"pid={pid}," in line and line.split()[3].endswith(f":{port}")
    }


@pytest.mark.activemq
def test_the_web_ui_listens_on_loopback_unless_told_otherwise() -> None:
    outside = non_loopback_address()
    with web_ui() as (port, process):
        assert bound_addresses(process.pid, port) == {"127.0.0.1"}
        if outside:
            assert not reachable(outside, port)
    if outside:  # the control: asked for every interface, it is reachable there
        with web_ui("--web-host", "0.0.0.0") as (port, process):
            assert bound_addresses(process.pid, port) == {"0.0.0.0"}
            assert reachable(outside, port)


@pytest.mark.activemq
def test_the_web_ui_refuses_a_start_the_open_file_limit_cannot_hold(destination) -> None:
    with web_ui(nofile="256:256") as (port, _):
        form = {"user_count": "400", "spawn_rate": "400", "host": started("activemq").url,
                "mq_destination": destination("queue")}  # fmt: skip
        refused = requests.post(f"http://127.0.0.1:{port}/swarm", data=form, timeout=10).json()
        assert not refused["success"]
        assert refused["message"].startswith("mqusers: 400 users need about ")
        assert "ulimit -n allows 256 (hard limit 256)" in refused["message"]
        stats = requests.get(f"http://127.0.0.1:{port}/stats/requests", timeout=5).json()["stats"]
        assert [entry["name"] for entry in stats] == ["Aggregated"]  # no User connected


@contextlib.contextmanager
def tls_server(tmp_path: Path, name: str) -> Iterator[tuple[int, Path]]:
    """A TLS listener with a self-signed certificate for ``name`` only: (port, the certificate)."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
         "-days", "1", "-subj", f"/CN={name}", "-addext", f"subjectAltName=DNS:{name}"],
        check=True, capture_output=True,
    )  # fmt: skip
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            connection.settimeout(5)
            with contextlib.suppress(OSError), context.wrap_socket(connection, server_side=True):
                pass  # the client hangs up in the handshake (a name it does not accept) or after it

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], cert
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make a certificate")
def test_a_tls_certificate_for_another_name_says_so(tmp_path: Path) -> None:
    with tls_server(tmp_path, "broker.example") as (port, cert):
        url = f"stomp+ssl://127.0.0.1:{port}"
        report = tmp_path / "report.json"
        command = locust_command("put_get.py", url, "--mq-ca-file", str(cert), users=2, seconds=3, report=report)
        run = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert run.returncode == 2, run.stdout + run.stderr
    assert (run.stdout + run.stderr).strip().splitlines()[-1] == (
        f"mqusers: cannot reach the broker at {url} (TLS: the certificate is for broker.example, not 127.0.0.1)"
    )
