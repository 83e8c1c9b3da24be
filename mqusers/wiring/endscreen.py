"""The end of a run on the screen: what ran, mqusers' summary printed last, every file written.

:func:`mqusers.wiring.runreport.write_report` leaves a :class:`Summary` on the run's context; a headless
run prints it on Locust's ``quit`` event, after Locust's own final tables, so the last screen a user
reads is mqusers' (a web UI run prints it when its test stops).
"""

from __future__ import annotations

from locust.env import Environment

import logging
import os
from dataclasses import dataclass
from typing import Any

from mqusers.report.build import RunReport
from mqusers.report.reportformats import format_summary
from mqusers.run.context import RunContext, context
from mqusers.users import payloads

logger = logging.getLogger("mqusers.wiring.lifecycle")  # the gate lines keep the logger they always had
_summary_logger = logging.getLogger("locust.stats_logger")


@dataclass(frozen=True)
class Summary:
    """A report waiting to be printed (:func:`print_summary`), with the files written and the gates failed."""

    report: RunReport
    written: list[str]
    failures: list[str]


def locustfile_names(environment: Environment) -> str:
    """The run's locustfiles by file name (``-f`` may give several, comma-separated)."""
    paths = getattr(environment.parsed_options, "locustfile", None) or ""
    return ",".join(os.path.basename(p) for p in str(paths).split(",") if p)


def scenario_of(environment: Environment, ctx: RunContext) -> dict[str, Any]:
    """What ran, for the summary's first lines and the JSON's ``scenario``."""
    runner = environment.runner
    users = dict(runner.target_user_classes_count) if runner is not None else {}
    classes = environment.user_classes
    return {"locustfile": locustfile_names(environment),
            "server": ctx.broker_server, "users": {name: n for name, n in users.items() if n},
            "rate": rate_asked(classes, ctx.settings), "size": message_size(classes),
            "payload": payload_of(classes, ctx.settings)}  # fmt: skip


def rate_asked(user_classes: list[type], settings: Any) -> str:
    """The send rate asked, in words: run-wide, per producer (the option or each class's own), or unpaced."""
    if settings.profile is not None:
        return f"profile {settings.profile} asked in all (peak {settings.profile.peak:,g} msg/s)"
    if settings.total_rate:
        return f"{settings.total_rate:,g} msg/s asked in all"
    if settings.total_messages:  # the shared schedule, unpaced: the classes' own rates do not apply
        return f"producers unpaced, {settings.total_messages:,} messages in all"
    if settings.rate is not None:
        return f"{settings.rate:,g} msg/s asked per producer" if settings.rate else "producers unpaced"
    rates = {c.__name__: getattr(c, "rate", 0) for c in user_classes if getattr(c, "role", "") == "producer"}
    paced = [f"{name} {r:,g} msg/s" for name, r in sorted(rates.items()) if r]
    return f"asked {', '.join(paced)} each" if paced else "producers unpaced" if rates else ""


def message_size(user_classes: list[type]) -> int | None:
    """The producers' message size (bytes) when they all have one; None when they differ (or none)."""
    sizes = {getattr(c, "message_size", None) for c in user_classes if getattr(c, "role", "") == "producer"}
    return sizes.pop() if len(sizes) == 1 else None


def payload_of(user_classes: list[type], settings: Any) -> str | None:
    """The producers' messages in words (``1,024 B json messages``) when they all send the same kind; else None."""
    producers = [c for c in user_classes if getattr(c, "role", "") == "producer"]
    specs = {settings.payload or getattr(c, "payload", None) for c in producers}
    size = settings.size or message_size(user_classes)
    spec = specs.pop() if len(specs) == 1 else None
    if spec is None or (spec.sized and size is None):
        return None
    return payloads.describe(spec, size or 0, settings.size_dist, settings.profile)


def quits_after(environment: Environment) -> bool:
    """Headless (or --autoquit): the summary waits for Locust's final tables, so it is the last thing printed."""
    options = environment.parsed_options
    return bool(options is not None and (options.headless or getattr(options, "autoquit", -1) != -1))


def print_summary(environment: Environment, **_: Any) -> None:
    """The run's summary, its gate failures and every file written: after Locust's own final tables when
    Locust quits (its ``quit`` event), so a user reads mqusers' figures last."""
    ctx = context(environment)
    summary, ctx.summary = ctx.summary, None
    if summary is None:
        return
    files = [_shown(path) for path in [*summary.written, *locust_files(environment.parsed_options)]]
    _summary_logger.info("\n%s\n", format_summary(summary.report, files))
    for failure in summary.failures:
        logger.error("mqusers: gate failed: %s", failure)


def locust_files(options: Any) -> list[str]:
    """The files Locust itself wrote (--csv, --html, --json-file) that exist now."""
    if options is None:
        return []
    paths = [getattr(options, "html_file", None), getattr(options, "json_file", None)]
    if prefix := getattr(options, "csv_prefix", None):
        paths += [f"{prefix}_{kind}.csv" for kind in ("stats", "stats_history", "failures", "exceptions")]
    return [path for path in paths if path and os.path.exists(path)]


def _shown(path: str) -> str:
    """A path as short as it is unambiguous: relative when it is under the working directory."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative
