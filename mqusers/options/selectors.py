"""Message selectors: the label each producer stamps on its messages and the selector each consumer subscribes with.

``--mq-labels N``: producer user ``i`` (its ordinal in its process) stamps every message with the
header ``mqlabel: L<i mod N>``, which ActiveMQ and Artemis make a message property. ``--mq-select``
says which labels the consumers' selectors take:

- ``all``: every label, through a selector (``mqlabel IN ('L0', ...)``): the cost of evaluating a
  selector with nothing filtered out, against the same run without one;
- ``own``: consumer ``j`` takes ``L<j mod N>`` only (consumers partition the producers);
- ``L0,L2``: every consumer takes these; the other labels' messages are *not selected*;
- ``none``: no selector, the baseline of a selector's cost (as if not given).

A label belongs to a producer, so whether a subscription expects a producer's messages is all or
nothing, and the audit stays exact (:mod:`mqusers.audit.audit`).
"""

from __future__ import annotations

import re

from mqusers.options.parsing import OptionError

HEADER = "mqlabel"
MAX_LABELS = 1_000
_LABEL = re.compile(r"L(\d{1,4})")


def parse_select(value: str, option: str = "--mq-select") -> str:
    """``all``, ``own``, ``none`` or a comma-separated list of labels ``L<k>``, each once."""
    if value in ("all", "own", "none"):
        return value
    labels = value.split(",")
    if any(not _LABEL.fullmatch(label) for label in labels):
        raise OptionError(f"{option}: {value!r} is not all, own, none or labels such as L0,L2")
    if len(set(labels)) != len(labels):
        raise OptionError(f"{option}: {value!r} names a label twice")
    return value


def check(labels: int, select: str | None, option: str = "--mq-select") -> None:
    """Refuse a selection the labels cannot satisfy (one line)."""
    if select in (None, "none"):
        return
    if not labels:
        raise OptionError(f"{option}: consumers select by label, so producers need labels: add --mq-labels N")
    if select in ("all", "own"):
        return
    beyond = [label for label in select.split(",") if int(label[1:]) >= labels]
    if beyond:
        raise OptionError(f"{option}: {beyond[0]} is not one of the {labels} labels L0 to L{labels - 1}")


def label_of(ordinal: int, labels: int) -> str:
    """The label producer user ``ordinal`` stamps."""
    return f"L{ordinal % labels}"


def selected(select: str | None, labels: int, ordinal: int) -> tuple[str, ...] | None:
    """The labels consumer user ``ordinal``'s selector takes; None: it has no selector."""
    if select in (None, "none"):
        return None
    if select == "all":
        return tuple(f"L{k}" for k in range(labels))
    if select == "own":
        return (label_of(ordinal, labels),)
    return tuple(select.split(","))


def expression(labels: tuple[str, ...]) -> str:
    """The SQL-92 selector (JMS syntax) that takes exactly ``labels``."""
    return f"{HEADER} IN ({', '.join(repr(label) for label in labels)})"
