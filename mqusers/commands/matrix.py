"""``mqusers matrix``: the classic message-bus test grid, headless Locust runs per cell.

mode (topic / queue / request-reply) x persistent x durable (topics only) x message size, by
default 1, 10 and 20 KB. Every cell runs once as the broker's warm-up, then ``--repeats`` times,
interleaved, each run long enough for a steady state and bounded (:mod:`mqusers.commands.grids`),
writing its JSON report; a Markdown table per mode is printed at the end (after a Ctrl-C too: of the
runs that ended): latency (mean, p99: the runs' medians), msg/s (the median with its interval),
Mbit/s, lost, and which variants of a size are not told apart from noise. A persistent cell on a
broker whose store held 0 B (a memory-only ActiveMQ) is marked ``store 0 B`` (JSON: ``persisted`` false).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mqusers.commands import grids
from mqusers.commands.locustchild import interruptible
from mqusers.options.parsing import OptionError, parse_broker_url, parse_size
from mqusers.report.figures import figure
from mqusers.report.htmlgrids import INTERRUPTED, NOISE
from mqusers.report.htmlreport import write_html
from mqusers.stats.samples import Run


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

    @property
    def variant(self) -> str:
        """What the cell is among its size's cells, as the noise column names it."""
        return ("persistent" if self.persistent else "non-persistent") + (" durable" if self.durable else "")


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
    cell: Cell, locustfiles: Path, host: str, rate: float, out: Path, run: list[str], extra: list[str]
) -> list[str]:
    """A run of ``cell``: ``run`` says how long (:class:`grids.Steady`), ``rate`` how fast (0: unpaced)."""
    _, _, kind, users, consumers = MODES[cell.mode]
    pace = ["--mq-total-rate", f"{rate:g}"] if rate else ["--mq-rate", "0"]
    return [
        sys.executable, "-m", "locust", "-f", str(locustfiles / locustfile(cell)), "--headless", "--only-summary",
        "--host", host, "-u", str(users), "-r", str(users), *run, "--mq-consumers", str(consumers),
        # A destination of its own per run: two grids on one broker (or two runs in one second) never share one.
        "--mq-destination", f"/{kind}/mqusers.commands.matrix.{cell.slug}.{uuid.uuid4().hex[:12]}",
        "--mq-size", cell.size, "--mq-persistent", str(cell.persistent).lower(),
        "--mq-durable", str(cell.durable).lower(), *pace, "--mq-report-json", str(out), *extra,
    ]  # fmt: skip


def figures(cell: Cell, report: dict[str, Any]) -> dict[str, Any]:
    """One run's figures: request/reply latency is the round trip, the others send to receive."""
    [row] = [r for r in report["destinations"] if not r["destination"].startswith("/temp-queue/")] or [{}]
    latency = row.get("latency_ms", {})
    fan_out = MODES[cell.mode][4] if cell.mode == "topic" else 1
    if cell.mode == "request-reply":
        requests = [op for op in report["operations"] if op["name"].startswith("request ")]
        latency = requests[0]["latency_ms"] if requests else {}
    store = (report.get("broker") or {}).get("broker", {}).get("store_bytes")
    return {
        "destination": row.get("destination"),
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


def cell_figures(cell: Cell, runs: list[tuple[dict[str, Any], Run]]) -> dict[str, Any]:
    """A cell from its runs (each run's figures and steady samples): msg/s's median, interval and spread; the
    latency and Mbit/s the runs' medians; lost the runs' sum; each run's figures under ``runs``."""

    def median(key: str) -> Any:
        values = [f[key] for f, _ in runs if f.get(key) is not None]
        return statistics.median(values) if values else None

    last = runs[-1][0] if runs else {}
    return {**grids.summary([run for _, run in runs]), "mean": median("mean"), "p99": median("p99"),
            "mbit": median("mbit"), "lost": sum(f["lost"] for f, _ in runs) if runs else None,
            "store_bytes": last.get("store_bytes"), "persisted": None if not runs else last.get("persisted"),
            "runs": [f for f, _ in runs]}  # fmt: skip


def noise(cells: dict[Cell, list[Run]]) -> dict[Cell, list[str]]:
    """Per cell, the variants of its mode and size whose throughput it is not told apart from."""
    found: dict[Cell, list[str]] = {cell: [] for cell in cells}
    for (_, _), group in itertools.groupby(
        sorted(cells, key=lambda c: (c.mode, c.size)), key=lambda c: (c.mode, c.size)
    ):
        for a, b in grids.indistinct({cell: cells[cell] for cell in group}):
            found[a].append(b.variant)
            found[b].append(a.variant)
    return found


def markdown(mode: str, results: list[tuple[Cell, dict[str, Any]]]) -> str:
    lines = [
        f"### {mode}",
        "",
        f"| persistent | durable | size | latency mean ms | latency p99 ms | msg/s | Mbit/s | lost | {NOISE} noise |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for cell, f in results:
        persistent = ("yes (store 0 B)" if f["persisted"] is False else "yes") if cell.persistent else "no"
        lines.append(
            f"| {persistent} | {'yes' if cell.durable else 'no'} | {cell.size} | "
            f"{figure(f['mean'], 3)} | {figure(f['p99'], 3)} | {grids.cell_text(f)} | {figure(f['mbit'], 2)} | "
            f"{figure(f['lost'], 0)} | {', '.join(f.get('noise') or []) or '-'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mqusers matrix", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="stomp://127.0.0.1:61613", help="broker URL, as for locust --host")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated: " + ", ".join(MODES))
    parser.add_argument("--sizes", default="1KB,10KB,20KB", help="comma-separated message sizes")
    grids.add_options(parser, 100_000)
    parser.add_argument("--rate", type=float, default=0, help="total messages/s per cell (0 = as fast as possible)")
    parser.add_argument("--out", default="reports/matrix", help="folder for each run's JSON report")
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
        sizes = list(dict.fromkeys(s.strip() for s in args.sizes.split(",")))
        for size in sizes:
            parse_size(size)
        modes = [m.strip() for m in args.modes.split(",")]
        if unknown := [m for m in modes if m not in MODES]:
            raise OptionError(f"--modes: {', '.join(unknown)} unknown")
        steady = grids.steady(args)
        grid = cells(modes, sizes)
        missing = sorted({name for name in map(locustfile, grid) if not (args.locustfiles / name).is_file()})
        if missing:
            raise OptionError(f"--locustfiles: {args.locustfiles} has no {', '.join(missing)}")
    except OptionError as error:
        sys.stderr.write(f"mqusers matrix: {error}\n")
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    failed, rates, warmups = 0, {}, {}
    measured: dict[Cell, list[tuple[dict[str, Any], Run]]] = {cell: [] for cell in grid}
    order = grids.interleaved(grid, steady.repeats)
    with interruptible() as stop:
        for index, cell in enumerate(grid, 1):
            if stop.requested:
                break
            report = out / f"{cell.slug}-warmup.json"
            title = f"[warm-up {index}/{len(grid)}] {cell.slug} (left out)"
            run_args = command(cell, args.locustfiles, args.host, args.rate, report, steady.warmup_args(), extra)
            document = grids.attempt(title, run_args, report, steady.warmup_seconds, stop)
            if document is None:
                failed += not stop.requested
                continue
            warmups[cell] = {**figures(cell, document), "report": str(report)}
            rates[cell] = warmups[cell]["msgs"]
        for index, (repeat, cell) in enumerate(order, 1):
            if stop.requested:
                break
            report = out / f"{cell.slug}-{repeat}.json"
            seconds = steady.run_seconds(rates.get(cell))
            run_args = command(cell, args.locustfiles, args.host, args.rate, report, steady.run_args(rates.get(cell)),
                               extra)  # fmt: skip
            title = f"[{index}/{len(order)}] {cell.slug} run {repeat}/{steady.repeats}"
            document = grids.attempt(title, run_args, report, seconds, stop)
            if document is None:
                failed += not stop.requested
                continue
            found = {"repeat": repeat, "report": str(report), **figures(cell, document)}
            run = grids.counted_run(document, found["destination"], str(report))
            if run is None:
                failed += 1
                continue
            measured[cell].append(({**found, "msgs": grids.throughput(run)}, run))
    marks = noise({cell: [run for _, run in runs] for cell, runs in measured.items()})
    results: dict[str, list[tuple[Cell, dict[str, Any]]]] = {m: [] for m in modes}
    for cell in grid:
        if measured[cell]:
            results[cell.mode].append((cell, {**cell_figures(cell, measured[cell]), "noise": marks[cell],
                                              "warmup": warmups.get(cell)}))  # fmt: skip
    print()
    print("\n\n".join(markdown(mode, rows) for mode, rows in results.items() if rows))
    document = matrix_document(results, steady, args.rate, stop.requested)
    print("\n" + "\n".join(document["notes"]))
    if args.json:
        Path(args.json).write_text(json.dumps(document, indent=2) + "\n")
    if args.html:
        write_html(args.html, [document], ["matrix"])
    return 1 if failed or stop.requested else 0


def matrix_document(
    results: dict[str, list[tuple[Cell, dict[str, Any]]]], steady: grids.Steady, rate: float, interrupted: bool = False
) -> dict[str, Any]:
    """The grid's figures as a JSON document (``kind: matrix``), each cell with its runs and their reports."""
    cells = [{"mode": cell.mode, "persistent": cell.persistent, "durable": cell.durable, "size": cell.size, **figures}
             for rows in results.values() for cell, figures in rows]  # fmt: skip
    notes = [steady.legend(), *([NOT_PERSISTED] if any(cell.get("persisted") is False for cell in cells) else []),
             *([INTERRUPTED] if interrupted else [])]  # fmt: skip
    return {"kind": "matrix", **steady.document(), "rate": rate, "cells": cells, "notes": notes,
            "interrupted": interrupted}  # fmt: skip
