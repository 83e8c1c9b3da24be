"""``--mq-profile``: the rate over time and each message's due time, against counts worked out by hand."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

from mqusers.options.parsing import OptionError
from mqusers.options.profile import parse_profile


def test_steps_hand_out_each_rate_for_its_duration_then_hold_the_last() -> None:
    profile = parse_profile("steps:100/1s,300/1s")
    assert [profile.due_s(k) for k in (0, 99, 100, 250, 400, 430)] == pytest.approx([0, 0.99, 1.0, 1.5, 2.0, 2.1])
    assert (profile.rate_at(0.5), profile.rate_at(1.5), profile.rate_at(60), profile.peak) == (100, 300, 300, 300)


def test_a_ramp_is_solved_exactly_and_a_pause_hands_out_nothing() -> None:
    ramp = parse_profile("ramp:0,100,10s")  # 10 msg/s more each second: 5 t^2 messages by t
    assert [ramp.due_s(k) for k in (0, 5, 20, 500, 600)] == pytest.approx([0, 1, 2, 10, 11])
    paused = parse_profile("steps:10/1s,0/2s,10/1s")
    assert [paused.due_s(k) for k in (9, 10, 11)] == pytest.approx([0.9, 3.0, 3.1])


def test_a_sine_hands_out_its_mean_over_a_period_and_follows_its_curve() -> None:
    sine = parse_profile("sine:1000,500,60s")
    assert sine.due_s(60_000) == pytest.approx(60, abs=0.01)
    assert sine.rate_at(15) == pytest.approx(1500, rel=0.01) and sine.rate_at(45) == pytest.approx(500, rel=0.01)
    due = [sine.due_s(k) for k in range(0, 60_000, 100)]
    assert all(b > a for a, b in itertools.pairwise(due))  # never out of order, never two at once
    # Messages 0..1500 at ~1000-1500 msg/s: due within the first 1.2 s, as the integral says.
    assert sine.due_s(1500) == pytest.approx(
        next(t / 1000 for t in range(0, 5000) if 1000 * t / 1000 + 500 * 60 / (2 * math.pi) * (
            1 - math.cos(2 * math.pi * t / 1000 / 60)) >= 1500), abs=0.002)  # fmt: skip


def test_a_csv_is_read_linear_between_its_points(tmp_path: Path) -> None:
    path = tmp_path / "day.csv"
    path.write_text("seconds,rate\n0,100\n10,100\n20,300\n")
    profile = parse_profile(f"csv:{path}")
    assert profile.due_s(1000) == pytest.approx(10) and profile.rate_at(15) == pytest.approx(200)
    assert profile.due_s(3000) == pytest.approx(20) and profile.due_s(3300) == pytest.approx(21)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("wave:1", "use one of steps:RATE/DURATION"),
        ("steps:100/1s,0/1s", "its last rate is held after its end, so it must be above 0"),
        ("steps:100/soon", "duration 'soon'"),
        ("ramp:10,20", "not enough values"),
        ("sine:100,200,10s", "the amplitude is above the mean"),
        ("steps:-5/1s", "rate '-5' is not within 0 to"),
        ("csv:/no/such.csv", "No such file"),
    ],
)
def test_bad_profiles_are_refused_in_one_line(value: str, says: str) -> None:
    with pytest.raises(OptionError, match="--mq-profile: ") as refused:
        parse_profile(value)
    assert says in str(refused.value) and "\n" not in str(refused.value)


def test_a_csv_with_a_size_column_or_times_out_of_order_is_refused(tmp_path: Path) -> None:
    sized = tmp_path / "sized.csv"
    sized.write_text("0,100,1024\n")
    with pytest.raises(OptionError, match="a size column is not read"):
        parse_profile(f"csv:{sized}")
    backwards = tmp_path / "backwards.csv"
    backwards.write_text("0,100\n5,100\n3,100\n")
    with pytest.raises(OptionError, match="times start at 0 and increase"):
        parse_profile(f"csv:{backwards}")
