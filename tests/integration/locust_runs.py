"""Locust run as a user types it, from this checkout: ``locust -f locustfiles/... --headless``, its JSON report.

``run_locust`` runs one to completion; ``start_locust`` in the background, for a test that acts on it
mid-run (signals, a frozen broker); ``free_port`` for a process that needs its port number up front.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
LOCUSTFILES = ROOT / "locustfiles"


def free_port() -> int:
    """A loopback port nobody listens on now, for a process that needs its port number up front."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


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


def steady_rate(report: dict[str, Any], destination: str) -> float:
    """Receives at ``destination`` per second over the run's intervals at or after ``measured_from`` (its
    --mq-warmup): the run JSON's ``"intervals"`` read as their format defines a throughput."""
    intervals = report["intervals"]
    rows = [r for r in intervals["operations"][f"receive {destination}"] if r[0] >= intervals["measured_from"]]
    return float(sum(r[2] for r in rows) / sum(r[1] for r in rows))


def locust_command(locustfile: str, host: str, *args: str, users: int, seconds: float, report: Path) -> list[str]:
    if {"--processes", "--master"} & set(args) and "--master-bind-port" not in args:
        # A port of its own, not Locust's default 5557: runs side by side (make test's parallel phase) would
        # otherwise share a master port, or their workers join another run's master.
        port = str(free_port())
        args = (*args, "--master-bind-port", port, "--master-port", port)
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
    locustfile: str,
    host: str,
    *args: str,
    users: int = 2,
    seconds: float = 3,
    tmp_path: Path,
    group: bool = False,
    env: dict[str, str] | None = None,
) -> RunningLocust:
    """``group``: in a process group of its own, which a test can signal as a terminal's Ctrl-C does."""
    report = tmp_path / f"report-{uuid.uuid4().hex[:6]}.json"
    command = locust_command(locustfile, host, *args, users=users, seconds=seconds, report=report)
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, start_new_session=group,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    return RunningLocust(process, report, group)


def last_line(output: str) -> str:
    return output.strip().splitlines()[-1]


def assert_refused_before_load(run: LocustRun, fragment: str) -> None:
    """Exit 2 with one ``mqusers: `` line naming ``fragment``, before any User started or a report was written."""
    assert run.code == 2, run.output[-2000:]
    assert fragment in last_line(run.output), run.output[-2000:]
    assert last_line(run.output).startswith("mqusers: ")
    assert "Traceback" not in run.output
    assert "Ramping to" not in run.output  # no User was started
    assert run.report == {}


def run_skewed(
    locustfile: str, url: str, tmp_path: Path, *args: str, users: int, skews: tuple[str, str] = ("", "")
) -> dict:  # type: ignore[type-arg]
    """A headless master and two workers on loopback, producers' broker ``url``; the master's JSON report.

    ``skews`` shifts a worker's wall clock with libfaketime (e.g. "+0.25s"): a real skewed clock.
    """
    port, report = free_port(), tmp_path / "master.json"
    locust = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILES / locustfile)]
    master = subprocess.Popen(
        [*locust, "--master", "--headless", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port),
         "--expect-workers", "2", "-u", str(users), "-r", str(users), "-t", "4s", "--host", url,
         "--only-summary", "--mq-report-json", str(report), *args],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
    )  # fmt: skip
    workers = [
        subprocess.Popen(
            [
                *(["faketime", "-f", skew] if skew else []),
                *locust,
                "--worker",
                "--master-host",
                "127.0.0.1",
                "--master-port",
                str(port),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
            env={**os.environ, "FAKETIME_DONT_FAKE_MONOTONIC": "1"},
        )
        for skew in skews
    ]
    output, _ = master.communicate(timeout=90)
    for worker in workers:
        worker.wait(timeout=30)
    assert master.returncode == 0 and report.exists(), output[-3000:]
    return json.loads(report.read_text())  # type: ignore[no-any-return]
