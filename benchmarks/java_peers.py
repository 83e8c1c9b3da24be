"""The Java peers of benchmarks/peers.py: Artemis's ``perf client`` and Classic's ``producer``/``consumer``.

Each tool runs as the user would run it (its own JVM, its own defaults), bounded by a deadline
(killed there), its CPU the kernel's rusage of the reaped children over its run (user+sys of all its
threads and processes, JVM start-up included). Imports nothing that patches sockets: the parent stays a plain process.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from benchmarks.common import BenchError
from services import activemq6, artemis
from services.base import cache_dir, cache_lock, maven

POM = Path(__file__).with_name("classic-tools-pom.xml")
SHELL = "org.apache.activemq.console.command.ShellCommand"  # `bin/activemq`'s commands, without the launcher
#: The console's own log4j2 settings (INFO), to a file: every line stamped in epoch ms for the rates.
LOG4J2 = """\
rootLogger.level=INFO
rootLogger.appenderRef.file.ref=file
appender.file.type=File
appender.file.name=file
appender.file.fileName={log}
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=%d{{UNIX_MILLIS}} %m%n
"""
#: Classic's producer paces by a whole-millisecond sleep per message and thread: a 1 ms sleep in
#: each of this many threads is its nearest setting to 10,000 msg/s (a ceiling: each send adds to it).
CLASSIC_PACED_THREADS = 10


def children_cpu_s() -> float:
    """User+sys CPU of this process's reaped children so far: a tool's is the difference around its run."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Child:
    """One tool process (and its children), output to a log file, killed at its deadline."""

    def __init__(self, argv: list[str], log: Path, env: dict[str, str] | None = None):
        self.log = log
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def wait(self, until: float, what: str) -> int:
        """Its exit status by monotonic time ``until``; past that it is killed and the run is an error."""
        try:
            return self.proc.wait(timeout=max(0.0, until - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.kill()
            raise BenchError(f"{what} did not finish by its deadline and was killed (log: {self.log})") from None

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def classic_lib() -> Path:
    """activemq-console and its jars at services/activemq6's version, fetched once (Maven, strict SHA-1)."""
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()[:12]
    lib = cache_dir() / f"classic-tools-{activemq6.VERSION}-{digest}"
    if (lib / ".complete").is_file():
        return lib
    with cache_lock():
        if not (lib / ".complete").is_file():
            partial = cache_dir() / "classic-tools-partial"
            shutil.rmtree(partial, ignore_errors=True)
            argv = ["-f", str(POM), "dependency:copy-dependencies", f"-Dactivemq.version={activemq6.VERSION}"]
            maven([*argv, "-DincludeScope=runtime", f"-DoutputDirectory={partial}"], "ActiveMQ Classic's tools")
            (partial / ".complete").touch()
            shutil.rmtree(lib, ignore_errors=True)
            partial.rename(lib)
    return lib


def _wait_for_line(log: Path, pattern: str, until: float, child: Child) -> None:
    while not (log.is_file() and re.search(pattern, log.read_text(errors="replace"))):
        if child.proc.poll() is not None or time.monotonic() > until:
            raise BenchError(f"no {pattern!r} in {log}")
        time.sleep(0.05)


def run_classic(
    port: int, queue: str, messages: int, size: int, paced: bool, workdir: Path, timeout: float
) -> dict[str, Any]:
    """``consumer`` (N messages) subscribed first, then ``producer`` (non-persistent BytesMessages), OpenWire."""
    threads, sleep = (CLASSIC_PACED_THREADS, 1) if paced else (1, 0)
    per_thread = messages // threads
    total = per_thread * threads
    url, lib, until = f"tcp://127.0.0.1:{port}", classic_lib(), time.monotonic() + timeout
    children: dict[str, Child] = {}
    cpu_before = children_cpu_s()

    def start(role: str, options: list[str]) -> Child:
        config = workdir / f"{role}-log4j2.properties"
        config.write_text(LOG4J2.format(log=workdir / f"{role}.log"))
        argv = ["java", "-Xmx1g", f"-Dlog4j2.configurationFile={config}", "-cp", f"{lib}/*", SHELL, role]
        children[role] = Child(
            [*argv, "--brokerUrl", url, "--destination", f"queue://{queue}", *options], workdir / f"{role}.out"
        )
        return children[role]

    try:
        consumer = start("consumer", ["--messageCount", str(total)])
        _wait_for_line(workdir / "consumer.log", r"wait until \d+ messages", until, consumer)
        load = ["--messageCount", str(per_thread), "--messageSize", str(size), "--persistent", "false"]
        producer = start("producer", [*load, "--parallelThreads", str(threads), "--sleep", str(sleep)])
        sent, received = producer.wait(until, "classic producer"), consumer.wait(until, "classic consumer")
        cpu_s = children_cpu_s() - cpu_before
    finally:
        for child in children.values():
            child.kill()
    produced = sum(int(n) for n in re.findall(r"Produced: (\d+) messages", (workdir / "producer.log").read_text()))
    log = (workdir / "consumer.log").read_text()
    consumed = sum(int(n) for n in re.findall(r"Consumed: (\d+) messages", log))
    if sent or received or produced != total or consumed != total:
        raise BenchError(f"classic: produced {produced}, consumed {consumed} of {total} (logs in {workdir})")
    stamps = [int(t) for t in re.findall(r"^(\d+) consumer-\d+ Received ", log, flags=re.M)]
    return {
        "messages": total,
        "msg_per_s": (len(stamps) - 1) / ((stamps[-1] - stamps[0]) / 1000),
        "cpu_s": cpu_s,
        "latency_ms": None,
        "setting": f"{threads} thread(s), --sleep {sleep}",
    }


def run_artemis(
    port: int, queue: str, seconds: int, size: int, rate: int, workdir: Path, timeout: float
) -> dict[str, Any]:
    """``artemis perf client`` (core protocol, non-persistent by default): one producer, one consumer, one JVM.

    Bounded by ``--duration``, not ``--message-count``: with a count (and ``--rate``) 2.40.0 sent
    19,350 of 20,000 and then waited, never exiting (seen here); with a duration it ends by itself.
    """
    report = workdir / "artemis-perf.json"
    argv = [str(artemis.home() / "bin" / "artemis"), "perf", "client", "--url", f"tcp://127.0.0.1:{port}"]
    argv += ["--message-size", str(size), "--duration", str(seconds), "--json", str(report), "--silent"]
    argv += [*(["--rate", str(rate)] if rate else []), f"queue://{queue}"]
    cpu_before = children_cpu_s()
    child = Child(argv, workdir / "artemis-perf.out", env={**os.environ, "JAVA_ARGS": "-Xms512M -Xmx1024M"})
    try:
        status = child.wait(time.monotonic() + timeout, "artemis perf client")
    finally:
        child.kill()
    cpu_s = children_cpu_s() - cpu_before
    if status or not report.is_file():
        raise BenchError(f"artemis perf client exited {status} (log: {child.log})")
    setting = f"--rate {rate or 'unbounded'} --duration {seconds}"
    return {**artemis_figures(report.read_text(), seconds), "cpu_s": cpu_s, "setting": setting}


def artemis_figures(text: str, seconds: int) -> dict[str, Any]:
    """Count, msg/s and transfer-time percentiles (µs in the file) from ``perf client --json``'s summary."""
    summary = next(s for s in json.loads(text) if s.get("sampleType") == "summary")
    sent, received = summary["totalSent"], summary["totalReceived"]
    if summary.get("result") != "success" or received != sent or not received:
        raise BenchError(f"artemis perf client: {summary.get('result')}, {received} of {sent} sent received")
    transfer = summary["totalTransferTime"]
    return {
        "messages": received,
        "msg_per_s": received / seconds,
        "latency_ms": {"p50": transfer["50"] / 1000, "p99": transfer["99"] / 1000},
    }
