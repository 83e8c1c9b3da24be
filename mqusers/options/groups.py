"""Message groups: the group (``JMSXGroupID``) each producer user stamps on all of its messages.

``--mq-groups N``: producer user ``i`` (its ordinal in its process) sends every message in group
``mqusers.g<i mod N>``. ActiveMQ and Artemis then give each group's messages to one consumer at a
time, in order; the audit checks both (:mod:`mqusers.audit.groupaudit`).
"""

from __future__ import annotations

HEADER = "JMSXGroupID"
MAX_GROUPS = 100_000


def group_of(ordinal: int, groups: int) -> str:
    """The group producer user ``ordinal`` sends in."""
    return f"mqusers.g{ordinal % groups}"
