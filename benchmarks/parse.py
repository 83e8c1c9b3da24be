"""What reading a frame costs the parser alone, by size: is reassembly linear, and is the small path fast?

    python -m benchmarks.parse [--repeat 5] [--small 100000]

Two measurements in this process, CPU (user + sys from ``getrusage``), median over ``--repeat``:

- **large frames**: one MESSAGE of 1, 8 and 64 MiB fed to :class:`mqusers.stomp.framing.FrameParser` in
  256 KiB pieces, the size of a socket read of the transport. Printed as ms per MiB: linear
  reassembly costs the same per MiB at every size; a parser that re-copies what it holds on every
  read costs more per MiB the larger the frame (quadratic in all).
- **small frames**: ``--small`` ActiveMQ-shaped 1 KB MESSAGE frames (13 headers), 8 per read, the
  per-message hot path: printed as µs per frame.

Run it on another checkout's parser by putting that checkout first: ``PYTHONPATH=../main python -m
benchmarks.parse`` (the parser comes from whichever ``mqusers`` is imported).
"""

from __future__ import annotations

import argparse
import resource
import statistics

from mqusers.stomp.framing import FrameParser
from mqusers.stomp.wire import encode_frame, make_body

READ_BYTES = 256 * 1024
MIB = 1024 * 1024
SIZES_MIB = (1, 8, 64)


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def large(size: int) -> float:
    """CPU seconds to parse one MESSAGE of ``size`` bytes arriving in socket-read pieces."""
    frame = encode_frame("MESSAGE", {"subscription": "1", "destination": "/queue/bench"}, make_body(size))
    pieces = [frame[i : i + READ_BYTES] for i in range(0, len(frame), READ_BYTES)]
    got: list[int] = []
    parser = FrameParser(lambda c, h, b, t: got.append(len(b)))
    start = cpu_s()
    for piece in pieces:
        parser.feed(piece, 0)
    spent = cpu_s() - start
    if got != [size]:
        raise SystemExit(f"parse: a {size:,}-byte frame came out as {got}")
    return spent


def small_frame() -> bytes:
    headers = {
        "destination": "/queue/bench.parse",
        "content-length": "1024",
        "message-id": "ID:host-41935-1733300000000-1:1:1:1:123",
        "subscription": "mq-sub-1",
        "ack": "ID:host-41935-1733300000000-5:1:-1:1:123",
        "expires": "0",
        "priority": "4",
        "timestamp": "1733300000000",
        "mq-run": "0123456789ab",
        "mq-producer": "ab12cd34.BenchProducer.0",
        "mq-seq": "123456",
        "mq-sent-ns": "1733300000000123456",
        "mq-size": "1024",
    }
    block = "MESSAGE\n" + "".join(f"{k}:{v}\n" for k, v in headers.items())
    return block.encode() + b"\n" + make_body(1024) + b"\x00"


def small(count: int) -> float:
    """CPU seconds to parse ``count`` 1 KB frames, 8 per read."""
    read = small_frame() * 8
    got = [0]

    def take(command: bytes, headers: object, body: bytes, received_ns: int) -> None:
        got[0] += 1

    parser = FrameParser(take)
    start = cpu_s()
    for _ in range(count // 8):
        parser.feed(read, 0)
    spent = cpu_s() - start
    if got[0] != count // 8 * 8:
        raise SystemExit(f"parse: {got[0]:,} of {count // 8 * 8:,} small frames came out")
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="rounds; the median is printed (default 5)")
    parser.add_argument("--small", type=int, default=100_000, help="1 KB frames in the small-frame figure")
    args = parser.parse_args()
    per_mib = {}
    for mib in SIZES_MIB:
        runs = [large(mib * MIB) / mib * 1000 for _ in range(args.repeat)]
        per_mib[mib] = statistics.median(runs)
        print(f"large frame {mib:>3} MiB   {per_mib[mib]:8.3f} ms/MiB   [{min(runs):.3f}-{max(runs):.3f}]", flush=True)
    print(f"ratio 64 MiB / 1 MiB per MiB   {per_mib[64] / per_mib[1]:.2f}   (linear: about 1)")
    runs = [small(args.small) / (args.small // 8 * 8) * 1e6 for _ in range(args.repeat)]
    spread = f"[{min(runs):.3f}-{max(runs):.3f}]"
    print(f"small frames 1 KB x {args.small:,}   {statistics.median(runs):.3f} µs/frame   {spread}")


if __name__ == "__main__":
    main()
