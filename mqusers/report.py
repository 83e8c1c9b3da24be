"""The end-of-run summary: one row per destination, then the timed operations."""

from __future__ import annotations

import csv
import json
from dataclasses import asdict
from typing import Any

from mqusers.measure.book import Book, Tally
from mqusers.options import Settings

_LATENCY_COLUMNS = ("mean", "p50", "p90", "p99", "max")


AUDIT_KEYS = ("lost", "duplicated", "reordered", "redelivered", "in_flight", "resent")


def destination_rows(
    book: Book, duration_s: float, verdict: dict[str, dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Per destination: sent, received (deliveries), rates, latency (ms), errors, and the audit's figures."""
    by_destination: dict[str, dict[str, Tally]] = {}
    for name, tally in book.tallies.items():
        operation, _, destination = name.partition(" ")
        if destination.startswith("/"):
            by_destination.setdefault(destination, {})[operation] = tally
    rows = []
    seconds = max(duration_s, 1e-9)
    for destination, operations in sorted(by_destination.items()):
        if "send" not in operations and "receive" not in operations:
            continue
        sent, received = operations.get("send", Tally()), operations.get("receive", Tally())
        rows.append(
            {
                "destination": destination,
                "sent": sent.count - sent.failures,
                "received": received.count,
                "send_rate_msgs": (sent.count - sent.failures) / seconds,
                "receive_rate_msgs": received.count / seconds,
                "receive_rate_mbit": received.bytes * 8 / seconds / 1e6,
                "latency_ms": received.latency_ms(),
                "negative_latencies": received.negative,
                "errors": sum(t.failures for t in operations.values()),
                **{key: (verdict or {}).get(destination, {}).get(key, 0) for key in AUDIT_KEYS},
            }
        )
    return rows


def operation_rows(book: Book) -> list[dict[str, Any]]:
    """Every timed operation other than plain sends and receives (connect, receipt, request...)."""
    rows = []
    for name, tally in sorted(book.tallies.items()):
        if name.partition(" ")[0] in ("send", "receive"):
            continue
        rows.append({"name": name, "count": tally.count, "errors": tally.failures, "latency_ms": tally.latency_ms()})
    return rows


def _ms(figures: dict[str, float], key: str) -> str:
    value = figures.get(key)
    return "-" if value is None else f"{value:.3f}"


def format_summary(
    rows: list[dict[str, Any]], book: Book, duration_s: float, run_id: str, clocks: dict[str, Any] | None = None
) -> str:
    lines = [f"mqusers summary: run {run_id}, {duration_s:.1f} s (latency in ms, send to receive)"]
    for worker, clock in sorted((clocks or {}).items()):
        lines.append(f"clock of {worker}: {clock['offset_ms']:+.3f} ms ± {clock['error_ms']:.3f} ms against the master")
    header = [
        "destination",
        "sent",
        "received",
        "msg/s",
        "Mbit/s",
        *_LATENCY_COLUMNS,
        "lost",
        "dup",
        "reord",
        "in-flight",
        "errors",
    ]
    table = [header]
    for row in rows:
        figures = row["latency_ms"]
        table.append(
            [
                row["destination"],
                str(row["sent"]),
                str(row["received"]),
                f"{row['receive_rate_msgs']:.1f}",
                f"{row['receive_rate_mbit']:.2f}",
                *(_ms(figures, key) for key in _LATENCY_COLUMNS),
                *(str(row[key]) for key in ("lost", "duplicated", "reordered", "in_flight")),
                str(row["errors"]),
            ]
        )
    operations = operation_rows(book)
    lines.append(_render(table))
    if operations:
        op_table = [["operation", "count", *_LATENCY_COLUMNS, "errors"]]
        for row in operations:
            figures = row["latency_ms"]
            op_table.append(
                [row["name"], str(row["count"]), *(_ms(figures, k) for k in _LATENCY_COLUMNS), str(row["errors"])]
            )
        lines.append(_render(op_table))
    return "\n".join(lines)


def _render(table: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    rendered = []
    for row in table:
        cells = [row[0].ljust(widths[0]), *(cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True))]
        rendered.append("  ".join(cells))
    return "\n".join(rendered)


def report_document(
    rows: list[dict[str, Any]],
    book: Book,
    started: float,
    stopped: float,
    run_id: str,
    settings: Settings,
    clocks: dict[str, Any],
) -> dict[str, Any]:
    """The summary as JSON-ready data: rows per destination and operation, plus run metadata."""
    options = {k: v for k, v in asdict(settings).items() if k != "password"}
    options["broker"] = str(settings.broker) if settings.broker else None
    return {
        "run_id": run_id,
        "started": started,
        "stopped": stopped,
        "options": options,
        "clock_offsets": clocks,
        "destinations": rows,
        "operations": operation_rows(book),
    }


def write_json(path: str, document: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=2, sort_keys=True)
        handle.write("\n")


CSV_COLUMNS = ("destination", "sent", "received", "errors", "send_rate_msgs", "receive_rate_msgs", "receive_rate_mbit")


def write_csv(path: str, rows: list[dict[str, Any]]) -> None:
    """One line per destination: the counts, rates and every latency figure (ms) flattened."""
    latency_keys = sorted({key for row in rows for key in row["latency_ms"]})
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([*CSV_COLUMNS, *(f"latency_{key}_ms" for key in latency_keys)])
        for row in rows:
            writer.writerow([*(row[c] for c in CSV_COLUMNS), *(row["latency_ms"].get(k, "") for k in latency_keys)])


def gate_failures(rows: list[dict[str, Any]], settings: Settings) -> list[str]:
    """One line per gate a destination fails (``--mq-max-p99-ms``, ``--mq-max-errors``, ``--mq-min-rate``)."""
    failures = []
    for row in rows:
        where = row["destination"]
        p99 = row["latency_ms"].get("p99")
        if settings.max_p99_ms is not None and p99 is not None and p99 > settings.max_p99_ms:
            failures.append(f"{where}: p99 {p99:.3f} ms > --mq-max-p99-ms {settings.max_p99_ms:g}")
        if settings.max_errors is not None and row["errors"] > settings.max_errors:
            failures.append(f"{where}: {row['errors']} errors > --mq-max-errors {settings.max_errors}")
        if settings.max_lost is not None and row["lost"] > settings.max_lost:
            failures.append(f"{where}: {row['lost']} lost > --mq-max-lost {settings.max_lost}")
        if settings.min_rate is not None and row["receive_rate_msgs"] < settings.min_rate:
            rate = row["receive_rate_msgs"]
            failures.append(f"{where}: {rate:.1f} msg/s received < --mq-min-rate {settings.min_rate:g}")
    return failures
