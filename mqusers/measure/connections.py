"""The run's connections: opened per second, refused, closed with and without the broker's receipt, and
whether they all went away (the generator's open files, the broker's own connection count).

Pure: reads the book's ``connect`` and ``disconnect`` tallies, the processes' open files at start and
end, and the broker's last connection count when its source reports one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from mqusers.measure.book import Tally
from mqusers.measure.names import CONNECT, DISCONNECT, split_event_name


class Connections(TypedDict):
    """The JSON report's ``connections``."""

    #: CONNECTs answered by CONNECTED, and those that failed (refused by an ERROR frame, unreachable, no answer).
    opened: int
    failed: int
    #: Opened per second over the span from the first connect to the last.
    per_s: float
    #: Timed DISCONNECTs (Users that churn) the broker's RECEIPT answered, and those it did not.
    closed: int
    close_failed: int
    #: The generator's open file descriptors, summed over its processes: at the start, and after the
    #: Users and the broker's reader were gone (None: a process could not list /proc/self/fd).
    open_files_start: int | None
    open_files_end: int | None
    #: The broker's own count of open connections at its last reading (None: its source reports none).
    broker_connections_end: int | None


def _sum(tallies: Iterable[Tally]) -> Tally:
    total = Tally()
    for tally in tallies:
        total.add(tally)
    return total


def _total(values: Iterable[int | None]) -> int | None:
    seen = list(values)
    return None if not seen or any(value is None for value in seen) else sum(v for v in seen if v is not None)


def connection_figures(
    tallies: Mapping[str, Tally], files: Iterable[tuple[int | None, int | None]], broker: Mapping[str, Any]
) -> Connections:
    """``files``: each process's open files at (start, end); ``broker``: the broker-wide figures read last."""
    by_operation: dict[str, list[Tally]] = {CONNECT: [], DISCONNECT: []}
    for name, tally in tallies.items():
        operation = split_event_name(name)[0]
        if operation in by_operation:
            by_operation[operation].append(tally)
    connects, disconnects = _sum(by_operation[CONNECT]), _sum(by_operation[DISCONNECT])
    opened = connects.count - connects.failures
    span = connects.last - connects.first if connects.count else 0.0
    pairs = list(files)
    connections = broker.get("connections")
    return Connections(
        opened=opened,
        failed=connects.failures,
        per_s=round(opened / span, 1) if span > 0 else float(opened),
        closed=disconnects.count - disconnects.failures,
        close_failed=disconnects.failures,
        open_files_start=_total(start for start, _ in pairs),
        open_files_end=_total(end for _, end in pairs),
        broker_connections_end=connections if isinstance(connections, int) else None,
    )
