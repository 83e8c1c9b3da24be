"""A backlog run's build in the test's life: its phases made and watched at test start, switched at the end.

The build counts this run's sends from the book (with ``--mq-receipts true``: the broker's RECEIPTs,
so the backlog is what the broker confirmed holding); :mod:`mqusers.run.backlog` decides the switch.
"""

from __future__ import annotations

import gevent

from mqusers.measure.names import RECEIPT, SEND, split_event_name
from mqusers.run.backlog import BY_COUNT, BY_END, Phases, watch
from mqusers.run.context import RunContext


def sent_so_far(ctx: RunContext) -> int:
    """This run's messages sent so far (confirmed, with receipts)."""
    ctx.recorder.flush()
    operation = RECEIPT if ctx.settings.receipts else SEND
    return sum(t.count for name, t in ctx.book.tallies.items() if split_event_name(name)[0] == operation)


def start(ctx: RunContext) -> None:
    """A backlog run (``--mq-backlog-messages`` / ``--mq-backlog-seconds``): its phases, watched; else none."""
    settings = ctx.settings
    ctx.backlog = None
    if settings.backlog_messages or settings.backlog_seconds:
        ctx.backlog = Phases(
            settings.backlog_messages,
            settings.backlog_seconds,
            drain_rate=settings.backlog_drain_rate,
            announce=lambda text, ts_ns: ctx.annotate("phase", text, ts_ns),
        )
        gevent.spawn(watch, ctx.backlog, lambda: sent_so_far(ctx))
    ctx.health.blocked.on_episode = ctx.backlog.figures.blocked_send if ctx.backlog is not None else None


def end_build(ctx: RunContext) -> None:
    """The run ends while building: its drain is the backlog's."""
    if ctx.backlog is not None and not ctx.backlog.gate.is_set():
        sent, wanted = sent_so_far(ctx), ctx.backlog.figures.messages
        # A run ended by its count (--mq-total-messages) may end before the watch saw the build's count.
        ctx.backlog.switch(sent, BY_COUNT if wanted and sent >= wanted else BY_END)


def stop(ctx: RunContext) -> None:
    """The test is over: a paced drain's greenlet ends."""
    if ctx.backlog is not None and ctx.backlog.pace is not None:
        ctx.backlog.pace.stop()
