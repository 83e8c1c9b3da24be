"""The regression gate's options: ``--mq-gate-regression 'p99:10%,throughput:5%'`` and ``--mq-baseline PATH``.

The figures' names are :data:`mqusers.stats.figures.FIGURES` (a unit test holds the two equal: options
sit below the statistics). The baseline's runs are read, and refused when they cannot be compared, by
:func:`mqusers.wiring.admission.baseline_problem` before any load.
"""

from __future__ import annotations

import re

from mqusers.options.parsing import OptionError

GATE_FIGURES = ("throughput", "p50", "p90", "p99", "p99.9")
_ITEM_RE = re.compile(r"(?P<figure>[a-z0-9.]+)\s*:\s*(?P<percent>\d+(?:\.\d+)?)\s*%?")


def parse_regressions(text: str, option: str) -> tuple[tuple[str, float], ...]:
    """``figure:percent`` items, comma-separated: each figure once, the threshold a fraction from 0 to 10 (1,000 %)."""
    found: dict[str, float] = {}
    for item in (part.strip() for part in text.split(",")):
        match = _ITEM_RE.fullmatch(item)
        if match is None or match["figure"] not in GATE_FIGURES:
            raise OptionError(f"{option}: {item!r} is not FIGURE:PERCENT, FIGURE one of {', '.join(GATE_FIGURES)} "
                              "(e.g. p99:10%,throughput:5%)")  # fmt: skip
        if match["figure"] in found:
            raise OptionError(f"{option}: {match['figure']} is given twice")
        percent = float(match["percent"])
        if percent > 1000:
            raise OptionError(f"{option}: {item!r}: at most 1000 %")
        found[match["figure"]] = percent / 100.0
    return tuple(found.items())


def parse_baseline(path: str, option: str) -> str:
    """A run JSON or a folder of them; read, and refused in one line when it cannot be compared, before any load
    (:func:`mqusers.wiring.admission.baseline_problem`: reading it needs the statistics, a layer above)."""
    if not path.strip():
        raise OptionError(f"{option}: give a run JSON or a folder of them")
    return path
