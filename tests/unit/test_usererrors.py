"""Users whose on_start raised: told apart from task errors, counted per class and error, merged across workers."""

from __future__ import annotations

import sys

from mqusers.run.usererrors import MESSAGE_CHARS, StartFailures, in_on_start


class Planted:
    def on_start(self) -> None:
        raise RuntimeError("planted")

    def task(self) -> None:
        raise RuntimeError("in a task")


def _traceback_of(method: str):  # type: ignore[no-untyped-def]
    try:
        getattr(Planted(), method)()
    except RuntimeError:
        return sys.exc_info()[2]
    raise AssertionError("nothing raised")


def test_only_an_error_raised_through_on_start_counts() -> None:
    assert in_on_start(_traceback_of("on_start"))
    assert not in_on_start(_traceback_of("task")) and not in_on_start(None)


def test_failures_are_shipped_once_and_merged_per_class_and_error() -> None:
    worker, master = StartFailures(), StartFailures()
    worker.record("Consumer", "RuntimeError: x")
    worker.record("Consumer", "RuntimeError: x")
    worker.record("Producer", "E" * 1000)
    master.merge(worker.drain())
    assert worker.drain() == []  # nothing twice
    worker.record("Consumer", "RuntimeError: x")
    master.merge(worker.drain())
    assert master.document() == [
        {"user": "Consumer", "error": "RuntimeError: x", "users": 3},
        {"user": "Producer", "error": "E" * MESSAGE_CHARS, "users": 1},
    ]
