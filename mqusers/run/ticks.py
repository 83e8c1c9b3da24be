"""What runs every so often while a test runs: the recorder's flush, and a single process's ledger folds.

Every ``FLUSH_EVERY_S`` the recorder hands its successes to the book, Locust's stats (the web UI)
and the sinks; every ``TRIM_EVERY_TICKS`` flushes Locust's per-second counts are trimmed to the
last minute (the master's too: it merges every worker's), and so is its chart history where nothing
draws it. A process without a master folds its ledgers into its audit every ``MERGE_EVERY_S``, so
they never grow with messages.
"""

from __future__ import annotations

from locust.env import Environment

import itertools
import time

import gevent

from mqusers.run.context import FLUSH_EVERY_S, RunContext
from mqusers.run.locust_stats import history_drawn, trim_history, trim_per_second

#: Locust's per-second counts are trimmed every this many flushes (10 s).
TRIM_EVERY_TICKS = 50
#: A single process folds its ledgers into the audit this often, so they never grow with messages.
MERGE_EVERY_S = 1.0


def flush_every(environment: Environment, ctx: RunContext) -> None:
    """Recorded successes to the book, Locust's stats (the web UI) and the sinks; now and then Locust's
    per-second counts trimmed to the last minute."""
    drawn = history_drawn(environment.parsed_options)
    for tick in itertools.count(1):
        gevent.sleep(FLUSH_EVERY_S)
        ctx.recorder.flush()
        if tick % TRIM_EVERY_TICKS == 0:
            trim_per_second(environment.stats, int(time.time()))
            if not drawn:
                trim_history(environment.stats)


def fold_ledgers_every_second(ctx: RunContext) -> None:
    while True:
        gevent.sleep(MERGE_EVERY_S)
        ctx.fold_ledgers()
