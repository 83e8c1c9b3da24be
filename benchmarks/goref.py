"""(f) in benchmarks/core.py: the compiled reference (benchmarks/goref/, Go and go-stomp), built, run and compared.

(f) runs twice a round: all out at (a)'s N and size, and paced at (c)'s rate and duration. Each run is
one ``goref`` process on a fresh queue that prints one JSON line: counts, wall time, its CPU over the
measured phase (``getrusage(RUSAGE_SELF)``, user+sys) and send-to-receive latency from an HdrHistogram
(µs, 3 significant digits; TCP_NODELAY, Go's default). ``make bench`` builds the binary first; when the
Go toolchain or a module cannot be had, the benchmark says so in one line and runs without (f).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import BenchError, parse_host, spread

GOREF_DIR = Path(__file__).resolve().parent / "goref"
BINARY = GOREF_DIR / "goref"
#: The Go toolchain when it is not on PATH (where the machine's own Go is installed).
GO_FALLBACK = Path("/usr/local/go/bin/go")
BUILD_TIMEOUT_S = 300.0
LABELS = {"go": "(f) go all-out", "go-paced": "(f) go paced"}
#: What the goref line must hold, each a number.
FIELDS = ("sent", "received", "wall_s", "msgs_per_s", "cpu_s", "p50_ms", "p99_ms", "p999_ms", "max_ms")


def build() -> str:
    """Build ``benchmarks/goref/goref`` unless it is newer than its sources; "" when ready, else why not."""
    sources = [*GOREF_DIR.glob("*.go"), GOREF_DIR / "go.mod", GOREF_DIR / "go.sum"]
    if BINARY.exists() and BINARY.stat().st_mtime >= max(path.stat().st_mtime for path in sources):
        return ""
    go = shutil.which("go") or (str(GO_FALLBACK) if GO_FALLBACK.exists() else "")
    if not go:
        return "no Go toolchain (go is not on PATH, nor in /usr/local/go/bin)"
    try:
        argv = [go, "build", "-o", BINARY.name, "."]
        done = subprocess.run(argv, cwd=GOREF_DIR, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"go build took over {BUILD_TIMEOUT_S:g} s"
    if done.returncode != 0:
        return "go build failed: " + (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    return ""


def with_go(kinds: list[str], ready: Callable[[], str] = build) -> list[str]:
    """``kinds`` with (f)'s two runs in place of "go", or without it and one line saying why."""
    if "go" not in kinds:
        return kinds
    why = ready()
    if why:
        print(f"(f) go reference left out: {why}", flush=True)
        return [kind for kind in kinds if kind != "go"]
    return [*kinds, "go-paced"]


def command(kind: str, options: argparse.Namespace, queue: str) -> list[str]:
    """The goref command line of "go" (all out, (a)'s N) or "go-paced" ((c)'s rate and duration)."""
    host, port = parse_host(options.host)
    if kind == "go":
        messages, rate = options.messages, 0.0
    else:
        messages, rate = round(options.paced_rate * options.paced_seconds), options.paced_rate
    return [
        str(BINARY),
        *("-host", f"{host}:{port}", "-queue", queue, "-messages", str(messages)),
        *("-size", str(options.size_bytes), "-rate", f"{rate:g}", "-timeout", f"{options.timeout:g}"),
    ]


def parse_line(stdout: str) -> dict[str, Any]:
    """The last JSON line goref printed, its fields checked; a :class:`BenchError` when there is none."""
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise BenchError("goref printed no JSON line")
    try:
        line = json.loads(lines[-1])
    except json.JSONDecodeError as error:
        raise BenchError(f"goref's line is not JSON: {error}") from None
    if not isinstance(line, dict):
        raise BenchError("goref's line is not a JSON object")
    missing = [name for name in FIELDS if not isinstance(line.get(name), int | float)]
    if missing:
        raise BenchError(f"goref's line lacks {', '.join(missing)}")
    if line.get("error") or line["received"] != line["sent"]:
        why = line.get("error") or f"{line['received']} of {line['sent']} messages arrived"
        raise BenchError(f"goref: {why}")
    return line


def to_result(kind: str, line: dict[str, Any], process_cpu_s: float) -> dict[str, Any]:
    """goref's line in the shape of core's other results (describe() and report() read it)."""
    received, cpu = line["received"], line["cpu_s"]
    latency = {name: line[f"{name}_ms"] for name in ("p50", "p99", "p999", "max")}
    return {
        "kind": kind,
        "messages": received,
        "received": received,
        "wall_s": line["wall_s"],
        "cpu_s": cpu,
        "sys_s": line.get("sys_s", 0.0),
        "msg_per_s": line["msgs_per_s"],
        "msg_per_cpu_s": received / cpu if cpu > 0 else float("inf"),
        "latency_ms": {**latency, "p90": line.get("p90_ms", latency["p50"])},
        "late_max_ms": line.get("late_max_ms", 0.0),
        "process_cpu_s": process_cpu_s,
    }


def run(kind: str, options: argparse.Namespace, queue: str, argv: list[str] | None = None) -> dict[str, Any]:
    """One goref process (``argv``, else :func:`command`'s): its result, with the whole process's CPU as the
    parent saw it."""
    argv = argv or command(kind, options, queue)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=options.timeout + 60)
    except subprocess.TimeoutExpired:
        raise BenchError(f"goref did not finish within {options.timeout + 60:g}s and was killed") from None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        line = parse_line(done.stdout)
    except BenchError as error:
        said = [text for text in done.stderr.strip().splitlines() if text.startswith("goref:")]
        raise BenchError(said[-1] if said else f"{error} (exit status {done.returncode})") from None
    whole = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return to_result(kind, line, whole)


def _cells(
    results: dict[str, list[dict[str, Any]]],
    num: str,
    dens: tuple[str, str],
    figure: Callable[[dict[str, Any]], float],
    difference: bool,
) -> list[str]:
    """Per-round num/den (or num - den) of ``figure`` against each of ``dens``; "n/a" where one did not run."""
    cells = []
    for den in dens:
        if not (results.get(num) and results.get(den)):
            cells.append("n/a")
            continue
        pairs = zip(results[num], results[den], strict=True)
        if difference:
            cells.append(spread([figure(b) - figure(a) for b, a in pairs], "{:+.3f}"))
        else:
            cells.append(spread([figure(b) / figure(a) for b, a in pairs], "{:.2f}"))
    return cells


def comparison_rows(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    """mqusers against stomp.py and against go, side by side, per round; [] when (f) did not run."""
    if not (results.get("go") or results.get("go-paced")):
        return []

    def whole(result: dict[str, Any]) -> float:
        return float(result["messages"] / result["process_cpu_s"])

    rows: list[tuple[str, str, tuple[str, str], Callable[[dict[str, Any]], float], bool]] = [
        ("(b)/x wall msg/s", "mqusers", ("raw", "go"), lambda r: float(r["msg_per_s"]), False),
        ("(b)/x msg/CPU-s, measured phase", "mqusers", ("raw", "go"), lambda r: float(r["msg_per_cpu_s"]), False),
        ("(b)/x msg/CPU-s, whole process", "mqusers", ("raw", "go"), whole, False),
        ("(c)-x paced p50, ms", "paced", ("raw-paced", "go-paced"), lambda r: float(r["latency_ms"]["p50"]), True),
        ("(c)-x paced p99, ms", "paced", ("raw-paced", "go-paced"), lambda r: float(r["latency_ms"]["p99"]), True),
    ]
    lines = [f"  {'mqusers against x, per round':<34} {'x = stomp.py (a)/(e)':<24} x = go (f)"]
    for what, num, dens, figure, difference in rows:
        stomp, go = _cells(results, num, dens, figure, difference)
        lines.append(f"  {what:<34} {stomp:<24} {go:<24}".rstrip())
    return lines


def report_lines(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    """(f)'s paced line and the side-by-side table, for core's summary."""
    lines = []
    if results.get("go-paced"):
        runs = results["go-paced"]
        lines.append(
            f"  {LABELS['go-paced']:<26} p50 {spread([r['latency_ms']['p50'] for r in runs], '{:.3f}')} ms"
            f"   p99 {spread([r['latency_ms']['p99'] for r in runs], '{:.3f}')} ms   (TCP_NODELAY, HdrHistogram)"
        )
    rows = comparison_rows(results)
    return [*lines, *([""] if rows else []), *rows]
