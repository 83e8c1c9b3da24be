"""HdrHistogram's Java tools (``HistogramLogProcessor``...) from Maven Central, to re-cut an ``--mq-hdr-log``.

Not a service: one jar, downloaded once into the shared cache (``<project>/.services/cache/``) by
Maven with strict checksums, and checked against its pinned SHA-512. ``python -m services hdr-jar``
prints its path.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from .base import ServiceError, cache_dir, cache_lock, maven

VERSION = "2.2.2"
ARTIFACT = f"org.hdrhistogram:HdrHistogram:{VERSION}"
# The SHA-512 of Maven Central's HdrHistogram-2.2.2.jar (its .sha1 is checked by Maven as it downloads).
SHA512 = (
    "fb28f1bc3a3d4430474ea87a0833d56dc3d1303c98918122d93c630ebdb0d132"
    "3bbf8feb9ffdc7dddd1908105858e6959bdfdd3889ca5803cecde93a974ab6b7"
)


def jar() -> Path:
    """The jar's path, downloaded first if the cache has no good copy; a bad checksum is deleted."""
    path = cache_dir() / f"HdrHistogram-{VERSION}.jar"
    with cache_lock():
        if not path.is_file():
            maven(["dependency:copy", f"-Dartifact={ARTIFACT}", f"-DoutputDirectory={cache_dir()}"], ARTIFACT)
        if hashlib.sha512(path.read_bytes()).hexdigest() != SHA512:
            path.unlink()
            raise ServiceError(f"{path.name} does not match its pinned SHA-512; deleted, try again")
    return path
