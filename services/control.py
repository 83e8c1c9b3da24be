"""Generic start / stop / status built on the per-service hooks."""

from __future__ import annotations

import contextlib
import ipaddress
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .base import (
    LOOPBACK,
    Ctx,
    ServiceError,
    bind_host,
    ensure_package,
    live_pid,
    locked,
    log_sizes,
    log_tail,
    make_ctx,
    netns,
    pid_alive,
    poll_until,
    port_open,
    terminate,
)

START_TIMEOUT = 90.0
STOP_TIMEOUT = 60.0


@dataclass(frozen=True)
class Service:
    """What differs between services; everything else is shared here."""

    name: str
    package: str  # Debian package providing it
    base_ports: Mapping[str, int]  # before MQUSERS_PORT_OFFSET
    launch: Callable[[Ctx], int]  # write config, spawn, return PID
    ready: Callable[[Ctx], bool]  # one cheap readiness probe
    # Optional: a blocking readiness wait (PID, deadline) -> ready?
    wait: Callable[[Ctx, int, float], bool] | None = None
    # Optional: graceful shutdown tried before SIGTERM.
    shutdown: Callable[[Ctx, int], None] | None = None
    # Optional: after the process is gone (e.g. the epmd RabbitMQ leaves behind).
    cleanup: Callable[[Ctx], None] | None = None
    # Optional: extra log files worth showing when start fails.
    logs: Callable[[Ctx], list[Path]] | None = None
    # Optional: what a running instance is now, for status (a master/slave pair's "master", "slave").
    role: Callable[[Ctx], str] | None = None
    # Optional: fetch what launch needs (a download), before the start timeout begins to count.
    prepare: Callable[[], None] | None = None
    # Listens on MQUSERS_BIND_HOST and runs in MQUSERS_NETNS (launch and ready must use ctx.host).
    placeable: bool = False

    def ctx(self) -> Ctx:
        return make_ctx(self.name, self.base_ports, self.placeable)


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _check_placement(service: Service, ctx: Ctx) -> None:
    if not service.placeable and (bind_host() != LOOPBACK or netns()):
        raise ServiceError(f"{service.name}: MQUSERS_BIND_HOST / MQUSERS_NETNS are supported for ActiveMQ only")
    if ctx.netns and _loopback(ctx.host):
        # The probes run here, where loopback is not the namespace's: they could "see" another broker.
        raise ServiceError(
            f"{service.name}: MQUSERS_NETNS={ctx.netns} needs MQUSERS_BIND_HOST set to an address of that "
            "namespace that is routable from this one"
        )


def _wait_ready(service: Service, ctx: Ctx, pid: int, deadline: float) -> bool:
    if service.wait is not None:
        return service.wait(ctx, pid, deadline)
    return poll_until(lambda: service.ready(ctx), pid, deadline)


def _log_paths(service: Service, ctx: Ctx) -> list[Path]:
    return [ctx.log_file] + (service.logs(ctx) if service.logs else [])


def _failure(service: Service, ctx: Ctx, pid: int, timeout: float, since: dict[Path, int]) -> ServiceError:
    if pid_alive(pid):
        what = f"not ready within {timeout:.0f} s (PID {pid} still running)"
    else:
        what = f"process {pid} exited before it became ready"
    return ServiceError(f"{service.name}: {what}; see {ctx.dir}\n{log_tail(_log_paths(service, ctx), since)}")


def start(service: Service, timeout: float = START_TIMEOUT) -> bool:
    """Start ``service`` and return once it answers.

    Returns False (and does nothing) if our instance already runs and answers.
    """
    ctx = service.ctx()
    if service.prepare is not None:
        service.prepare()
    with locked(ctx):
        return _start(service, ctx, timeout)


def _start(service: Service, ctx: Ctx, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    _check_placement(service, ctx)
    pid = live_pid(ctx)
    if pid is not None:
        # Running already, maybe still booting (started by another process).
        if service.ready(ctx) or _wait_ready(service, ctx, pid, deadline):
            return False
        raise _failure(service, ctx, pid, timeout, {})
    ctx.pid_file.unlink(missing_ok=True)  # stale: process gone or PID recycled
    busy = sorted(port for port in ctx.ports.values() if port_open(port, ctx.host))
    if busy:
        raise ServiceError(
            f"{service.name}: port(s) {busy} on {ctx.host} already in use by a process not started from {ctx.dir}"
        )
    ensure_package(service.package)
    ctx.dir.mkdir(parents=True, exist_ok=True)
    since = log_sizes(_log_paths(service, ctx))
    pid = service.launch(ctx)
    if _wait_ready(service, ctx, pid, deadline):
        return True
    error = _failure(service, ctx, pid, timeout, since)
    _halt(service, ctx, pid)  # so that a retry starts from a clean slate
    raise error


def _halt(service: Service, ctx: Ctx, pid: int) -> None:
    if service.shutdown is not None and pid_alive(pid):
        with contextlib.suppress(ServiceError):  # fall back to signals below
            service.shutdown(ctx, pid)
    terminate(pid, STOP_TIMEOUT)
    if service.cleanup is not None:
        service.cleanup(ctx)
    ctx.pid_file.unlink(missing_ok=True)


def stop(service: Service) -> bool:
    """Stop ``service``; True if a process was stopped, False if none ran."""
    ctx = service.ctx()
    if not ctx.dir.is_dir():
        return False  # never started from this folder
    with locked(ctx):
        pid = live_pid(ctx)
        if pid is None:
            ctx.pid_file.unlink(missing_ok=True)
            if service.cleanup is not None:
                service.cleanup(ctx)
            return False
        _halt(service, ctx, pid)
        return True


def is_running(service: Service) -> bool:
    """Our process is alive and answers its readiness probe."""
    ctx = service.ctx()
    return live_pid(ctx) is not None and service.ready(ctx)


def status_line(service: Service) -> str:
    ctx = service.ctx()
    pid = live_pid(ctx)
    ports = " ".join(f"{key}={port}" for key, port in ctx.ports.items())
    if pid is None:
        state = "stale pid file" if ctx.pid_file.exists() else "stopped"
    else:
        state = f"running pid={pid}" + ("" if service.ready(ctx) else " (not ready)")
        if service.role is not None:
            state += f" {service.role(ctx)}"
    return f"{service.name:<20} {state:<24} {ports}"
