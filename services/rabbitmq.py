"""RabbitMQ (Debian ``rabbitmq-server``) with the STOMP and management plugins.

Everything the node writes (mnesia, logs, Erlang cookie) stays in its folder,
chosen by RABBITMQ_* environment variables; /etc/rabbitmq is not read.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from .base import (
    Ctx,
    ServiceError,
    http_status,
    owned_by,
    pid_alive,
    poll_until,
    port_open,
    spawn,
    stomp_handshake,
    terminate,
)
from .control import Service

USER = "rabbitmq"  # the node refuses to run from a folder it does not own
SCRIPTS = Path("/usr/lib/rabbitmq/bin")  # behind Debian's su-wrapper in /usr/sbin
GUEST = ("guest", "guest")  # default user; allowed from loopback only
# What Debian 12's `rabbitmq-server` installs (upstream part of its version; held by tests/unit/test_compose.py).
VERSION = "3.10.8"

CONFIG = """\
# Written by `python -m services`; rewritten on every start.
listeners.tcp.default = 127.0.0.1:{amqp}
stomp.listeners.tcp.1 = 127.0.0.1:{stomp}
# Nagle would add up to 40 ms to small STOMP frames and skew latencies.
stomp.tcp_listen_options.nodelay = true
# STOMP over WebSocket (rabbitmq_web_stomp): ws://127.0.0.1:{web_stomp}/ws, text frames (its default;
# ranch sets TCP_NODELAY itself).
web_stomp.tcp.ip = 127.0.0.1
web_stomp.tcp.port = {web_stomp}
tcp_listen_options.nodelay = true
management.tcp.ip = 127.0.0.1
management.tcp.port = {management}
# Tests poll management counters. Those refresh at the smallest retention
# sampling interval (default 5 s), so sample every second (the minimum) and
# emit core stats every 500 ms.
collect_statistics_interval = 500
management.sample_retention_policies.global.minute = 1
management.sample_retention_policies.global.hour = 60
management.sample_retention_policies.basic.minute = 1
management.sample_retention_policies.basic.hour = 60
management.sample_retention_policies.detailed.10 = 1
log.console = false
log.file.level = info
"""


def node_name(ctx: Ctx) -> str:
    # A distinct node name per offset: two nodes may share one epmd.
    return f"rabbit-{ctx.offset}@localhost" if ctx.offset else "rabbit@localhost"


def _env(ctx: Ctx) -> dict[str, str]:
    d = ctx.dir
    # Bind Erlang distribution (node <-> rabbitmqctl) to loopback too.
    loopback_dist = "-kernel inet_dist_use_interface {127,0,0,1}"
    return {
        "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",  # the Elixir CLI warns otherwise
        # The Erlang cookie lives in $HOME: node and rabbitmqctl must agree on it.
        "HOME": str(d),
        "RABBITMQ_NODENAME": node_name(ctx),
        "RABBITMQ_CONFIG_FILE": str(d / "rabbitmq.conf"),
        "RABBITMQ_ADVANCED_CONFIG_FILE": str(d / "advanced.config"),
        "RABBITMQ_CONF_ENV_FILE": str(d / "rabbitmq-env.conf"),  # not /etc's
        "RABBITMQ_ENABLED_PLUGINS_FILE": str(d / "enabled_plugins"),
        "RABBITMQ_MNESIA_BASE": str(d / "mnesia"),
        "RABBITMQ_LOG_BASE": str(d / "log"),
        "RABBITMQ_PID_FILE": str(d / "beam.pid"),
        # Default dist port is AMQP + 20000, but from env, not our config file.
        "RABBITMQ_DIST_PORT": str(ctx.ports["dist"]),
        "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": loopback_dist,
        "RABBITMQ_CTL_ERL_ARGS": loopback_dist,
        "ERL_EPMD_ADDRESS": "127.0.0.1",
        "ERL_EPMD_PORT": str(4369 + ctx.offset),
        # Makes the start script exec erl, so the PID we record is the node's.
        "RUNNING_UNDER_SYSTEMD": "true",
    }


def _write_config(ctx: Ctx) -> None:
    for sub in ("mnesia", "log"):
        (ctx.dir / sub).mkdir(parents=True, exist_ok=True)
    (ctx.dir / "rabbitmq.conf").write_text(CONFIG.format(**ctx.ports))
    # Same as `rabbitmq-plugins enable --offline`; dependencies load at boot.
    (ctx.dir / "enabled_plugins").write_text("[rabbitmq_management,rabbitmq_stomp,rabbitmq_web_stomp].\n")
    (ctx.dir / "beam.pid").unlink(missing_ok=True)  # rabbitmqctl wait reads it
    shutil.chown(ctx.dir, USER, USER)
    for path in ctx.dir.rglob("*"):
        shutil.chown(path, USER, USER)


def launch(ctx: Ctx) -> int:
    _write_config(ctx)
    return spawn(ctx, [str(SCRIPTS / "rabbitmq-server")], env=_env(ctx), user=USER)


def _ctl(ctx: Ctx, *args: str) -> subprocess.Popen[str]:
    """rabbitmqctl as the node's user, with the node's env (cookie, epmd port)."""
    return subprocess.Popen(
        [str(SCRIPTS / "rabbitmqctl"), *args],
        env=_env(ctx),
        user=USER,
        group=USER,
        extra_groups=[],
        cwd=ctx.dir,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def rabbitmqctl(ctx: Ctx, *args: str, timeout: float = 120.0) -> tuple[int, str]:
    """Run rabbitmqctl to completion: (exit code, output)."""
    proc = _ctl(ctx, *args)
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise ServiceError(f"rabbitmqctl {' '.join(args)} timed out") from None
    return proc.returncode, output


def ready(ctx: Ctx) -> bool:
    """AMQP, STOMP (guest login, vhost /), web_stomp and the management API all answer."""
    return (
        port_open(ctx.ports["amqp"])
        and port_open(ctx.ports["web_stomp"])
        and stomp_handshake(ctx.ports["stomp"], *GUEST, vhost="/")
        and http_status(f"http://127.0.0.1:{ctx.ports['management']}/api/overview", GUEST)[0] == 200
    )


def wait(ctx: Ctx, pid: int, deadline: float) -> bool:
    """``rabbitmqctl wait`` for the boot, then the listeners themselves.

    rabbitmqctl keeps waiting for a PID file a crashed node never writes, so
    it runs alongside a watch on the node's process.
    """
    remaining = max(1, int(deadline - time.monotonic()))
    waiter = _ctl(ctx, "wait", "--timeout", str(remaining), str(ctx.dir / "beam.pid"))
    try:
        booted = poll_until(lambda: waiter.poll() is not None, pid, deadline)
    finally:
        if waiter.poll() is None:
            waiter.kill()
        waiter.communicate()
    if not booted or waiter.returncode != 0:
        return False  # the reason is in the node's log, shown by the caller
    return poll_until(lambda: ready(ctx), pid, deadline)


def shutdown(ctx: Ctx, pid: int) -> None:
    """Graceful stop; rabbitmqctl returns once the node process has exited.

    Takes ~9 s, 5 of them an upstream stall in stopping the management agent
    (fixed in RabbitMQ 3.13, rabbitmq-server PR #11070).
    """
    code, output = rabbitmqctl(ctx, "stop", str(ctx.dir / "beam.pid"))
    if code != 0 and pid_alive(pid):
        raise ServiceError(f"rabbitmqctl stop failed: {output.strip()[-300:]}")


def stop_epmd(ctx: Ctx) -> None:
    """Stop the epmd the node spawned (it outlives the node).

    Found by name and by our folder in its inherited environment, so an epmd
    started by anyone else is left alone.
    """
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            is_epmd = (proc / "comm").read_text().strip() == "epmd"
        except OSError:
            continue
        if is_epmd and owned_by(ctx, int(proc.name)):
            terminate(int(proc.name), timeout=10.0)


def _logs(ctx: Ctx) -> list[Path]:
    return sorted((ctx.dir / "log").glob("*.log"))


SERVICE = Service(
    name="rabbitmq",
    package="rabbitmq-server",
    # dist: Erlang distribution (rabbitmqctl talks to the node through it).
    base_ports={"amqp": 5672, "stomp": 61614, "management": 15672, "dist": 25672, "web_stomp": 15674},
    launch=launch,
    ready=ready,
    wait=wait,
    shutdown=shutdown,
    cleanup=stop_epmd,
    logs=_logs,
)
