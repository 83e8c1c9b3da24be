"""A long run's memory kept flat: glibc's allocator told to give every large block its own mapping.

Each latency histogram owns a ~190 KB counts array (hdrh, µs from 1 to an hour at 3 digits), and a run
makes and frees several a second: one per interval and operation, the listener's windows, the merge of a
report. glibc serves blocks over its mmap threshold with their own mapping and returns them whole, but its
threshold is dynamic: the first such block freed raises it to that block's size, after which the arrays come
from the heap, whose holes between long-lived objects are never returned. A one-hour soak at 2,000 msg/s
rose ~1 MB an hour that way after its structures reached their byte budgets; the same hour's structures,
replayed with the threshold held, stayed within 0.1 MB from minute 10 (benchmarks/README.md, "Soak").
Setting the threshold (``mallopt(M_MMAP_THRESHOLD)``) fixes it and turns the dynamic rule off. It is the
process's choice, made once at init; an ``MALLOC_MMAP_THRESHOLD_`` in the environment is the user's and wins.
"""

from __future__ import annotations

import ctypes
import logging
import os

logger = logging.getLogger(__name__)

#: glibc's ``M_MMAP_THRESHOLD`` parameter of ``mallopt``.
M_MMAP_THRESHOLD = -3
#: glibc's default threshold: blocks from 128 KiB get their own mapping (the histograms' arrays among them).
THRESHOLD_BYTES = 128 * 1024
#: The environment variable glibc reads for the same setting.
ENVIRONMENT = "MALLOC_MMAP_THRESHOLD_"

_done = False


def hold_mmap_threshold() -> bool:
    """Hold glibc's mmap threshold at :data:`THRESHOLD_BYTES`, once a process; False where there is no glibc
    (musl, macOS) or the environment sets it already."""
    global _done
    if _done:
        return True
    if ENVIRONMENT in os.environ:
        return False
    try:
        # The process's own symbols: libc's among them, without find_library's ldconfig subprocess at start-up.
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    _done = bool(mallopt(M_MMAP_THRESHOLD, THRESHOLD_BYTES) == 1)
    if not _done:
        logger.debug("mqusers: mallopt(M_MMAP_THRESHOLD) refused; memory may creep in long runs")
    return _done
