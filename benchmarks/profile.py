"""Where mqusers' CPU goes per message: (b) once unprofiled and once under a profiler.

    python -m benchmarks.profile --host stomp://127.0.0.1:61613 --messages 100000 --size 1KB

cProfile (default) inflates every Python call, so the table gives both the profiled µs/msg and
an estimate of the real cost, calibrated so the Python-side total equals the unprofiled user CPU
of the first run. Socket calls are timed by the wall clock (they include waiting for a CPU the
broker holds), so they are shown as profiled and the unprofiled sys CPU is printed beside them.
``--profiler pyinstrument`` (sampling, ``pip install pyinstrument``)
prints a call tree instead.
"""

from __future__ import annotations

import argparse
import os
import pstats
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from benchmarks.common import BenchError, parse_size
from benchmarks.core import child_command, run_child


def area(filename: str) -> str:
    for marker, name in (
        ("/mqusers/", "mqusers"),
        ("/locust/", "locust"),
        ("/gevent/", "gevent"),
        ("/hdrh/", "hdrh (HdrHistogram)"),
        ("/stomp/", "stomp.py"),
        ("/benchmarks/", "benchmark harness"),
    ):
        if marker in filename:
            return name
    return "C built-ins (len, dict, bytes, time...)" if filename == "~" else "stdlib"


def label(key: tuple[str, int, str]) -> str:
    filename, line, function = key
    if filename == "~":
        return function
    parts = filename.split("/site-packages/")[-1].split("/work/main/")[-1]
    return f"{parts}:{line}({function})"


def is_syscall(key: tuple[str, int, str]) -> bool:
    """Socket and poll calls: cProfile times them by the wall clock, so they include preemption."""
    return key[0] == "~" and any(word in key[2] for word in ("_socket.socket", "epoll", "poll", "select"))


def summarize(path: str, plain: dict[str, Any], top: int) -> None:
    """Print the profile; ``plain`` is the unprofiled run, whose rusage splits user and sys CPU."""
    messages = plain["messages"]
    stats: dict[Any, Any] = pstats.Stats(path).stats  # type: ignore[attr-defined]
    total = sum(entry[2] for entry in stats.values())
    python_side = sum(entry[2] for key, entry in stats.items() if not is_syscall(key))
    user_us = 1e6 * (plain["cpu_s"] - plain["sys_s"]) / messages
    sys_us = 1e6 * plain["sys_s"] / messages
    # cProfile slows Python code roughly uniformly; the unprofiled user CPU calibrates it.
    scale = user_us / (1e6 * python_side / messages) if python_side else 0.0
    print(
        f"\nunprofiled: {user_us + sys_us:.1f} CPU-µs/msg = {user_us:.1f} user + {sys_us:.1f} sys;"
        f" under cProfile {1e6 * total / messages:.1f} µs/msg (wall clock timer)"
    )
    print(f"top {top} by own time (tottime) per message; est. = profiled µs x {scale:.2f} (calibrated to user CPU)\n")
    print(f"  {'calls/msg':>9} {'prof µs':>8} {'share':>6} {'est. µs':>8}  function")
    ranked = sorted(stats.items(), key=lambda item: item[1][2], reverse=True)
    for key, (_, ncalls, tottime, _cum, _) in ranked[:top]:
        per = 1e6 * tottime / messages
        est = f"{per * scale:>8.2f}" if not is_syscall(key) else f"{'(sys)':>8}"
        print(f"  {ncalls / messages:>9.2f} {per:>8.2f} {tottime / total:>6.1%} {est}  {label(key)}")
    print(
        f"  (sys) = a socket call: its profiled time includes waiting for a CPU the broker holds;"
        f" all syscalls together cost {sys_us:.1f} sys-µs/msg unprofiled"
    )
    by_area: dict[str, float] = defaultdict(float)
    for key, entry in stats.items():
        if not is_syscall(key):
            by_area[area(key[0])] += entry[2]
    print("\nown time by package, socket calls excluded (est. µs/msg):")
    for name, tottime in sorted(by_area.items(), key=lambda item: item[1], reverse=True):
        print(f"  {1e6 * tottime / messages * scale:>7.2f}  {name}")
    print("\ncumulative, selected mqusers entry points (est. µs/msg, socket calls at their profiled time):")
    wanted = [
        ("stomp/framing.py", "feed", "FrameParser.feed: receive path, per message"),
        ("stomp/framing.py", "parse_headers", "  framing.parse_headers"),
        ("stomp/receiver.py", "__call__", "  Receiver.__call__ (incl. its receive event)"),
        ("users/producers.py", "send", "StompProducerUser.send task: send path"),
        ("stomp/client.py", "publish", "  StompClient.publish (incl. its send event)"),
        ("stomp/link.py", "send", "    Link.send (incl. the socket's send)"),
        ("measure/book.py", "on_request", "Book.on_request (both events)"),
    ]
    for filename, function, shown in wanted:
        for key, entry in stats.items():
            if key[0].endswith(f"mqusers/{filename}") and key[2] == function:
                print(f"  {1e6 * entry[3] / messages * scale:>7.2f}  {shown}  ({entry[1] / messages:.2f} calls/msg)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile", description=__doc__)
    parser.add_argument("--host", default="stomp://127.0.0.1:61613")
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--size", default="1KB")
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--profiler", choices=("cprofile", "pyinstrument"), default="cprofile")
    parser.add_argument("--out", default="", help="keep the profile here (default: a temporary file)")
    options = parser.parse_args(argv)
    options.size_bytes = parse_size(options.size)
    path = options.out or os.path.join(tempfile.mkdtemp(prefix="mqusers-profile-"), "b.prof")
    try:
        plain = run_child(child_command("mqusers", options), options.timeout + 60)
        command = [*child_command("mqusers", options, profile=path), "--profiler", options.profiler]
        profiled = run_child(command, options.timeout + 60)
    except BenchError as error:
        print(f"profile failed: {error}", file=sys.stderr)
        return 2
    real_us = 1e6 * plain["cpu_s"] / plain["messages"]
    print(
        f"(b) mqusers, N={options.messages:,}, {options.size_bytes:,} B: unprofiled {plain['msg_per_cpu_s']:,.0f}"
        f" msg/CPU-s ({real_us:.1f} µs/msg), profiled {profiled['msg_per_cpu_s']:,.0f} msg/CPU-s; profile: {path}"
    )
    if options.profiler == "pyinstrument":
        with open(path, encoding="utf-8") as handle:
            print(handle.read())
    else:
        summarize(path, plain, options.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
