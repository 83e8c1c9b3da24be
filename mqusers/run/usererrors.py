"""Users that died in ``on_start``: counted per class and error on every process, named in the summary.

Locust logs such an exception and the User's greenlet ends: the User never runs its tasks, and
without a word the run would simply have fewer Users than asked for (and a consumer that never
subscribes would hold the producers at the start barrier until its timeout).
"""

from __future__ import annotations

from locust.env import Environment

from collections import Counter
from collections.abc import Callable
from types import TracebackType
from typing import Any

#: How much of an exception's text a note keeps (a broker's reason can be long).
MESSAGE_CHARS = 160


class StartFailures:
    """Users whose ``on_start`` raised, as (class, error) -> count; drained to the master."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()
        self._unshipped: Counter[tuple[str, str]] = Counter()

    def record(self, user_class: str, error: str) -> None:
        key = (user_class, error[:MESSAGE_CHARS])
        self.counts[key] += 1
        self._unshipped[key] += 1

    def drain(self) -> list[list[Any]]:
        shipped = [[user_class, error, count] for (user_class, error), count in self._unshipped.items()]
        self._unshipped.clear()
        return shipped

    def merge(self, shipped: list[list[Any]]) -> None:
        for user_class, error, count in shipped:
            self.counts[(str(user_class), str(error))] += int(count)

    def document(self) -> list[dict[str, Any]]:
        return [{"user": c, "error": e, "users": n} for (c, e), n in sorted(self.counts.items())]


def in_on_start(tb: TracebackType | None) -> bool:
    """Whether the traceback passes through a User's ``on_start`` (Locust's user_error has no phase)."""
    while tb is not None:
        if tb.tb_frame.f_code.co_name == "on_start":
            return True
        tb = tb.tb_next
    return False


def count_start_failures(environment: Environment, failures: Callable[[], StartFailures]) -> None:
    """Count each User whose on_start raises into ``failures()`` (the current test's)."""

    def on_user_error(user_instance: Any, exception: BaseException, tb: TracebackType | None, **_: Any) -> None:
        if in_on_start(tb):
            failures().record(type(user_instance).__name__, f"{type(exception).__name__}: {exception}")
            # A consumer that will never subscribe must not hold the producers at the start barrier.
            if callable(count_as_joined := getattr(user_instance, "count_as_joined", None)):
                count_as_joined()

    environment.events.user_error.add_listener(on_user_error)  # type: ignore[no-untyped-call]
