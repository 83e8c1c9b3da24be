"""The open-file check's arithmetic and decisions, on a stand-in for getrlimit/setrlimit."""

from __future__ import annotations

import resource
from dataclasses import replace
from types import SimpleNamespace

import pytest

from mqusers.measure.book import Book
from mqusers.options.settings import Settings
from mqusers.report.build import RunFacts, build_report
from mqusers.run.ending import DrainOutcome
from mqusers.stomp.transport import OUT_OF_FILES
from mqusers.wiring import fdlimit


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """RLIMIT_NOFILE as a list: its last entry is the current (soft, hard); setrlimit appends."""
    current = [(256, 2048)]
    monkeypatch.setattr(resource, "getrlimit", lambda _: current[-1])
    monkeypatch.setattr(resource, "setrlimit", lambda _, value: current.append(tuple(value)))
    monkeypatch.setattr(fdlimit, "open_now", lambda: 10)
    return current


def test_a_process_needs_what_it_has_open_a_file_per_user_and_a_margin() -> None:
    assert fdlimit.files_needed(100, 10) == 10 + 100 + 64
    assert fdlimit.files_needed(10_000, 10) == 10 + 10_000 + 500  # 5 % beyond the fixed margin
    assert [fdlimit.per_process(400, n) for n in (0, 1, 2, 3)] == [400, 400, 200, 134]


def test_the_soft_limit_is_raised_when_the_hard_one_allows(limits, caplog) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level("INFO")
    assert fdlimit.ensure(400) is None
    assert limits[-1] == (2048, 2048)  # up to Locust's 10,000 where the hard limit allows
    assert "raised the open-file limit (ulimit -n) from 256 to 2,048 for 400 users (about 474" in caplog.text


def test_enough_is_left_alone_and_too_little_refused(limits) -> None:  # type: ignore[no-untyped-def]
    assert fdlimit.ensure(100) is None and limits == [(256, 2048)]
    limits.append((256, 256))
    problem = fdlimit.ensure(400)
    assert problem is not None and problem.startswith("400 users need about 474 open files")
    assert "ulimit -n allows 256 (hard limit 256)" in problem and limits[-1] == (256, 256)
    # Spread over 2 processes each needs its share; the master judges only the hard limit its workers share.
    assert fdlimit.ensure(300, 2, raise_soft=False) is None and limits[-1] == (256, 256)
    split = fdlimit.ensure(400, 2, raise_soft=False)
    assert split is not None and split.startswith("200 users per process need about 274 open files")


def test_a_worker_raises_for_the_share_its_master_announced(limits) -> None:  # type: ignore[no-untyped-def]
    fdlimit.raise_for_worker(SimpleNamespace())
    assert limits == [(256, 2048)]
    fdlimit.raise_for_worker(SimpleNamespace(**{fdlimit.USERS_OPTION: 300}))
    assert limits[-1] == (2048, 2048)


def test_failures_for_want_of_a_file_are_counted_from_locusts_error_table() -> None:
    errors = {
        1: SimpleNamespace(error=f"MqError('cannot reach the broker at x ({OUT_OF_FILES}: ...)')", occurrences=7),
        2: SimpleNamespace(error="MqError('refused')", occurrences=3),
    }
    assert fdlimit.failures(errors) == 7


def test_the_report_says_the_generator_ran_out_and_a_quit_without_a_signal_is_no_interruption() -> None:
    facts = RunFacts("run1", 0.0, 10.0, "time", DrainOutcome(True, 0.0, "nothing was sent by this run"))
    assert not any("file descriptors" in line for line in build_report(Book(), {}, facts, Settings()).notes)
    notes = build_report(Book(), {}, replace(facts, out_of_files=577), Settings()).notes
    assert notes[0].startswith("ended by time")
    assert notes[1].startswith("the generator ran out of file descriptors: 577 operations failed (EMFILE)")
    quit_notes = build_report(Book(), {}, replace(facts, ended_by="quit"), Settings()).notes
    assert quit_notes[0].startswith("ended early: Locust quit without a signal")
