"""The ``mqusers`` command: the usage of every subcommand (find-max, repeat, compare, report, ...), each run."""

from __future__ import annotations

from locust import events

import sys
from collections.abc import Callable

import configargparse

from mqusers.commands import (
    capacity,
    cluster,
    compare,
    matrix,  # the package imports Locust first: gevent patches first
    repeat,
)
from mqusers.report import htmlreport

#: Every subcommand with one line; ``mqusers --help`` prints it (exit 0), a wrong command prints it (exit 2).
USAGE = """usage: mqusers COMMAND [options]    (mqusers COMMAND --help: that command's options)

commands:
  matrix           the seed grid: each shipped scenario in each mode and size, one table
      mqusers matrix [--host URL] [--modes ...] [--sizes ...] [--repeats N] [--seconds S]
  find-max         the highest rate the broker sustains (a search over paced locust runs)
      mqusers find-max -f LOCUSTFILE --host URL [--processes N] [--json PATH] [-- ARGS]
  curve            latency against offered load: paced steps at percents of a rate
      mqusers curve -f LOCUSTFILE --host URL --max-rate R [--percents 10,50] [--json PATH]
  repeat           one locust test N times: each figure's median, 95 % interval and spread
      mqusers repeat N [--results DIR] [--json PATH] [--html PATH] -- --headless -t 30s ...
  cluster-compare  the JMS report's schemes and a failover per broker configuration
      mqusers cluster-compare --config NAME=URL [--failover NAME=COMMAND] [--repeats N] [--json F]
  compare          NEW against BASE: each figure's difference, its confidence interval, a verdict
      mqusers compare BASE NEW [--confidence 95] [--tolerance PERCENT] [--json PATH] [--html PATH]
  report           saved JSON reports in one HTML page, or a results folder's trend over runs
      mqusers report A.json [B.json ...] --html out.html  |  mqusers report DIR --html trend.html
  locustfiles      prints the folder of the shipped scenarios, for locust -f
  options          the --mq-*, --influx-* options with their env vars (locust --help omits them)

A load test is a locust run: locust -f "$(mqusers locustfiles)/pubsub.py" --host stomp://H:61613
"""
LOCUSTFILES_HELP = "usage: mqusers locustfiles\n\nPrints the folder of the shipped scenarios (locust -f FOLDER/x.py)."
COMMANDS: dict[str, Callable[[list[str]], int]] = {
    "matrix": matrix.main,
    "find-max": capacity.find_max,
    "curve": capacity.curve,
    "repeat": repeat.main,
    "compare": compare.main,
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
    asks_help = any(arg in ("-h", "--help") for arg in args[1:])
    if args in (["-h"], ["--help"], ["help"]):
        print(USAGE, end="")
        return 0
    if args[:1] == ["locustfiles"] and (len(args) == 1 or asks_help):
        print(LOCUSTFILES_HELP if asks_help else matrix.shipped_locustfiles())
        return 0
    if args[:1] == ["options"] and (len(args) == 1 or asks_help):
        print(options_help(), end="")
        return 0
    if not args or args[0] not in COMMANDS:
        sys.stderr.write(USAGE)
        return 2
    return COMMANDS[args[0]](args[1:])


if __name__ == "__main__":
    sys.exit(main())
