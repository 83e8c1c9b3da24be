"""``--mq-profile``: the rate over time and each message's due time, against counts worked out by hand."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from mqusers.options.parsing import OptionError
from mqusers.options.payloadspec import PayloadSpec
from mqusers.options.profile import parse_profile
from mqusers.options.settings import read_settings
from mqusers.users import payloads


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


def test_a_csv_with_times_out_of_order_is_refused(tmp_path: Path) -> None:
    backwards = tmp_path / "backwards.csv"
    backwards.write_text("0,100\n5,100\n3,100\n")
    with pytest.raises(OptionError, match="times start at 0 and increase"):
        parse_profile(f"csv:{backwards}")


def test_a_csvs_size_column_holds_each_size_from_its_line_until_the_next(tmp_path: Path) -> None:
    path = tmp_path / "sized.csv"
    path.write_text("seconds,rate,size\n0,100\n2,100,200\n4,100,\n6,100,4KB\n8,50,1MiB\n")
    profile = parse_profile(f"csv:{path}")
    assert profile.sizes == ((2.0, 200), (6.0, 4096), (8.0, 1 << 20))
    # Before the first size the scenario's (None); a line without one keeps the size in effect.
    assert [profile.size_at(t) for t in (0, 1.999, 2, 5.5, 6, 7.99, 8, 600)] == [
        None, None, 200, 200, 4096, 4096, 1 << 20, 1 << 20]  # fmt: skip
    # By message: 100 msg/s, so message 199 is due at 1.99 s (scenario's size), 200 at 2 s (200 B).
    assert [profile.size_at(profile.due_s(k)) for k in (199, 200, 599, 600)] == [None, 200, 200, 4096]
    assert parse_profile("steps:100/1s").sizes == () and parse_profile("steps:100/1s").size_at(5) is None


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("0,100,0", "at 0 s: size: '0' is out of range; use 1 byte to 64MiB"),
        ("0,100,65MiB", "at 0 s: size: '65MiB' is out of range"),
        ("0,100,big", "at 0 s: size: 'big' is not a size"),
        ("0,100,200,7", "each line is seconds,rate or seconds,rate,size"),
    ],
)
def test_a_bad_size_is_refused_in_one_line_naming_its_time(tmp_path: Path, line: str, says: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(f"{line}\n")
    with pytest.raises(OptionError, match="--mq-profile: ") as refused:
        parse_profile(f"csv:{path}")
    assert says in str(refused.value) and "\n" not in str(refused.value)


def test_a_size_column_is_refused_beside_a_size_distribution_or_bodies_of_their_own_size(tmp_path: Path) -> None:
    path = tmp_path / "sized.csv"
    path.write_text("0,100,200\n")
    options = SimpleNamespace(mq_profile=f"csv:{path}", mq_host="stomp://127.0.0.1:61613")
    assert read_settings(options, None).profile is not None
    with pytest.raises(OptionError, match=r"^--mq-profile's CSV sets the sizes over time \(its size column\): drop "
                                          r"--mq-size-dist$"):  # fmt: skip
        read_settings(SimpleNamespace(**vars(options), mq_size_dist="uniform:10,20"), None)
    (tmp_path / "body.bin").write_bytes(b"x")
    with pytest.raises(OptionError, match="--mq-payload files bodies have their own sizes"):
        read_settings(SimpleNamespace(**vars(options), mq_payload=f"files:{tmp_path / 'body.bin'}"), None)
    # Without a size column both go together as before.
    plain = tmp_path / "plain.csv"
    plain.write_text("0,100\n")
    read_settings(SimpleNamespace(mq_profile=f"csv:{plain}", mq_size_dist="uniform:10,20"), None)


def test_the_report_names_the_profiles_sizes(tmp_path: Path) -> None:
    path = tmp_path / "sized.csv"
    path.write_text("0,100\n2,100,200\n4,100,4000\n")
    profile = parse_profile(f"csv:{path}")
    assert (
        payloads.describe(PayloadSpec(), 1024, None, profile)
        == "200-4,000 B printable messages (sizes from the profile)"
    )
    path.write_text("0,100,200\n4,100,4000\n")  # the scenario's 1,024 B never sent: not in the range
    assert payloads.describe(PayloadSpec("json"), 1024, None, parse_profile(f"csv:{path}")).startswith(
        "200-4,000 B json"
    )
