"""Whether a run JSON can serve as a baseline, and the words of why not, on hand-made run documents."""

from __future__ import annotations

from typing import Any

import pytest

from mqusers.report.baselinefit import MISSING, UNFIT_VERDICTS, BaselineFit, baseline_fit
from mqusers.report.build import AUDIT_KEYS
from mqusers.run.verdicts import VERDICTS


def run(generator: str = "ok", seconds: float = 30.4, ended_by: str = "time", lost_workers: int = 0,
        **audit: int) -> dict[str, Any]:  # fmt: skip
    """A run JSON's parts the rule reads: two destinations (the audit's figures on the second), times, verdict."""
    clean = {"lost": 0, "unreceived": 0, "worker_lost": 0, "aborted": 0}
    rows = [{"destination": "/queue/a", **clean}, {"destination": "/queue/b", **clean, **audit}]
    return {"kind": "run", "generator": {"verdict": generator}, "destinations": rows, "ended_by": ended_by,
            "started": 1_796_513_000.0, "stopped": 1_796_513_000.0 + seconds,
            "lost_workers": [{"worker": f"w{n}"} for n in range(1, lost_workers + 1)]}  # fmt: skip


def test_the_rule_reads_the_keys_the_run_json_has() -> None:
    assert set(UNFIT_VERDICTS) < set(VERDICTS) and set(MISSING) < set(AUDIT_KEYS)


@pytest.mark.parametrize(
    ("document", "reasons"),
    [
        (run(), []),
        (run("broker-slow"), []),  # the broker's figures: a fair baseline
        (run(aborted=40), []),  # an aborted transaction's messages were never expected
        (run(seconds=28.6), []),  # 95 % of -t 30 s is 28.5 s
        (run(lost=3, unreceived=2, worker_lost=1), ["6 messages lost or never received"]),
        (run(unreceived=1), ["1 message lost or never received"]),
        (run("contended"), ["generator contended"]),
        (run("saturated", lost=2), ["2 messages lost or never received", "generator saturated"]),
        (run(ended_by="interrupt", seconds=4.0), ["ended early: interrupted (Ctrl-C or SIGTERM)"]),
        (run(ended_by="quit"), ["ended early: Locust quit (an unhandled error)"]),
        (run(seconds=20.0), ["ended early: 20.0 s of its 30 s (-t)"]),
        (run(ended_by="count", seconds=3.0), []),  # a fixed count ends when every message is sent
        (run(lost_workers=2), ["ended early: workers w1, w2 lost mid-test"]),
    ],
)
def test_a_run_is_a_baseline_unless_it_lost_messages_its_generator_measured_itself_or_it_ended_early(
    document: dict[str, Any], reasons: list[str]
) -> None:
    found = baseline_fit(document, 30.0)
    assert found.reasons == reasons and found.fit == (not reasons)
    assert found.text() == (f"not a baseline: {'; '.join(reasons)}" if reasons else "can be a baseline")
    assert found.as_dict()["reasons"] == reasons and found.as_dict()["fit"] == (not reasons)


def test_without_its_planned_time_only_the_way_it_ended_says_early_and_an_old_json_is_read() -> None:
    assert baseline_fit(run(seconds=2.0)).fit  # compare and the gate do not know the baseline's -t
    assert not baseline_fit(run(seconds=2.0, ended_by="interrupt")).fit
    assert baseline_fit({"kind": "run"}) == BaselineFit(0, "ok", "")  # no generator, audit or times saved
    assert BaselineFit(lost=2, generator="contended").held == []
    assert BaselineFit(generator="broker-slow").held == ["nothing lost", "generator broker-slow"]
