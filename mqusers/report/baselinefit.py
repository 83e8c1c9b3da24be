"""Can this run be a baseline, and if not why: messages lost, a contended or saturated generator, an early end.

One rule for every command that holds a run against others (``mqusers repeat`` marks each run with
it; ``mqusers compare`` and the regression gate can ask it of their BASE): a difference against a
baseline that lost messages, whose figures are its generator's rather than the broker's, or that
stopped before its time, says more about that baseline than about the run compared with it. Pure:
it reads one run JSON (``--mq-report-json``'s) and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: The generator's verdicts (:mod:`mqusers.run.verdicts`) whose latency figures are the generator's or the
#: machine's, not the broker's; ``broker-slow`` is the broker's own, a fair baseline.
UNFIT_VERDICTS = ("contended", "saturated")
#: The audit's counts of expected messages that never arrived (a destination row's keys). ``aborted`` is
#: not among them: an aborted transaction's messages were never expected.
MISSING = ("lost", "unreceived", "worker_lost")
#: ``ended_by`` values of a run that stopped before its time, in words.
EARLY_ENDINGS = {"interrupt": "interrupted (Ctrl-C or SIGTERM)", "quit": "Locust quit (an unhandled error)"}
#: A run ended by time that lasted less than this share of its ``-t`` stopped early (its test start to its
#: stop includes the drain, so a full run lasts at least its -t, less a few ms of start-up).
SHORT_FRACTION = 0.95


@dataclass(frozen=True)
class BaselineFit:
    """A run's verdicts as a baseline: what it lost, its generator's verdict, how it ended early ("" if not)."""

    lost: int = 0
    generator: str = "ok"
    ended_early: str = ""

    @property
    def reasons(self) -> list[str]:
        """Why it cannot be a baseline, each in a few words (empty: it can)."""
        reasons = [_lost_words(self.lost)] if self.lost else []
        if self.generator in UNFIT_VERDICTS:
            reasons.append(f"generator {self.generator}")
        return reasons + ([f"ended early: {self.ended_early}"] if self.ended_early else [])

    @property
    def fit(self) -> bool:
        return not self.reasons

    @property
    def held(self) -> list[str]:
        """The verdicts that do not stand against it, in the same words ("nothing lost", "generator ok")."""
        held = [] if self.lost else ["nothing lost"]
        return held + ([] if self.generator in UNFIT_VERDICTS else [f"generator {self.generator}"])

    def text(self) -> str:
        return verdict_text(self.reasons)

    def as_dict(self) -> dict[str, Any]:
        return {"fit": self.fit, "reasons": self.reasons, "lost": self.lost, "generator": self.generator,
                "ended_early": self.ended_early or None, "text": self.text()}  # fmt: skip


def verdict_text(reasons: list[str]) -> str:
    """One line: "can be a baseline", or "not a baseline: " and every reason."""
    return f"not a baseline: {'; '.join(reasons)}" if reasons else "can be a baseline"


def _lost_words(count: int) -> str:
    return f"{count:,} message{'s' if count != 1 else ''} lost or never received"


def baseline_fit(document: Mapping[str, Any], run_time_s: float | None = None) -> BaselineFit:
    """The verdicts of one run JSON; ``run_time_s``, its planned ``-t`` when known (the JSON does not keep it)."""
    rows = [row for row in document.get("destinations") or [] if isinstance(row, Mapping)]
    lost = sum(int(row.get(key) or 0) for row in rows for key in MISSING)
    generator = str((document.get("generator") or {}).get("verdict") or "ok")
    return BaselineFit(lost, generator, _ended_early(document, run_time_s))


def unfit_reasons(document: dict[str, Any]) -> list[str]:
    """Why a run's document cannot be a baseline (empty: it can), as ``load_runs``' ``inspect`` asks."""
    return baseline_fit(document).reasons


def _ended_early(document: Mapping[str, Any], run_time_s: float | None) -> str:
    ended_by = str(document.get("ended_by") or "")
    if ended_by in EARLY_ENDINGS:
        return EARLY_ENDINGS[ended_by]
    workers = [str(w.get("worker", "?")) for w in document.get("lost_workers") or [] if isinstance(w, Mapping)]
    if workers:
        return f"worker{'s' if len(workers) > 1 else ''} {', '.join(workers)} lost mid-test"
    started, stopped = document.get("started"), document.get("stopped")
    # A run that ended when every message was sent (a fixed count) ends before its -t by design.
    if ended_by == "count" or not run_time_s or started is None or stopped is None:
        return ""
    lasted = float(stopped) - float(started)
    return f"{lasted:.1f} s of its {run_time_s:g} s (-t)" if lasted < SHORT_FRACTION * run_time_s else ""
