"""``--mq-size-dist``: sizes drawn as each distribution says, bounded, and refused in one line when malformed."""

from __future__ import annotations

import random
import statistics

import pytest

from mqusers.options.parsing import OptionError
from mqusers.options.payloadspec import PayloadSpec
from mqusers.options.sizedist import parse_size_dist
from mqusers.users.payloads import DRAWN, DRAWN_BYTES, bodies, describe


def test_each_distribution_draws_what_it_says() -> None:
    rng = random.Random(7)
    uniform = [parse_size_dist("uniform:100,1KB").draw(rng) for _ in range(20_000)]
    assert min(uniform) >= 100 and max(uniform) <= 1024
    assert statistics.mean(uniform) == pytest.approx((100 + 1024) / 2, rel=0.02)
    lognormal = [parse_size_dist("lognormal:2KB,1.0").draw(rng) for _ in range(20_000)]
    assert statistics.median(lognormal) == pytest.approx(2048, rel=0.05)
    assert statistics.mean(lognormal) == pytest.approx(2048 * 2.718281828**0.5, rel=0.05)  # e^(sigma^2/2)
    choice = [parse_size_dist("choice:1KB,10KB,20KB").draw(rng) for _ in range(3_000)]
    assert {size: choice.count(size) // 100 for size in set(choice)} == pytest.approx(
        {1024: 10, 10240: 10, 20480: 10}, abs=2)  # fmt: skip


def test_the_bodies_take_the_drawn_sizes_within_their_bound() -> None:
    dist = parse_size_dist("uniform:1KB,64KB")
    made = bodies(PayloadSpec("json"), 1024, dist)
    assert len(made) == DRAWN and len({len(b) for b in made}) > DRAWN // 2
    assert all(1024 <= len(b) <= 65536 for b in made)
    huge = bodies(PayloadSpec("random"), 1024, parse_size_dist("choice:8MiB"))
    assert len(huge) == 2 and sum(map(len, huge)) <= DRAWN_BYTES  # 16 MiB of them at most
    text = describe(PayloadSpec("printable"), 1024, dist)
    assert text.endswith(" B printable messages (sizes uniform:1KB,64KB)"), text


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("normal:1KB,1", "is not one of uniform:MIN,MAX"),
        ("uniform:2KB,1KB", "the minimum is above the maximum"),
        ("uniform:1KB", "is not one of"),
        ("lognormal:1KB,0", "SIGMA is a number above 0"),
        ("choice:1KB,huge", "'huge'"),
        ("uniform:1KB,65MiB", "out of range"),
    ],
)
def test_bad_distributions_are_refused_in_one_line(value: str, says: str) -> None:
    with pytest.raises(OptionError, match="--mq-size-dist: ") as refused:
        parse_size_dist(value)
    assert says in str(refused.value) and "\n" not in str(refused.value)
