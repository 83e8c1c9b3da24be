"""What a failover costs, seen from each client: the outages of its connection and their windows.

Pure bookkeeping, no I/O. Each User has an :class:`Availability`; it opens an :class:`Outage` when
the User's connection dropped (not when the User closed it), notes each refused reconnect
attempt, the reconnect, and the first good operation after it (a confirmed send, a delivery).
A process's :class:`Outages` keeps them and ships them to the master, which merges them and
:func:`summarize`\\ s them per destination.

Definitions (all times are the process's wall clock, ns):

- *window*: last good operation before the drop to the first good one after: how long this
  client could not do its job. A client that had done nothing yet starts its window at the drop;
  one not back by the end of the run is *unrecovered*, its window open.
- *reconnect*: the drop to the CONNECTED frame of the new connection.
- *after ready*: how long after the broker could first have accepted the connection it was
  made: from the start of the last refused attempt (the broker was not ready then), or from the
  drop when none was refused. The client cannot see the broker's readiness: this is its upper
  bound, so a back-off that reconnects late shows here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from mqusers.measure.buckets import Traffic, percentile_of
from mqusers.measure.series import SERIES_PERCENTILES

#: Outages kept per process and on the master: beyond it only counted (a flapping link must not
#: grow memory).
MAX_OUTAGES = 10_000
NONE = -1
#: Deliveries this long after a window still count as during the failover: the backlog it left drains.
AFTERMATH_S = 5


class Outage(TypedDict):
    """One drop of one client's connection; ``-1`` for a time that did not (yet) happen."""

    role: str
    destination: str
    client: str
    process: str
    last_ok_ns: int
    lost_ns: int
    refused: int
    last_refused_ns: int
    reconnected_ns: int
    first_ok_ns: int
    #: Why the last reconnect attempt failed ("" when none did): a refused SUBSCRIBE says so here.
    last_error: str


class Outages:
    """One process's outages (or, on the master, everyone's); bounded by :data:`MAX_OUTAGES`."""

    def __init__(self, process: str = "") -> None:
        self.process = process
        self.records: list[Outage] = []
        #: Outages not kept once :data:`MAX_OUTAGES` were.
        self.overflow = 0
        #: Records not yet shipped: closed ones go with any report, open ones only with the final one.
        self._unshipped: list[Outage] = []
        #: Called with each outage as it ends, where it happened (not again when merged on the master).
        self.listeners: list[Callable[[Outage], None]] = []

    def clear(self) -> None:
        """A new test: nothing recorded (the listeners stay)."""
        self.records, self.overflow, self._unshipped = [], 0, []

    def add(self, outage: Outage) -> bool:
        if len(self.records) >= MAX_OUTAGES:
            self.overflow += 1
            return False
        self.records.append(outage)
        self._unshipped.append(outage)
        return True

    def closed(self, outage: Outage) -> None:
        """``outage`` is over, in the process that saw it: tell the listeners (an InfluxDB annotation)."""
        for listener in self.listeners:
            listener(outage)

    def drain(self, final: bool) -> list[Outage]:
        """Outages that are over (every one at the end), each shipped once."""
        ready = [o for o in self._unshipped if final or o["first_ok_ns"] != NONE]
        self._unshipped = [o for o in self._unshipped if not (final or o["first_ok_ns"] != NONE)]
        return ready

    def merge(self, outages: Iterable[Outage]) -> None:
        for outage in outages:
            self.add(outage)


class Availability:
    """One client's connection history; the User calls it as its connection drops and comes back."""

    def __init__(self, outages: Outages, role: str, destination: str, client: str) -> None:
        self._outages, self.role, self.destination, self.client = outages, role, destination, client
        #: The outage that has not ended yet (None: connected and working, or never connected).
        self.current: Outage | None = None

    @property
    def pending(self) -> bool:
        """Reconnected but no good operation yet: the caller should report the next one."""
        current = self.current
        return current is not None and current["reconnected_ns"] != NONE

    def lost(self, last_ok_ns: int, lost_ns: int) -> None:
        """The connection dropped at ``lost_ns``; ``last_ok_ns`` is the last good operation (-1: none)."""
        outage = Outage(role=self.role, destination=self.destination, client=self.client,
                        process=self._outages.process, last_ok_ns=last_ok_ns, lost_ns=lost_ns, refused=0,
                        last_refused_ns=NONE, reconnected_ns=NONE, first_ok_ns=NONE, last_error="")  # fmt: skip
        self.current = outage if self._outages.add(outage) else None

    def refused(self, attempt_ns: int, error: str) -> None:
        """A reconnect attempt started at ``attempt_ns`` failed with ``error``."""
        current = self.current
        if current is not None:
            current["refused"] += 1
            current["last_refused_ns"], current["last_error"] = attempt_ns, error

    def reconnected(self, at_ns: int) -> None:
        if self.current is not None:
            self.current["reconnected_ns"] = at_ns

    def back(self, first_ok_ns: int) -> None:
        """The first good operation after the reconnect: the outage is over."""
        current = self.current
        if current is not None and current["reconnected_ns"] != NONE and first_ok_ns >= current["reconnected_ns"]:
            current["first_ok_ns"] = first_ok_ns
            self.current = None
            self._outages.closed(current)


def window_start(outage: Outage) -> int:
    """The last good operation before the drop, or the drop itself for a client that had none."""
    return outage["last_ok_ns"] if outage["last_ok_ns"] != NONE else outage["lost_ns"]


def window_ns(outage: Outage, end_ns: int) -> int:
    """The outage's unavailability window (to ``end_ns`` when the client never came back)."""
    end = outage["first_ok_ns"] if outage["first_ok_ns"] != NONE else end_ns
    return max(0, end - window_start(outage))


def after_ready_ns(outage: Outage) -> int | None:
    """Upper bound of the time from the broker's readiness to the reconnect; None: not reconnected."""
    if outage["reconnected_ns"] == NONE:
        return None
    since = max(outage["lost_ns"], outage["last_refused_ns"])
    return max(0, outage["reconnected_ns"] - since)


@dataclass
class DestinationFailover:
    """One destination's outages, as the report shows them."""

    destination: str
    outages: int = 0
    reconnects: int = 0
    refused: int = 0
    unrecovered: int = 0
    window_max_ms: dict[str, float] = field(default_factory=dict)
    reconnect_max_ms: float | None = None
    after_ready_max_ms: float | None = None

    def document(self) -> dict[str, Any]:
        return {"destination": self.destination, "outages": self.outages, "reconnects": self.reconnects,
                "refused_attempts": self.refused, "unrecovered": self.unrecovered,
                "window_max_ms": self.window_max_ms, "reconnect_max_ms": self.reconnect_max_ms,
                "after_ready_max_ms": self.after_ready_max_ms}  # fmt: skip


def _top(current: float | None, value: float) -> float:
    return value if current is None else max(current, value)


def summarize(outages: Sequence[Outage], end_ns: int) -> list[DestinationFailover]:
    """Per destination: counts, and the worst window per role, reconnect and after-ready bound."""
    rows: dict[str, DestinationFailover] = {}
    for outage in outages:
        row = rows.setdefault(outage["destination"], DestinationFailover(outage["destination"]))
        row.outages += 1
        row.refused += outage["refused"]
        if outage["first_ok_ns"] == NONE:
            row.unrecovered += 1
        role = outage["role"]
        row.window_max_ms[role] = _top(row.window_max_ms.get(role), window_ns(outage, end_ns) / 1e6)
        ready = after_ready_ns(outage)
        if ready is not None:
            row.reconnects += 1
            row.reconnect_max_ms = _top(row.reconnect_max_ms, (outage["reconnected_ns"] - outage["lost_ns"]) / 1e6)
            row.after_ready_max_ms = _top(row.after_ready_max_ms, ready / 1e6)
    return [rows[d] for d in sorted(rows)]


def windows(outages: Sequence[Outage], end_ns: int) -> dict[str, list[tuple[int, int]]]:
    """Per destination, the union of its clients' windows as (start_ns, end_ns), in time order."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for outage in outages:
        start = window_start(outage)
        spans.setdefault(outage["destination"], []).append((start, start + window_ns(outage, end_ns)))
    merged: dict[str, list[tuple[int, int]]] = {}
    for destination, items in spans.items():
        union: list[tuple[int, int]] = []
        for start, end in sorted(items):
            if union and start <= union[-1][1]:
                union[-1] = (union[-1][0], max(union[-1][1], end))
            else:
                union.append((start, end))
        merged[destination] = union
    return merged


def latency_split(
    buckets: Mapping[int, Traffic], spans: Sequence[tuple[int, int]], width_s: int
) -> dict[str, dict[str, Any]]:
    """Receive latency (ms) in the series buckets touching a window (or its aftermath) and in the others."""
    during: Counter[int] = Counter()
    outside: Counter[int] = Counter()
    for t, traffic in buckets.items():
        start, end = t * 1_000_000_000, (t + width_s) * 1_000_000_000
        touched = any(start < s_end + AFTERMATH_S * 1_000_000_000 and s_start < end for s_start, s_end in spans)
        (during if touched else outside).update(traffic.slots())
    return {"during": _latency(during), "outside": _latency(outside)}


def _latency(slots: Counter[int]) -> dict[str, Any]:
    figures: dict[str, Any] = {"count": sum(slots.values())}
    for key, percentile in {**SERIES_PERCENTILES, "max_ms": 100.0}.items():
        micros = percentile_of(slots, percentile)
        figures[key] = None if micros is None else micros / 1000.0
    return figures


def describe(outage: Outage, end_ns: int) -> str:
    """One line for an outage: who, how long without service, how the reconnect went."""
    window = window_ns(outage, end_ns) / 1e9
    who = f"{outage['destination']}: {outage['role']} {outage['client']}"
    if outage["reconnected_ns"] == NONE:
        why = f": {outage['last_error']}" if outage["last_error"] else ""
        return f"{who} lost its connection and never got it back ({outage['refused']} refused attempts{why})"
    if outage["first_ok_ns"] == NONE:
        why = f" (last refusal: {outage['last_error']})" if outage["last_error"] else ""
        return f"{who} reconnected but did not work again before the end{why}"
    reconnect = (outage["reconnected_ns"] - outage["lost_ns"]) / 1e9
    return f"{who} {window:.2f} s without service, reconnected in {reconnect:.2f} s after {outage['refused']} refusals"
