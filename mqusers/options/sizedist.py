"""``--mq-size-dist``: body sizes drawn from a distribution rather than one ``--mq-size`` for all.

``uniform:MIN,MAX`` (every size between equally likely), ``lognormal:MEDIAN,SIGMA`` (the long tail
of real payloads: half below the median, ``SIGMA`` the spread of the log), ``choice:A,B,...`` (each
listed size equally likely). Sizes as ``--mq-size`` takes them, each drawn one kept within 1 byte
to 64 MiB.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from mqusers.options.parsing import MAX_SIZE, OptionError, parse_size

KINDS = ("uniform:MIN,MAX", "lognormal:MEDIAN,SIGMA", "choice:SIZE,SIZE,...")
MAX_SIGMA = 3.0


@dataclass(frozen=True)
class SizeDist:
    text: str
    kind: str
    values: tuple[float, ...]

    def __str__(self) -> str:
        return self.text

    def draw(self, rng: random.Random) -> int:
        if self.kind == "uniform":
            return rng.randint(int(self.values[0]), int(self.values[1]))
        if self.kind == "lognormal":
            median, sigma = self.values
            return max(1, min(MAX_SIZE, round(median * math.exp(rng.gauss(0.0, sigma)))))
        return int(rng.choice(self.values))


def parse_size_dist(value: str, option: str = "--mq-size-dist") -> SizeDist:
    kind, _, spec = value.partition(":")
    parts = [part.strip() for part in spec.split(",")] if spec else []
    if kind == "uniform" and len(parts) == 2:
        low, high = (parse_size(part, option) for part in parts)
        if low > high:
            raise OptionError(f"{option}: {value!r}: the minimum is above the maximum")
        return SizeDist(value, kind, (low, high))
    if kind == "lognormal" and len(parts) == 2:
        median = parse_size(parts[0], option)
        try:
            sigma = float(parts[1])
        except ValueError:
            sigma = -1.0
        if not 0 < sigma <= MAX_SIGMA:
            raise OptionError(f"{option}: {value!r}: SIGMA is a number above 0, at most {MAX_SIGMA:g}")
        return SizeDist(value, kind, (median, sigma))
    if kind == "choice" and parts:
        return SizeDist(value, kind, tuple(parse_size(part, option) for part in parts))
    raise OptionError(f"{option}: {value!r} is not one of {', '.join(KINDS)}")
