"""The warm-up left out: every message sent before its end, wherever and whenever it arrives.

Senders and receivers leave out each message stamped as sent before the instant (its send,
receipt, round trip, receives), the recorder anything else recorded before it (schedule lag);
events fired one by one (failures, other requests) are left out until the window opens.
Workers move to the master's instant when its go arrives (:mod:`mqusers.coordination.messages`).
"""

from __future__ import annotations

from locust.env import Environment

import time

import gevent

from mqusers.run.context import RunContext


def start_warmup(environment: Environment, ctx: RunContext) -> None:
    """This test's measured window: from ``--mq-warmup`` seconds after now (from now without one)."""
    warmup = ctx.settings.warmup
    ctx.book.recording = ctx.series.recording = ctx.intervals.recording = not warmup
    measured_from_ns = time.time_ns() + round(warmup * 1e9) if warmup else 0
    ctx.recorder.measure_from(measured_from_ns, (lambda: end_warmup(environment, ctx)) if warmup else None)
    if warmup:
        # Opens the window with no traffic too; 1 ms late so that a timer firing a hair early still does.
        gevent.spawn_later(warmup + 0.001, ctx.recorder.flush)
    if ctx.coordinator is not None:  # distributed: workers take the master's instant with the go
        ctx.coordinator.measured_from_ns = measured_from_ns
        ctx.coordinator.follower.on_measured_from = ctx.recorder.move_measured_from


def end_warmup(environment: Environment, ctx: RunContext) -> None:
    """The window opens (the recorder calls it before handing on any of the window's samples)."""
    ctx.book.recording = ctx.series.recording = ctx.intervals.recording = True
    # Locust's tables leave the warm-up out too, as --reset-stats does at the end of spawning: one story.
    environment.stats.reset_all()
