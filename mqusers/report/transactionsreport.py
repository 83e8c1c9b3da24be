"""A run's transactions in words: its sentence (transactions/s, committed, aborted) and the violation's line.

Reads the report's :class:`~mqusers.measure.transactionfigures.Transactions` and its rows' audit figures;
the same line is a note under the tables and a failed gate (a delivered aborted message always fails).
"""

from __future__ import annotations

from collections.abc import Mapping

from mqusers.measure.transactionfigures import Transactions


def aborted_delivered(audits: Mapping[str, Mapping[str, int]]) -> list[str]:
    """A line per destination that delivered messages of aborted transactions."""
    return [f"{destination}: {audit['aborted_delivered']:,} messages of aborted transactions delivered (of "
            f"{audit['aborted']:,} aborted): the broker did not hold the ABORT"
            for destination, audit in audits.items() if audit.get("aborted_delivered")]  # fmt: skip


def transactions_sentence(t: Transactions | None) -> list[str]:
    """The summary's sentence, for a run whose producers sent in transactions."""
    if t is None:
        return []
    unanswered = t["commit_failed"] + t["abort_failed"]
    return [f"transactions: {t['committed'] + t['aborted']:,} ended ({t['per_s']:,.1f}/s): {t['committed']:,} "
            f"committed, {t['aborted']:,} aborted, {unanswered:,} COMMIT or ABORT without the broker's receipt; "
            f"{t['messages_aborted']:,} messages aborted, {t['aborted_delivered']:,} of them delivered"]  # fmt: skip
