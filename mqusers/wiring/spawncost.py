"""A worker's cost of one spawn message, kept to what it needs: Locust's defaults parsed once, not once per option.

Locust's worker (2.47, ``WorkerRunner.handle_message``) keeps the master's options that are not
Locust's own with ``k not in argument_parser.default_args_dict()`` inside a comprehension over every
option: the whole argument parser is built again for each of the ~170 options (Locust's and
mqusers'), 2 ms each, about 0.35 CPU-s per spawn message per worker. Sixty-four workers on two
cores spent over 10 s on it at once; none could send a heartbeat in that time, the master marked
every one missing and stopped the test. The defaults of one process's parser do not change, so
:func:`parse_defaults_once` makes the call return a copy of the first answer.
"""

from __future__ import annotations

from locust import argument_parser

from collections.abc import Callable
from typing import Any

_MARK = "_mqusers_once"


def parse_defaults_once() -> None:
    """Make ``locust.argument_parser.default_args_dict`` parse once per process (idempotent)."""
    original: Callable[[], dict[str, Any]] = argument_parser.default_args_dict
    if getattr(original, _MARK, False):
        return
    defaults: dict[str, Any] = {}

    def once() -> dict[str, Any]:
        if not defaults:
            defaults.update(original())
        return dict(defaults)

    setattr(once, _MARK, True)
    argument_parser.default_args_dict = once
