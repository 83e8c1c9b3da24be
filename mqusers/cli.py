"""The ``mqusers`` command: ``mqusers matrix ...`` and ``mqusers locustfiles`` (load tests run through ``locust``)."""

from __future__ import annotations

import sys

from mqusers import htmlreport, matrix  # the package imports Locust first, so gevent patches before networking

USAGE = """usage: mqusers matrix [--host URL] [--modes ...] [--sizes ...] [--messages N] [--locustfiles DIR]
       mqusers locustfiles    (prints the folder of the shipped scenarios, for locust -f)
       mqusers report A.json [B.json ...] --html out.html    (renders and compares saved JSON reports)
"""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["locustfiles"]:
        print(matrix.shipped_locustfiles())
        return 0
    if args[:1] == ["report"]:
        return htmlreport.main(args[1:])
    if not args or args[0] != "matrix":
        sys.stderr.write(USAGE)
        return 2
    return matrix.main(args[1:])


if __name__ == "__main__":
    sys.exit(main())
