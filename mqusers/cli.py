"""The ``mqusers`` command: ``matrix``, ``find-max``, ``curve``, ``report`` and ``locustfiles``."""

from __future__ import annotations

import sys
from collections.abc import Callable

from mqusers import capacity, cluster, htmlreport, matrix  # the package imports Locust first: gevent patches first

USAGE = """usage: mqusers matrix [--host URL] [--modes ...] [--sizes ...] [--messages N] [--locustfiles DIR]
       mqusers find-max -f LOCUSTFILE --host URL [--processes N] [--json PATH] [-- LOCUST ARGS]
       mqusers curve -f LOCUSTFILE --host URL --max-rate R [--percents 10,25,50,75,90,100] [--json PATH]
       mqusers cluster-compare --config NAME=URL [--failover NAME=COMMAND] ... [--json PATH]
       mqusers locustfiles    (prints the folder of the shipped scenarios, for locust -f)
       mqusers report A.json [B.json ...] --html out.html    (renders and compares saved JSON reports)
"""
COMMANDS: dict[str, Callable[[list[str]], int]] = {
    "matrix": matrix.main,
    "find-max": capacity.find_max,
    "curve": capacity.curve,
    "report": htmlreport.main,
    "cluster-compare": cluster.main,
}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["locustfiles"]:
        print(matrix.shipped_locustfiles())
        return 0
    if not args or args[0] not in COMMANDS:
        sys.stderr.write(USAGE)
        return 2
    return COMMANDS[args[0]](args[1:])


if __name__ == "__main__":
    sys.exit(main())
