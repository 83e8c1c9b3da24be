"""Shared machinery: state folders, ports, PID files, spawning, probes, apt.

Every service lives in ``<state dir>/<name>/`` with ``pid`` (the PID we stop)
and a log file. Nothing outside that folder is written, except by apt-get.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POLL_INTERVAL = 0.1  # seconds between readiness probes
LOOPBACK = "127.0.0.1"


class ServiceError(RuntimeError):
    """A service could not be started or stopped; the message is user-facing."""


def state_dir() -> Path:
    """Base folder for all services (env MQUSERS_SERVICES_DIR overrides)."""
    return Path(os.environ.get("MQUSERS_SERVICES_DIR") or ROOT / ".services").resolve()


def port_offset() -> int:
    """MQUSERS_PORT_OFFSET lets a second set of services run beside the first."""
    raw = os.environ.get("MQUSERS_PORT_OFFSET", "0").strip() or "0"
    try:
        return int(raw)
    except ValueError:
        raise ServiceError(f"MQUSERS_PORT_OFFSET must be an integer, got {raw!r}") from None


def bind_host() -> str:
    """Address a placeable service listens on and is probed at (env MQUSERS_BIND_HOST)."""
    return os.environ.get("MQUSERS_BIND_HOST", "").strip() or LOOPBACK


def netns() -> str | None:
    """Network namespace a placeable service runs in (env MQUSERS_NETNS, as ``ip netns`` names it)."""
    return os.environ.get("MQUSERS_NETNS", "").strip() or None


@dataclass(frozen=True)
class Ctx:
    """Where one service instance lives and which ports it uses."""

    name: str
    dir: Path
    ports: Mapping[str, int]
    offset: int
    #: Listen address; probes connect to it from the caller's namespace, so it must be routable from here.
    host: str = LOOPBACK
    #: Launch through ``ip netns exec NETNS`` when set.
    netns: str | None = None

    @property
    def pid_file(self) -> Path:
        return self.dir / "pid"

    @property
    def log_file(self) -> Path:
        """The service's main log (its stdout/stderr unless it writes its own)."""
        return self.dir / f"{self.name}.log"


def make_ctx(name: str, base_ports: Mapping[str, int], placeable: bool = False) -> Ctx:
    """``placeable``: honour MQUSERS_BIND_HOST and MQUSERS_NETNS (otherwise 127.0.0.1, this namespace)."""
    offset = port_offset()
    ports = {key: port + offset for key, port in base_ports.items()}
    host, namespace = (bind_host(), netns()) if placeable else (LOOPBACK, None)
    return Ctx(name=name, dir=state_dir() / name, ports=ports, offset=offset, host=host, netns=namespace)


# --------------------------------------------------------------------- processes


def spawn(
    ctx: Ctx,
    argv: list[str],
    env: Mapping[str, str] | None = None,
    user: str | None = None,
    cwd: Path | None = None,
    log: Path | None = None,
) -> int:
    """Start a daemon in its own session (so Ctrl-C on the CLI spares it).

    Output goes to ``log`` (default: the service log); the PID is recorded for ``stop``.
    With ``ctx.netns``, ``ip netns exec`` execs ``argv`` in place: the PID is still the service's.
    """
    if ctx.netns:
        argv = ["ip", "netns", "exec", ctx.netns, *argv]
    ctx.dir.mkdir(parents=True, exist_ok=True)
    if user:
        reachable_by_others(ctx.dir)
    with open(log or ctx.log_file, "ab") as out:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            cwd=cwd or ctx.dir,
            start_new_session=True,
            user=user,
            group=user,
            extra_groups=[] if user else None,
        )
    ctx.pid_file.write_text(f"{proc.pid}\n")
    return proc.pid


def reachable_by_others(folder: Path) -> None:
    """Let a service's own OS user (rabbitmq, postgres) reach ``folder``: traverse, never read, each parent.

    A project cloned under ``mktemp -d`` (mode 0700) hid its folder from them: RabbitMQ died with
    "eacces" reading its cookie there.
    """
    for parent in folder.parents:
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:
            parent.chmod(mode | stat.S_IXOTH)


@contextlib.contextmanager
def locked(ctx: Ctx) -> Iterator[None]:
    """Serialise start/stop of one instance (e.g. parallel pytest workers),
    so two launches never race for the ports and the PID file."""
    ctx.dir.mkdir(parents=True, exist_ok=True)
    with open(ctx.dir / "lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def read_pid(ctx: Ctx) -> int | None:
    try:
        return int(ctx.pid_file.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def pid_alive(pid: int) -> bool:
    """True if ``pid`` runs: not a zombie, or a zombie whose other threads still run.

    When the Python API started the service, the process is our child: reap it
    so an exited broker does not linger as a zombie that ``kill(pid, 0)`` accepts.
    After SIGKILL a JVM's main thread turns zombie before its other threads are gone,
    and until they are its listening sockets stay open: a restart would find its ports busy.
    """
    try:
        # Our child is reapable only once every thread has exited.
        return os.waitpid(pid, os.WNOHANG)[0] != pid
    except ChildProcessError:
        pass  # not our child; fine
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        threads = len(os.listdir(f"/proc/{pid}/task"))
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z" or threads > 1


def owned_by(ctx: Ctx, pid: int) -> bool:
    """Does ``pid`` belong to this service instance?

    Every service gets its folder in its command line or environment, so this
    guards against a recycled PID and tells apart instances in other folders.
    """
    marker = f"{ctx.dir}/".encode()
    for part in ("cmdline", "environ"):
        try:
            if marker in Path(f"/proc/{pid}/{part}").read_bytes():
                return True
        except OSError:
            pass
    return False


def live_pid(ctx: Ctx) -> int | None:
    """PID from the PID file if that process is alive and really ours."""
    pid = read_pid(ctx)
    if pid is None or not pid_alive(pid) or not owned_by(ctx, pid):
        return None
    return pid


def wait_exit(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(POLL_INTERVAL)
    return not pid_alive(pid)


def terminate(pid: int, timeout: float = 30.0) -> None:
    """SIGTERM, wait up to ``timeout``, then SIGKILL (a hung JVM must not block us)."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        if wait_exit(pid, wait):
            return
    raise ServiceError(f"PID {pid} survived SIGKILL")


def log_sizes(paths: list[Path]) -> dict[Path, int]:
    return {path: path.stat().st_size for path in paths if path.is_file()}


def log_tail(paths: list[Path], since: Mapping[Path, int], lines: int = 20) -> str:
    """Last ``lines`` of what each log gained after ``since`` (sizes at launch):
    earlier runs' output would only mislead."""
    out = []
    for path in paths:
        if not path.is_file():
            continue
        with open(path, "rb") as log:
            log.seek(since.get(path, 0))
            text = log.read().decode(errors="replace").splitlines()[-lines:]
        if text:
            out.append(f"--- {path} (last {len(text)} lines)\n" + "\n".join(text))
    return "\n".join(out) or "(no new log output)"


# ------------------------------------------------------------------------ probes


def port_open(port: int, host: str = LOOPBACK) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def stomp_handshake(port: int, login: str = "", passcode: str = "", vhost: str = "/", host: str = LOOPBACK) -> bool:
    """A real STOMP 1.2 CONNECT → CONNECTED exchange: the listener is usable."""
    headers = f"accept-version:1.2\nhost:{vhost}\nheart-beat:0,0\n"
    if login:
        headers += f"login:{login}\npasscode:{passcode}\n"
    try:
        with socket.create_connection((host, port), timeout=2.0) as sock:
            sock.sendall(f"CONNECT\n{headers}\n\0".encode())
            reply = sock.recv(4096)
            ok = reply.lstrip(b"\n").startswith(b"CONNECTED")
            if ok:
                sock.sendall(b"DISCONNECT\n\n\0")
            return ok
    except OSError:
        return False


def http_status(url: str, auth: tuple[str, str] | None = None) -> tuple[int, bytes]:
    """(status, body) of a GET, or (0, b"") when nothing answers."""
    request = urllib.request.Request(url)
    if auth:
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=2.0) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, b""
    except OSError:
        return 0, b""


def poll_until(probe: Callable[[], bool], pid: int, deadline: float) -> bool:
    """Poll ``probe`` until it holds; give up early if the process died."""
    while time.monotonic() < deadline:
        if probe():
            return True
        if not pid_alive(pid):
            return False
        time.sleep(POLL_INTERVAL)
    return probe()


# ------------------------------------------------------------- downloads (Maven)


def cache_dir() -> Path:
    """Distributions downloaded from Maven Central, shared by every state dir (`make clean` removes them)."""
    return ROOT / ".services" / "cache"


@contextlib.contextmanager
def cache_lock() -> Iterator[None]:
    """Two starts (pytest workers, two services) must not download or unpack at once."""
    cache_dir().mkdir(parents=True, exist_ok=True)
    with open(cache_dir() / "lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def maven(args: list[str], what: str) -> None:
    """Run ``mvn`` in batch mode with strict checksums: a download whose SHA-1 differs from
    Maven Central's fails instead of being used (Maven's default only warns)."""
    ensure_package("maven")
    print(f"downloading {what} from Maven Central ...", file=sys.stderr)
    argv = ["mvn", "-q", "-B", "--strict-checksums", *args]
    result = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=cache_dir())
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-5:])
        raise ServiceError(f"{what}: {' '.join(argv)} failed\n{tail}")


# --------------------------------------------------------------------------- apt


def package_installed(package: str) -> bool:
    result = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", package],
        capture_output=True,
        text=True,
        check=False,
    )
    return result.returncode == 0 and result.stdout.strip() == "install ok installed"


def ensure_package(package: str) -> None:
    ensure_packages([package])


def ensure_packages(packages: list[str]) -> None:
    """One ``apt-get install`` for those missing (dpkg's triggers run once); ``apt-get update`` only after a
    first failure."""
    missing = sorted({package for package in packages if not package_installed(package)})
    if not missing:
        return
    if shutil.which("apt-get") is None:
        raise ServiceError(f"{' '.join(missing)}: not installed and apt-get is unavailable")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-qq", *missing]
    print(f"installing Debian packages {' '.join(missing)} ...", file=sys.stderr)
    if subprocess.run(install, env=env, check=False, stdout=subprocess.DEVNULL).returncode == 0:
        return
    subprocess.run(["apt-get", "update", "-qq"], env=env, check=False)
    if subprocess.run(install, env=env, check=False, stdout=subprocess.DEVNULL).returncode != 0:
        raise ServiceError(f"apt-get install -y {' '.join(missing)} failed")
