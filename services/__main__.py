"""CLI: python -m services start|stop NAME... | stop all | status"""

from __future__ import annotations

import argparse
import sys
import time

from . import SERVICES, ServiceError, is_running, start, status, stop


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
    sub.add_parser("status", help="show what runs")
    running = sub.add_parser("running", help="exit 0 if NAME runs, 1 if not")
    running.add_argument("name", metavar="NAME")
    return parser.parse_args(argv)


def _run(command: str, names: list[str]) -> int:
    failures = 0
    for name in names:
        began = time.monotonic()
        try:
            if command == "start":
                verb = "started" if start(name) else "already running"
            else:
                verb = "stopped" if stop(name) else "not running"
        except ServiceError as err:
            print(f"error: {err}", file=sys.stderr)
            failures += 1
            continue
        print(f"{name}: {verb} ({time.monotonic() - began:.1f} s)")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    if args.command == "status":
        print("\n".join(status()))
        return 0
    if args.command == "running":
        return 0 if is_running(args.name) else 1
    names = args.names
    if args.command == "stop" and "all" in names:
        names = list(reversed(SERVICES))
    return _run(args.command, names)


if __name__ == "__main__":
    sys.exit(main())
