"""mqusers/wiring/allocator.py on this machine's glibc: a histogram-sized block freed after a larger one still gets
its own mapping (returned whole when freed) once the threshold is held, and none does without."""

from __future__ import annotations

import ctypes
import subprocess
import sys

import pytest

from mqusers.wiring import allocator

# A fresh process each: glibc's threshold is per process and moves with what it has freed.
PROBE = """
import ctypes, sys
class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                 "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
if sys.argv[1] == "held":
    from mqusers.wiring import allocator
    assert allocator.hold_mmap_threshold() and allocator.hold_mmap_threshold()  # once, then a no-op
big = bytearray(4 * 1024 * 1024)
del big  # freed: glibc's dynamic rule raises its threshold to 4 MiB
before = libc.mallinfo2().hblks
blocks = [bytearray(190 * 1024) for _ in range(50)]  # a histogram's counts array each
print(libc.mallinfo2().hblks - before)
"""


def mapped(mode: str, env: dict[str, str] | None = None) -> int:
    done = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, timeout=60, check=True,
                          env=env)  # fmt: skip
    return int(done.stdout.strip())


@pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "mallinfo2"), reason="glibc >= 2.33 only")
def test_histogram_sized_blocks_keep_their_own_mappings_once_the_threshold_is_held() -> None:
    # The heap's free top serves a few either way; beyond it, held blocks get mappings and the others grow the heap.
    assert mapped("free") <= 5
    assert mapped("held") >= 40


def test_the_users_own_setting_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(allocator, "_done", False)
    monkeypatch.setenv(allocator.ENVIRONMENT, "65536")
    assert allocator.hold_mmap_threshold() is False
