"""Shared by the benchmark parent and its child processes. Imports nothing that patches sockets."""

from __future__ import annotations

import json
import os
import re
import resource
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

RESULT_PREFIX = "BENCH-RESULT "
RANGE = "\u2013"  # en dash, as in "median [min–max]"  # noqa: RUF003

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)(i?)[bB]?\s*$")


def cache_bytecode() -> None:
    """Every child compiles this checkout's modules once, into a folder of its own, as an installed package's
    are compiled once at install: with PYTHONDONTWRITEBYTECODE (set in some images) each child would compile
    mqusers again, ~0.2 CPU-s of start-up that no user's installed run pays."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ.setdefault(
        "PYTHONPYCACHEPREFIX", os.path.join(tempfile.gettempdir(), f"mqusers-bench-pycache-{os.getuid()}")
    )


class BenchError(Exception):
    """A benchmark could not complete; the message is one readable line."""


def spread(values: Sequence[float], fmt: str = "{:,.0f}") -> str:
    """median [min–max]"""  # noqa: RUF002  (the en dash is the report's range sign)
    low, high = fmt.format(min(values)), fmt.format(max(values))
    return f"{fmt.format(statistics.median(values))} [{low}{RANGE}{high}]"


def parse_size(text: str) -> int:
    """``100``, ``1KB``, ``10KB``, ``1MiB`` -> bytes (K and KiB both mean 1024, as in ``--mq-size``)."""
    match = _SIZE_RE.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a size; use e.g. 100, 1KB, 20KB")
    size = int(float(match.group(1)) * {"": 1, "K": 1024, "M": 1024 * 1024}[match.group(2).upper()])
    if size < 1:
        raise ValueError(f"{text!r} is smaller than one byte")
    return size


def parse_host(url: str) -> tuple[str, int]:
    """``stomp://HOST:PORT`` -> (HOST, PORT); one plain broker only."""
    match = re.match(r"^(?:stomp://)?([^:/]+):(\d+)/?$", url.strip())
    if not match:
        raise ValueError(f"{url!r} is not stomp://HOST:PORT")
    return match.group(1), int(match.group(2))


def check_broker(url: str) -> None:
    """One STOMP CONNECT/CONNECTED exchange, or a :class:`BenchError` saying why not."""
    host, port = parse_host(url)
    try:
        with socket.create_connection((host, port), timeout=5) as sock:
            sock.sendall(f"CONNECT\naccept-version:1.2\nhost:{host}\n\n\x00".encode())
            reply = sock.recv(4096).decode(errors="replace")
            sock.sendall(b"DISCONNECT\n\n\x00")
    except OSError as error:
        hint = "start it: python -m services start activemq"
        raise BenchError(f"broker not reachable at {url}: {error} ({hint})") from None
    if not reply.startswith("CONNECTED"):
        raise BenchError(f"broker at {url} did not accept a STOMP CONNECT: {reply.splitlines()[:1]}")


@dataclass
class Meter:
    """Wall time and this process's CPU (user+sys, all threads) over one measured phase."""

    wall0: float = 0.0
    cpu0: float = 0.0
    sys0: float = 0.0
    wall: float = 0.0
    cpu: float = 0.0
    sys_cpu: float = 0.0

    def start(self) -> None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        self.cpu0, self.sys0 = usage.ru_utime + usage.ru_stime, usage.ru_stime
        self.wall0 = time.perf_counter()

    def stop(self) -> None:
        self.wall = time.perf_counter() - self.wall0
        usage = resource.getrusage(resource.RUSAGE_SELF)
        self.cpu = usage.ru_utime + usage.ru_stime - self.cpu0
        self.sys_cpu = usage.ru_stime - self.sys0


class Deadline:
    def __init__(self, seconds: float, what: str):
        self.at = time.monotonic() + seconds
        self.seconds = seconds
        self.what = what

    def left(self) -> float:
        return self.at - time.monotonic()

    def check(self, detail: str = "") -> None:
        if time.monotonic() > self.at:
            raise BenchError(f"{self.what}: deadline of {self.seconds:g}s hit{'; ' + detail if detail else ''}")


def throughput_result(kind: str, messages: int, meter: Meter, **extra: Any) -> dict[str, Any]:
    return {
        "kind": kind,
        "messages": messages,
        "wall_s": meter.wall,
        "cpu_s": meter.cpu,
        "sys_s": meter.sys_cpu,
        "msg_per_s": messages / meter.wall if meter.wall > 0 else 0.0,
        "msg_per_cpu_s": messages / meter.cpu if meter.cpu > 0 else float("inf"),
        **extra,
    }


def emit(result: dict[str, Any]) -> None:
    """The child's answer to the parent: one line on stdout."""
    sys.stdout.write(RESULT_PREFIX + json.dumps(result) + "\n")
    sys.stdout.flush()


def child_main(run: Any) -> None:
    """Run ``run()`` and emit its result; a :class:`BenchError` exits 3 with one line on stderr."""
    try:
        emit(run())
    except BenchError as error:
        sys.stderr.write(f"{error}\n")
        sys.stderr.flush()
        sys.exit(3)
