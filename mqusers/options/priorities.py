"""Message priorities: which priority each message carries, a function of its seq alone.

``--mq-priorities K`` (2 to 10): a producer's message ``seq`` has level ``seq mod K`` (so each
level's share is exact, and whoever knows a message's seq knows its priority without another
header read), sent as the STOMP ``priority`` header spread over JMS's 0 to 9 (K = 3: 0, 4, 9,
KahaDB's three categories low, default and high; K = 10: 0 to 9). 0 or absent: no priority header.
"""

from __future__ import annotations

from mqusers.options.parsing import OptionError, whole

PRIORITY = "priority"
MAX_LEVELS = 10
#: JMS's highest priority; RabbitMQ's priority queues are declared with it as their maximum.
TOP = 9

_whole = whole(MAX_LEVELS)


def parse_priorities(value: str, option: str = "--mq-priorities") -> int:
    """0 (none) or a number of levels from 2 to 10."""
    levels = _whole(value, option)
    if levels == 1:
        raise OptionError(f"{option}: 1 level is no priority at all: give 2 to {MAX_LEVELS}, or 0 for none")
    return levels


def level_of(seq: int, levels: int) -> int:
    """The level (0: lowest) of message ``seq``."""
    return seq % levels


def value_of(level: int, levels: int) -> int:
    """The ``priority`` header's value of ``level`` of ``levels``."""
    return level * TOP // (levels - 1)
