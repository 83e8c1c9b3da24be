"""CLI: python -m services start [--started FILE] NAME... | stop NAME... | stop all | install NAME... | status
| running NAME | port NAME KEY | pid NAME | fail-over [--kill] NAME [NAME] | hdr-jar
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from typing import TextIO

from . import SERVICES, ServiceError, hdrtools, install, is_running, master_of, pid, ports, start, status, stop


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m services",
        description="Start/stop local services on 127.0.0.1 (state in .services/ or "
        "$MQUSERS_SERVICES_DIR; ports shifted by $MQUSERS_PORT_OFFSET).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for command in ("start", "stop"):
        cmd = sub.add_parser(command, help=f"{command} services")
        cmd.add_argument(
            "names",
            nargs="+",
            metavar="NAME",
            help=f"one of: {', '.join(SERVICES)}" + (", all" if command == "stop" else ""),
        )
        if command == "start":
            # So that a caller (make test, make demo) stops only what it started, not a broker someone else runs.
            cmd.add_argument("--started", metavar="FILE", help="write the names this call started to FILE, one a line")
    setup = sub.add_parser("install", help="install and download what NAME... needs, start nothing")
    setup.add_argument("names", nargs="+", metavar="NAME", help=f"one of: {', '.join(SERVICES)}")
    setup.add_argument("--debian", nargs="*", default=[], metavar="PACKAGE", help="more Debian packages, same apt run")
    sub.add_parser("status", help="show what runs")
    running = sub.add_parser("running", help="exit 0 if NAME runs, 1 if not")
    running.add_argument("name", metavar="NAME")
    port = sub.add_parser("port", help="print a port of NAME, MQUSERS_PORT_OFFSET applied")
    port.add_argument("name", metavar="NAME")
    port.add_argument("key", metavar="KEY", help="e.g. stomp, amqp, management, http")
    pid = sub.add_parser("pid", help="print the PID of NAME (exit 1 when it does not run)")
    pid.add_argument("name", metavar="NAME")
    fail = sub.add_parser("fail-over", help="stop the broker of NAME... that serves STOMP, then start it again")
    fail.add_argument("names", nargs="+", metavar="NAME", help="a master/slave pair's brokers, or one broker")
    fail.add_argument("--kill", action="store_true", help="SIGKILL the broker (a crash) instead of stopping it")
    sub.add_parser("hdr-jar", help="print the path of HdrHistogram's jar (its log tools), downloaded once")
    return parser.parse_args(argv)


#: How long a killed process may take to be gone (the kernel closes its files and sockets).
KILL_WAIT_S = 10.0
#: How long a pair's slave may take to serve once its master stopped.
TAKEOVER_S = 60.0


def _killed(name: str) -> None:
    """SIGKILL ``name``'s process, as a crash or the OOM killer would, and wait until it is gone."""
    victim = pid(name)
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + KILL_WAIT_S
    while os.path.exists(f"/proc/{victim}"):
        if time.monotonic() > deadline:
            raise ServiceError(f"{name} (pid {victim}) still there {KILL_WAIT_S:g} s after SIGKILL")
        time.sleep(0.05)


def _fail_over(names: list[str], kill: bool = False) -> int:
    """Stop the master (``kill``: SIGKILL it), wait until the pair's slave serves, then start the old master: it
    waits as the slave. One broker: stopped or killed, then started again.

    Started again at once, the old master could win the lock back before the slave's next try
    (the JDBC pair's lease is retried every 3 s): that would be a restart, not a failover.
    """
    try:
        master = names[0] if len(names) == 1 else master_of(names)
        if master is None:
            print(f"error: none of {', '.join(names)} serves STOMP", file=sys.stderr)
            return 1
        began = time.monotonic()
        if kill:
            _killed(master)
        else:
            stop(master)
        stopped = time.monotonic()
        others = [name for name in names if name != master]
        while others and master_of(others) is None:
            if time.monotonic() - stopped > TAKEOVER_S:
                print(f"error: {', '.join(others)} did not take over within {TAKEOVER_S:g} s", file=sys.stderr)
                return 1
            time.sleep(0.05)
        took_over = time.monotonic()
        start(master)
    except ServiceError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    handover = f"{master_of(others)} took over in {took_over - stopped:.1f} s, " if others else ""
    verb = "killed" if kill else "stopped"
    print(f"{master}: {verb} ({stopped - began:.1f} s), {handover}started again ({time.monotonic() - took_over:.1f} s)")
    return 0


def _run(command: str, names: list[str], started: TextIO | None = None) -> int:
    failures = 0
    for name in names:
        began = time.monotonic()
        try:
            if command == "start":
                fresh = start(name)
                verb = "started" if fresh else "already running"
                if fresh and started is not None:
                    started.write(name + "\n")
                    started.flush()  # written at once: a later failure or Ctrl-C must not lose it
            else:
                verb = "stopped" if stop(name) else "not running"
        except ServiceError as err:
            print(f"error: {err}", file=sys.stderr)
            failures += 1
            continue
        print(f"{name}: {verb} ({time.monotonic() - began:.1f} s)")
    return 1 if failures else 0


def _port(name: str, key: str) -> int:
    try:
        found = ports(name)
    except ServiceError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if key not in found:
        print(f"error: {name} has no port {key!r} (known: {', '.join(found)})", file=sys.stderr)
        return 2
    print(found[key])
    return 0


def _pid(name: str) -> int:
    try:
        print(pid(name))
    except ServiceError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


def _hdr_jar() -> int:
    try:
        print(hdrtools.jar())
    except ServiceError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


def _install(names: list[str], debian: list[str]) -> int:
    began = time.monotonic()
    try:
        install(names, debian)
    except ServiceError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"installed what {', '.join(names)} need ({time.monotonic() - began:.1f} s)")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    if args.command == "status":
        print("\n".join(status()))
        return 0
    if args.command == "running":
        return 0 if is_running(args.name) else 1
    if args.command == "port":
        return _port(args.name, args.key)
    if args.command == "pid":
        return _pid(args.name)
    if args.command == "fail-over":
        return _fail_over(args.names, args.kill)
    if args.command == "hdr-jar":
        return _hdr_jar()
    if args.command == "install":
        return _install(args.names, args.debian)
    if args.command == "start" and args.started:
        with open(args.started, "w", encoding="utf-8") as started:
            return _run("start", args.names, started)
    names = args.names
    if args.command == "stop" and "all" in names:
        names = list(reversed(SERVICES))
    return _run(args.command, names)


if __name__ == "__main__":
    sys.exit(main())
