"""``mqusers matrix``: the classic message-bus test grid, one headless Locust run per cell.

mode (topic / queue / request-reply) x persistent x durable (topics only) x message size, by
default 1, 10 and 20 KB x 100,000 messages. Each cell runs its scenario to ``--mq-total-messages``
and stops by itself, writes its JSON report, and a Markdown table per mode is printed at the end:
latency (mean, p99), msg/s, Mbit/s, lost. A persistent cell on a broker whose store held 0 B (a
memory-only ActiveMQ) is marked ``store 0 B`` (JSON: ``persisted`` false).
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mqusers.options.parsing import OptionError, parse_broker_url, parse_size
from mqusers.report.htmlreport import write_html


def shipped_locustfiles() -> Path:
    """The scenario folder: the repository's ``locustfiles/``, which the wheel ships as ``mqusers/locustfiles/``.

    An editable install or a checkout has no copy inside the package, so it falls back to the repository's.
    """
    package = Path(__file__).resolve().parents[1]  # mqusers/, this module being mqusers/commands/matrix.py
    installed = package / "locustfiles"
    return installed if installed.is_dir() else package.parent / "locustfiles"


MODES = {
    # mode: (locustfile, durable variant, destination kind, users, consumers)
    "topic": ("pubsub.py", "durable_topic.py", "topic", 2, 1),
    "queue": ("queue_balance.py", "", "queue", 2, 1),
    "request-reply": ("request_reply.py", "", "queue", 2, 1),
}


@dataclass(frozen=True)
class Cell:
    mode: str
    persistent: bool
    durable: bool
    size: str

    @property
    def slug(self) -> str:
        flags = ("p" if self.persistent else "n") + ("d" if self.durable else "")
        return f"{self.mode}-{flags}-{self.size}"


def cells(modes: list[str], sizes: list[str]) -> list[Cell]:
    grid = []
    for mode, persistent, durable, size in itertools.product(modes, (False, True), (False, True), sizes):
        if durable and not MODES[mode][1]:
            continue
        grid.append(Cell(mode, persistent, durable, size))
    return grid


def locustfile(cell: Cell) -> str:
    plain, durable_file, *_ = MODES[cell.mode]
    return durable_file if cell.durable else plain


def command(
    cell: Cell, locustfiles: Path, host: str, messages: int, rate: float, out: Path, extra: list[str]
) -> list[str]:
    _, _, kind, users, consumers = MODES[cell.mode]
    return [
        sys.executable, "-m", "locust", "-f", str(locustfiles / locustfile(cell)), "--headless", "--only-summary",
        "--host", host, "-u", str(users), "-r", str(users), "-t", "3600s", "--mq-consumers", str(consumers),
        "--mq-destination", f"/{kind}/mqusers.commands.matrix.{cell.slug}.{int(time.time())}",
        "--mq-size", cell.size, "--mq-persistent", str(cell.persistent).lower(),
        "--mq-durable", str(cell.durable).lower(), "--mq-total-messages", str(messages),
        "--mq-total-rate", str(rate), "--mq-report-json", str(out), *extra,
    ]  # fmt: skip


def figures(cell: Cell, report: dict[str, Any]) -> dict[str, Any]:
    """The table's figures: request/reply latency is the round trip, the others send to receive."""
    [row] = [r for r in report["destinations"] if not r["destination"].startswith("/temp-queue/")] or [{}]
    latency = row.get("latency_ms", {})
    fan_out = MODES[cell.mode][4] if cell.mode == "topic" else 1
    if cell.mode == "request-reply":
        requests = [op for op in report["operations"] if op["name"].startswith("request ")]
        latency = requests[0]["latency_ms"] if requests else {}
    store = (report.get("broker") or {}).get("broker", {}).get("store_bytes")
    return {
        "mean": latency.get("mean"),
        "p99": latency.get("p99"),
        "msgs": row.get("receive_rate_msgs"),
        "mbit": row.get("receive_rate_mbit"),
        "lost": row["lost"] if "lost" in row else max(0, row.get("sent", 0) * fan_out - row.get("received", 0)),
        # The broker's own store figure: a persistent cell on a store holding 0 B wrote nothing to disk.
        "store_bytes": store,
        "persisted": None if not cell.persistent or store is None else store > 0,
    }


#: Said under the tables when a persistent cell ran on a store that held nothing.
NOT_PERSISTED = (
    "store 0 B: the broker's message store (ActiveMQ storeUsage) held 0 B during these persistent cells: "
    'a memory-only broker (persistent="false") writes nothing to disk; a JDBC store also reports 0 B'
)


def markdown(mode: str, results: list[tuple[Cell, dict[str, Any]]]) -> str:
    def number(value: Any, digits: int) -> str:
        return "-" if value is None else f"{value:,.{digits}f}"

    lines = [
        f"### {mode}",
        "",
        "| persistent | durable | size | latency mean ms | latency p99 ms | msg/s | Mbit/s | lost |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for cell, f in results:
        persistent = ("yes (store 0 B)" if f["persisted"] is False else "yes") if cell.persistent else "no"
        lines.append(
            f"| {persistent} | {'yes' if cell.durable else 'no'} | {cell.size} | "
            f"{number(f['mean'], 3)} | {number(f['p99'], 3)} | {number(f['msgs'], 1)} | {number(f['mbit'], 2)} | "
            f"{number(f['lost'], 0)} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mqusers matrix", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="stomp://127.0.0.1:61613", help="broker URL, as for locust --host")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated: " + ", ".join(MODES))
    parser.add_argument("--sizes", default="1KB,10KB,20KB", help="comma-separated message sizes")
    parser.add_argument("--messages", type=int, default=100_000, help="messages per cell")
    parser.add_argument("--rate", type=float, default=0, help="total messages/s per cell (0 = as fast as possible)")
    parser.add_argument("--out", default="reports/matrix", help="folder for one JSON report per cell")
    parser.add_argument("--json", default="", help="also write the tables' figures here (kind matrix)")
    parser.add_argument("--html", default="", help="also write the tables as one HTML page here")
    parser.add_argument(
        "--locustfiles",
        type=Path,
        default=shipped_locustfiles(),
        help="folder with the scenarios the grid runs (default: the shipped ones, `mqusers locustfiles`)",
    )
    args, extra = parser.parse_known_args(argv)
    try:
        parse_broker_url(args.host)
        sizes = [s.strip() for s in args.sizes.split(",")]
        for size in sizes:
            parse_size(size)
        modes = [m.strip() for m in args.modes.split(",")]
        unknown = [m for m in modes if m not in MODES]
        if unknown or args.messages < 1:
            raise OptionError(f"--modes: {', '.join(unknown)} unknown" if unknown else "--messages: at least 1")
        grid = cells(modes, sizes)
        missing = sorted({name for name in map(locustfile, grid) if not (args.locustfiles / name).is_file()})
        if missing:
            raise OptionError(f"--locustfiles: {args.locustfiles} has no {', '.join(missing)}")
    except OptionError as error:
        sys.stderr.write(f"mqusers matrix: {error}\n")
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    results: dict[str, list[tuple[Cell, dict[str, Any]]]] = {m: [] for m in modes}
    for index, cell in enumerate(grid, 1):
        report = out / f"{cell.slug}.json"
        started = time.monotonic()
        print(f"[{index}/{len(grid)}] {cell.slug} ...", end=" ", flush=True)
        argv = command(cell, args.locustfiles, args.host, args.messages, args.rate, report, extra)
        run = subprocess.run(argv, capture_output=True, text=True)
        if not report.exists():
            failed += 1
            last = (run.stdout + run.stderr).strip().splitlines()[-1:] or ["no output"]
            print(f"failed (exit {run.returncode}): {last[0]}")
            continue
        results[cell.mode].append((cell, figures(cell, json.loads(report.read_text()))))
        print(f"done in {time.monotonic() - started:.1f} s (exit {run.returncode})")
    print()
    print("\n\n".join(markdown(mode, rows) for mode, rows in results.items() if rows))
    if any(f["persisted"] is False for rows in results.values() for _, f in rows):
        print(f"\n{NOT_PERSISTED}")
    document = matrix_document(results, args.messages, args.rate, out)
    if args.json:
        Path(args.json).write_text(json.dumps(document, indent=2) + "\n")
    if args.html:
        write_html(args.html, [document], ["matrix"])
    return 1 if failed else 0


def matrix_document(
    results: dict[str, list[tuple[Cell, dict[str, Any]]]], messages: int, rate: float, out: Path
) -> dict[str, Any]:
    """The grid's figures as a JSON document (``kind: matrix``), each cell linking its run's report."""
    cells = [{"mode": cell.mode, "persistent": cell.persistent, "durable": cell.durable, "size": cell.size,
              **figures, "report": str(out / f"{cell.slug}.json")}
             for rows in results.values() for cell, figures in rows]  # fmt: skip
    notes = [NOT_PERSISTED] if any(cell.get("persisted") is False for cell in cells) else []
    return {"kind": "matrix", "messages": messages, "rate": rate, "cells": cells, "notes": notes}
