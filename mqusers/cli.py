"""The ``mqusers`` command: ``mqusers matrix ...`` (load tests themselves run through ``locust``)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] != "matrix":
        sys.stderr.write("usage: mqusers matrix [--host URL] [--modes ...] [--sizes ...] [--messages N]\n")
        return 2
    import locust  # noqa: F401  (gevent patches before the matrix imports anything networked)

    from mqusers.matrix import main as matrix

    return matrix(args[1:])


if __name__ == "__main__":
    sys.exit(main())
