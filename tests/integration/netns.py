"""Several "hosts" on one machine: Linux network namespaces joined by a bridge, for distributed tests.

    with Network(["b", "m", "w1", "w2"]) as net:
        net.address("b")                      # 198.18.N.1 (then .2, .3, .4 in the order given)
        net.popen("m", ["locust", ...])       # runs inside the namespace, returns the Popen
        net.link("w1", up=False)              # a partition: w1's link down at the bridge (then up=True)

Layout of one run, TAG being 6 random hex digits::

    root namespace: bridge mqnTAG, address 198.18.N.254/24; veth mqnTAG-ROLE enslaved to it
    namespace mqnTAG-ROLE: lo up, eth0 (the veth's peer) with 198.18.N.(i+1)/24

The bridge has an address in the root namespace on purpose: the test process itself can reach
every host, so the readiness probes of ``services`` (``MQUSERS_BIND_HOST``) and broker_stats
connect from here without entering a namespace. The price is a route in the root namespace, so
each run takes a /24 of 198.18.0.0/15 that no address or route of the root namespace overlaps
(chosen under a lock), and parallel runs never collide on names nor addresses.

Teardown kills every process left in the run's namespaces (by PID, ``ip netns pids``), deletes
the namespaces, the veths and the bridge; on test failure too. A crashed run (even SIGKILL) is
cleaned up by the next one: each run holds an flock on /run/mqusers-netns/TAG.lock for its life,
and leftovers whose lock nobody holds are removed before anything is created.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import pytest

STATE = Path("/run/mqusers-netns")
PREFIX = "mqn"
POOL = ipaddress.IPv4Network("198.18.0.0/15")  # RFC 2544 benchmarking range
ROLE_RE = re.compile(r"^[a-z0-9]{1,4}$")  # keeps mqnTAG-ROLE within IFNAMSIZ (15 characters)
TAG_RE = re.compile(rf"^{PREFIX}([0-9a-f]{{6}})(?:-[a-z0-9]{{1,4}})?$")
PROBE_PORT = 47999
GATEWAY_HOST = 254  # the root namespace's address on the bridge

# A connectivity probe: each host answers every TCP connection with its own address.
_LISTENER = """\
import socket, sys
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind((sys.argv[1], int(sys.argv[2])))
server.listen(64)
print("listening", flush=True)
while True:
    conn, _ = server.accept()
    conn.sendall(sys.argv[1].encode())
    conn.close()
"""
# ...and each host connects to all the others, retrying until a deadline.
_CONNECTOR = """\
import json, socket, sys, time
port, deadline = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])
results = {}
for address in sys.argv[3:]:
    while True:
        try:
            with socket.create_connection((address, port), timeout=1.0) as conn:
                answer = conn.recv(64).decode()
            results[address] = "ok" if answer == address else f"answered as {answer!r}"
            break
        except OSError as error:
            if time.monotonic() >= deadline:
                results[address] = str(error)
                break
            time.sleep(0.05)
print(json.dumps(results))
"""


class NetnsError(RuntimeError):
    """Setting up, checking or tearing down the namespaces failed."""


def unavailable_reason() -> str | None:
    """Why namespace tests cannot run here, or None if they can."""
    if sys.platform != "linux":
        return "network namespaces need Linux"
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add, veth, bridge)"
    if shutil.which("ip") is None:
        return "the ip command (iproute2) is not installed"
    probe = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return f"ip netns is unavailable: {probe.stderr.strip() or probe.returncode}"
    return None


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise NetnsError(f"ip {' '.join(args)}: {result.stderr.strip() or f'exit {result.returncode}'}")
    return result


def _namespaces() -> list[str]:
    # "NAME" or "NAME (id: 3)" per line
    return [line.split()[0] for line in _ip("netns", "list").stdout.splitlines() if line.strip()]


def _links() -> list[str]:
    # "12: NAME@if2: <BROADCAST,...> ..." per line
    names = (line.split(":", 2)[1].strip() for line in _ip("-o", "link", "show").stdout.splitlines() if ":" in line)
    return [name.split("@")[0] for name in names]


def _used_networks() -> list[ipaddress.IPv4Network]:
    """Every IPv4 network the root namespace has an address in or a route to."""
    used = []
    for line in _ip("-4", "-o", "addr", "show").stdout.splitlines():
        fields = line.split()
        if "inet" in fields:
            used.append(ipaddress.IPv4Interface(fields[fields.index("inet") + 1]).network)
    for line in _ip("-4", "route", "show", "table", "all").stdout.splitlines():
        fields = line.split()
        destination = fields[1] if fields and fields[0] in ("local", "broadcast", "unicast") else fields[0]
        with contextlib.suppress(ValueError, IndexError):
            if destination != "default":
                used.append(ipaddress.IPv4Network(destination, strict=False))
    return used


def _free_subnet() -> ipaddress.IPv4Network:
    used = _used_networks()
    for candidate in POOL.subnets(new_prefix=24):
        if not any(candidate.overlaps(network) for network in used):
            return candidate
    raise NetnsError(f"no free /24 left in {POOL} in the root namespace")


@contextlib.contextmanager
def _global_lock() -> Iterator[None]:
    """Serialise leftover cleanup and subnet choice between parallel runs."""
    STATE.mkdir(parents=True, exist_ok=True)
    with open(STATE / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _lock_is_free(path: Path) -> bool:
    """True if no live process holds the run lock at ``path`` (or it does not exist)."""
    try:
        handle = open(path, "a")  # noqa: SIM115 - closed right below
    except FileNotFoundError:
        return True
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


def _kill_inside(namespace: str, grace: float) -> None:
    """SIGTERM, then SIGKILL, every process of ``namespace`` (all started inside it by a harness)."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        pids = [int(pid) for pid in _ip("netns", "pids", namespace, check=False).stdout.split()]
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and _ip("netns", "pids", namespace, check=False).stdout.split():
            _reap(pids)
            time.sleep(0.05)


def _reap(pids: list[int]) -> None:
    """Collect those of ``pids`` that are our exited children (a daemon the services API spawned)."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def _destroy(tag: str, grace: float = 5.0) -> list[str]:
    """Remove every namespace and link of run ``tag``; return what could not be removed."""
    mine = re.compile(rf"^{PREFIX}{tag}(?:-|$)")
    for namespace in filter(mine.match, _namespaces()):
        _kill_inside(namespace, grace)
        _ip("netns", "del", namespace, check=False)
    for link in filter(mine.match, _links()):
        _ip("link", "del", link, check=False)  # veths may already be gone with their peer's namespace
    return [*filter(mine.match, _namespaces()), *filter(mine.match, _links())]


def cleanup_leftovers() -> list[str]:
    """Remove what crashed runs left behind (namespaces, links, lock files); return their tags.

    A run is a leftover when no live process holds its lock. Call with the global lock held.
    """
    tags = {m.group(1) for name in [*_namespaces(), *_links()] if (m := TAG_RE.match(name))}
    tags |= {path.stem for path in STATE.glob("*.lock") if re.fullmatch(r"[0-9a-f]{6}", path.stem)}
    removed = []
    for tag in sorted(tags):
        lock = STATE / f"{tag}.lock"
        if not _lock_is_free(lock):
            continue  # a parallel run, alive
        _destroy(tag, grace=1.0)
        lock.unlink(missing_ok=True)
        removed.append(tag)
    return removed


@dataclass(frozen=True)
class Host:
    role: str
    netns: str  # ip netns name
    address: str
    veth: str  # root-namespace end of its link


class Network:
    """N namespaces on one bridge; a context manager that always tears down what it built."""

    def __init__(self, roles: Sequence[str], subnet: str | None = None, check_timeout: float = 10.0):
        bad = [role for role in roles if not ROLE_RE.match(role)]
        if bad or len(set(roles)) != len(roles) or not roles:
            raise ValueError(f"roles must be 1-4 distinct characters [a-z0-9], got {list(roles)}")
        if len(roles) >= GATEWAY_HOST:
            raise ValueError("at most 253 hosts per network")
        self.roles = list(roles)
        self.tag = secrets.token_hex(3)
        self.bridge = f"{PREFIX}{self.tag}"
        self._wanted_subnet = ipaddress.IPv4Network(subnet) if subnet else None
        self.subnet: ipaddress.IPv4Network | None = None
        self.hosts: dict[str, Host] = {}
        self.removed_leftovers: list[str] = []
        self.check_timeout = check_timeout
        self._lock: IO[str] | None = None
        self._procs: list[subprocess.Popen[Any]] = []

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> Network:
        return self.start()

    def start(self) -> Network:
        """Clean up leftovers, build the network, check it; on any failure tear down and raise."""
        try:
            with _global_lock():
                self.removed_leftovers = cleanup_leftovers()
                self._lock = open(STATE / f"{self.tag}.lock", "w")  # noqa: SIM115 - held (flocked) until close()
                fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self.subnet = self._wanted_subnet or _free_subnet()
                self._build(self.subnet)
            self.check_connectivity()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def _build(self, subnet: ipaddress.IPv4Network) -> None:
        prefix = subnet.prefixlen
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{subnet[GATEWAY_HOST]}/{prefix}", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for index, role in enumerate(self.roles, start=1):
            host = Host(role, f"{PREFIX}{self.tag}-{role}", str(subnet[index]), f"{PREFIX}{self.tag}-{role}")
            self.hosts[role] = host
            _ip("netns", "add", host.netns)
            _ip("link", "add", host.veth, "type", "veth", "peer", "name", "eth0", "netns", host.netns)
            _ip("link", "set", host.veth, "master", self.bridge, "up")
            _ip("-n", host.netns, "addr", "add", f"{host.address}/{prefix}", "dev", "eth0")
            _ip("-n", host.netns, "link", "set", "lo", "up")
            _ip("-n", host.netns, "link", "set", "eth0", "up")

    def close(self) -> None:
        """Stop our processes, kill anything else left inside, delete namespaces, links and lock."""
        for proc in self._procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self._procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        self._procs.clear()
        remaining = _destroy(self.tag)
        if self._lock is not None:
            (STATE / f"{self.tag}.lock").unlink(missing_ok=True)
            self._lock.close()  # releases the flock
            self._lock = None
        if remaining:
            raise NetnsError(f"could not remove {remaining}")

    # -- use ---------------------------------------------------------------------------------

    def name(self, role: str) -> str:
        """The ``ip netns`` name of ``role``'s namespace."""
        return self.hosts[role].netns

    def address(self, role: str) -> str:
        return self.hosts[role].address

    def command(self, role: str, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside ``role``'s namespace (``ip netns exec`` execs it: same PID)."""
        return ["ip", "netns", "exec", self.name(role), *argv]

    def popen(self, role: str, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """Start ``argv`` inside ``role``'s namespace; stopped at teardown if still running."""
        proc: subprocess.Popen[Any] = subprocess.Popen(self.command(role, argv), **kwargs)
        self._procs.append(proc)
        return proc

    def link(self, role: str, up: bool) -> None:
        """Take ``role``'s link down (or back up) at the bridge, as a pulled cable would.

        Its root-namespace end goes down, so the namespace keeps its address and route but its eth0
        loses carrier: packets either way are dropped silently, no error reaches a socket. Neither
        end's TCP state is touched; only timeouts (heart-beats, retransmits) can notice.
        """
        _ip("link", "set", self.hosts[role].veth, "up" if up else "down")

    def run(self, role: str, argv: Sequence[str], timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` inside ``role``'s namespace to completion (text output captured)."""
        return subprocess.run(self.command(role, argv), capture_output=True, text=True, timeout=timeout, check=False)

    def check_connectivity(self) -> None:
        """A real TCP connection from every host (and the root namespace) to every other host."""
        listeners = {
            role: self.popen(
                role, [sys.executable, "-I", "-c", _LISTENER, host.address, str(PROBE_PORT)], stdout=subprocess.PIPE
            )
            for role, host in self.hosts.items()
        }
        try:
            for role, listener in listeners.items():
                assert listener.stdout is not None
                if listener.stdout.readline().strip() != b"listening":
                    raise NetnsError(f"connectivity probe could not listen in {self.name(role)}")
            timeout = str(self.check_timeout)
            addresses = [host.address for host in self.hosts.values()]
            checks = {
                role: self.popen(
                    role,
                    [sys.executable, "-I", "-c", _CONNECTOR, str(PROBE_PORT), timeout]
                    + [a for a in addresses if a != host.address],
                    stdout=subprocess.PIPE,
                    text=True,
                )
                for role, host in self.hosts.items()
            }
            root = subprocess.run(
                [sys.executable, "-I", "-c", _CONNECTOR, str(PROBE_PORT), timeout, *addresses],
                capture_output=True,
                text=True,
                check=False,
            )
            results = {"root": json.loads(root.stdout or "{}")}
            for role, check in checks.items():
                output, _ = check.communicate(timeout=self.check_timeout + 10)
                results[role] = json.loads(output or "{}")
        finally:
            for listener in listeners.values():
                listener.kill()
                listener.wait()
        failures = {src: {dst: r for dst, r in res.items() if r != "ok"} for src, res in results.items()}
        failures = {src: res for src, res in failures.items() if res}
        if failures or len(results["root"]) != len(addresses):
            raise NetnsError(f"no TCP connectivity between namespaces: {failures or results}")

    def __repr__(self) -> str:
        hosts = ", ".join(f"{h.role}={h.address}@{h.netns}" for h in self.hosts.values())
        return f"Network({self.subnet}, {hosts})"


@contextlib.contextmanager
def network_or_skip(roles: Sequence[str]) -> Iterator[Network]:
    """A started :class:`Network` for a fixture, closed afterwards; skipped where root lacks
    CAP_NET_ADMIN / CAP_SYS_ADMIN (the namespaces cannot be made at all)."""
    net = Network(roles)
    try:
        net.start()
    except NetnsError as error:
        if "Operation not permitted" in str(error):
            pytest.skip(f"netns: {error}")
        raise
    try:
        yield net
    finally:
        net.close()
