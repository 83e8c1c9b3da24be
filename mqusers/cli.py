"""The ``mqusers`` command: ``matrix``, ``find-max``, ``curve``, ``report``, ``locustfiles`` and ``options``."""

from __future__ import annotations

from locust import events

import sys
from collections.abc import Callable

import configargparse

from mqusers import capacity, cluster, htmlreport, matrix  # the package imports Locust first: gevent patches first

USAGE = """usage: mqusers matrix [--host URL] [--modes ...] [--sizes ...] [--messages N] [--locustfiles DIR]
       mqusers find-max -f LOCUSTFILE --host URL [--processes N] [--json PATH] [-- LOCUST ARGS]
       mqusers curve -f LOCUSTFILE --host URL --max-rate R [--percents 10,25,50,75,90,100] [--json PATH]
       mqusers cluster-compare --config NAME=URL [--failover NAME=COMMAND] ... [--json PATH]
       mqusers locustfiles    (prints the folder of the shipped scenarios, for locust -f)
       mqusers options        (the --mq-*, --influx-* options with their env vars: locust --help omits them)
       mqusers report A.json [B.json ...] --html out.html    (renders and compares saved JSON reports)
"""
COMMANDS: dict[str, Callable[[list[str]], int]] = {
    "matrix": matrix.main,
    "find-max": capacity.find_max,
    "curve": capacity.curve,
    "report": htmlreport.main,
    "cluster-compare": cluster.main,
}


def options_help() -> str:
    """The help of every option mqusers adds to Locust's parser.

    ``locust -f FILE --help`` prints Locust's help before it imports the locustfile that registers
    them, so they are printed from a parser of their own, filled by the same event Locust fires.
    """
    parser = configargparse.ArgumentParser(prog="locust", add_help=False,
                                           usage="locust -f LOCUSTFILE [locust options] [options below]")  # fmt: skip
    events.init_command_line_parser.fire(parser=parser)  # type: ignore[no-untyped-call]
    return str(parser.format_help())


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["locustfiles"]:
        print(matrix.shipped_locustfiles())
        return 0
    if args == ["options"]:
        print(options_help(), end="")
        return 0
    if not args or args[0] not in COMMANDS:
        sys.stderr.write(USAGE)
        return 2
    return COMMANDS[args[0]](args[1:])


if __name__ == "__main__":
    sys.exit(main())
