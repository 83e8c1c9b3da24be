"""The bodies a process's producers send, made once per payload and size and shared by them all.

Generated kinds make a few different bodies (at most ``VARIANTS``, and about ``VARIANT_BYTES`` of
them), so a broker or a link that compresses or deduplicates does not see one body over and over;
producers take them in turn, one per write. Every body keeps the audit's size and checksum headers:
those are per body, in its pre-encoded frames.
"""

from __future__ import annotations

import functools
import json
import os
import random
import uuid

from mqusers.options.payloadspec import PLACEHOLDER, PayloadSpec
from mqusers.options.profile import RateProfile
from mqusers.options.sizedist import SizeDist
from mqusers.stomp.wire import make_body

VARIANTS = 16
VARIANT_BYTES = 1 << 20
#: Sizes drawn from ``--mq-size-dist``: this many bodies, at most about this many bytes of them.
DRAWN, DRAWN_BYTES = 64, 16 << 20
#: Prose-like words: a body of them compresses about as English text does (zlib: ~3x).
_WORD_TEXT = (
    "the of and to in is that for it as was with be by on not he this are or his from at which but have "
    "an they you were her she there been one all we their has would when if more no out so what up can "
    "said about other into than its time only could new them man some these then two first may any like "
    "now my such make over our even most me state after also made many did must before back see through "
    "way where get much go well your know should down work year because come people just say each those "
    "take day good how long very still own find great here thing give many order price account customer "
    "device reading sensor status message queue"
)
WORDS = tuple(_WORD_TEXT.split())


@functools.lru_cache(maxsize=8)
def bodies(spec: PayloadSpec, size: int, dist: SizeDist | None = None) -> tuple[bytes, ...]:
    """The bodies for ``spec``: for a generated kind ``size`` bytes each, or sizes drawn from ``dist``."""
    if spec.kind == "files":
        return tuple(path.read_bytes() for path in spec.files)
    rng = random.Random(os.urandom(16))
    if dist is not None and spec.sized:
        return tuple(_make(spec, drawn, rng, variant) for variant, drawn in enumerate(_drawn(dist, rng)))
    count = VARIANTS if spec.kind == "template" else max(1, min(VARIANTS, VARIANT_BYTES // max(size, 1)))
    return tuple(_make(spec, size, rng, variant) for variant in range(count))


def _drawn(dist: SizeDist, rng: random.Random) -> list[int]:
    """``DRAWN`` sizes from ``dist``, fewer when they would pass ``DRAWN_BYTES`` (never none)."""
    sizes: list[int] = []
    total = 0
    for _ in range(DRAWN):
        size = dist.draw(rng)
        if sizes and total + size > DRAWN_BYTES:
            break
        sizes.append(size)
        total += size
    return sizes


def describe(spec: PayloadSpec, size: int, dist: SizeDist | None = None, profile: RateProfile | None = None) -> str:
    """What the report calls the messages: ``1,024 B json messages``, ``5-9 B messages from 2 files``."""
    if profile is not None and profile.sizes and spec.sized:
        stepped = {s for _, s in profile.sizes} | ({size} if profile.size_at(0.0) is None else set())
        low, high = min(stepped), max(stepped)
        sizes = f"{low:,} B" if low == high else f"{low:,}-{high:,} B"
        return f"{sizes} {spec.kind} messages (sizes from the profile)"
    made = bodies(spec, size, dist)
    low, high = min(map(len, made)), max(map(len, made))
    sizes = f"{low:,} B" if low == high else f"{low:,}-{high:,} B"
    if dist is not None and spec.sized:
        return f"{sizes} {spec.kind} messages (sizes {dist})"
    if spec.kind == "files":
        return f"{sizes} messages from {len(made):,} file{'s' if len(made) > 1 else ''}"
    return f"{sizes} {spec.kind} messages"


def _make(spec: PayloadSpec, size: int, rng: random.Random, variant: int) -> bytes:
    if spec.kind == "random":
        return rng.randbytes(size)
    if spec.kind == "text":
        return _text(size, rng)
    if spec.kind == "json":
        return _json(size, rng)
    if spec.kind == "template":
        return _fill(spec.template, rng, variant)
    return make_body(size)


def _text(size: int, rng: random.Random) -> bytes:
    words = []
    length = 0
    while length <= size:  # joined, the words and the spaces between them are length - 1 bytes
        word = rng.choice(WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words).encode()[:size]


def _json(size: int, rng: random.Random) -> bytes:
    """A JSON document of exactly ``size`` bytes: records, then a padding string that makes up the rest."""
    if size < 2:
        return b"0"[:size]
    shell = len(b'{"records":[],"pad":""}')
    if size < shell:
        return b'"' + b"p" * (size - 2) + b'"'
    records: list[bytes] = []
    used = shell
    while True:
        record = json.dumps({"id": rng.randrange(10**6), "name": rng.choice(WORDS),
                             "price": round(rng.random() * 100, 2), "tags": rng.sample(WORDS, 2),
                             "active": rng.random() < 0.5}).encode()  # fmt: skip
        extra = len(record) + (1 if records else 0)
        if used + extra > size:
            break
        records.append(record)
        used += extra
    return b'{"records":[%s],"pad":"%s"}' % (b",".join(records), b"p" * (size - used))


def _fill(template: str, rng: random.Random, variant: int) -> bytes:
    values = {
        "uuid": lambda: str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "int": lambda: str(rng.randrange(10**6)),
        "float": lambda: f"{rng.random() * 1000:.2f}",
        "word": lambda: rng.choice(WORDS),
        "variant": lambda: str(variant),
    }
    return PLACEHOLDER.sub(lambda match: values[match.group(1)](), template).encode()
