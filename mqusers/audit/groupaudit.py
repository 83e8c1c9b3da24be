"""Message groups, judged: a group's messages go to one consumer at a time, until it leaves.

Each producer's messages carry one group (``JMSXGroupID``, :mod:`mqusers.options.groups`); each
subscription ships, per producer, when it received the first and the last of them. Per group, the
subscriptions that had it are ordered by their first delivery: when one's first delivery of the
group came before another's last, two consumers had the group at once.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

#: (group, subscription key, first receive ns, last receive ns), times on one clock.
Span = tuple[str, str, int, int]


def judge(spans: Iterable[Span]) -> tuple[int, int]:
    """How many groups were delivered, and how many of them two subscriptions had at once."""
    by_group: dict[str, dict[str, list[int]]] = {}
    for group, key, first, last in spans:
        span = by_group.setdefault(group, {}).setdefault(key, [first, last])
        span[0], span[1] = min(span[0], first), max(span[1], last)
    split = 0
    for subscriptions in by_group.values():
        ordered = sorted(subscriptions.values())
        if any(later[0] <= earlier[1] for earlier, later in itertools.pairwise(ordered)):
            split += 1
    return len(by_group), split
