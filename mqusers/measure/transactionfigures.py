"""The run's transactions: committed and aborted (each answered by the broker's RECEIPT or not), transactions/s.

Pure: reads the book's ``commit`` and ``abort`` tallies (each COMMIT or ABORT is one, timed from its
write to its RECEIPT; a failure is one that went unanswered or was refused) and the audit's per-destination
``aborted`` and ``aborted_delivered``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from mqusers.measure.book import Tally
from mqusers.measure.names import ABORT, COMMIT, split_event_name


class Transactions(TypedDict):
    """The JSON report's ``transactions``."""

    #: COMMITs the broker's RECEIPT answered, and those it did not (refused, none in time, connection cut).
    committed: int
    commit_failed: int
    #: ABORTs answered, and not: either way their messages must never arrive.
    aborted: int
    abort_failed: int
    #: Transactions ended (COMMIT or ABORT answered) per second, from the first end to the last.
    per_s: float
    #: Messages of aborted or rolled-back transactions (the audit's), and those delivered anyway.
    messages_aborted: int
    aborted_delivered: int


def transaction_figures(tallies: Mapping[str, Tally], rows: Iterable[Mapping[str, Any]]) -> Transactions | None:
    """``rows``: the report's destination rows (their audit figures); None for a run without transactions."""
    ends = {COMMIT: Tally(), ABORT: Tally()}
    for name, tally in tallies.items():
        operation = split_event_name(name)[0]
        if operation in ends:
            ends[operation].add(tally)
    if not any(t.count for t in ends.values()):
        return None
    both = Tally()
    for tally in ends.values():
        both.add(tally)
    done = both.count - both.failures
    span = both.last - both.first
    seen = list(rows)
    return Transactions(
        committed=ends[COMMIT].count - ends[COMMIT].failures,
        commit_failed=ends[COMMIT].failures,
        aborted=ends[ABORT].count - ends[ABORT].failures,
        abort_failed=ends[ABORT].failures,
        per_s=round(done / span, 1) if span > 0 else float(done),
        messages_aborted=sum(row.get("aborted", 0) for row in seen),
        aborted_delivered=sum(row.get("aborted_delivered", 0) for row in seen),
    )
