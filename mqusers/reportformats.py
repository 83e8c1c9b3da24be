"""A run's report as people and programs read it: the console summary, the JSON document, the CSV.

Everything here reads a :class:`mqusers.report.RunReport`; nothing is computed twice.
"""

from __future__ import annotations

import csv
import json
from dataclasses import asdict
from typing import Any

from mqusers.brokerreport import broker_table
from mqusers.failover import failover_table
from mqusers.options import SECRET_FIELDS
from mqusers.report import AUDIT_KEYS, Row, RunReport

_LATENCY_COLUMNS = ("mean", "p50", "p90", "p99", "max")


def _ms(figures: dict[str, float], key: str) -> str:
    value = figures.get(key)
    return "-" if value is None else f"{value:.3f}"


def format_summary(report: RunReport) -> str:
    facts = report.facts
    duration = facts.stopped - facts.started
    warmup = (
        f"; the {report.settings.warmup:g} s warm-up left out, Locust's table has it" if report.settings.warmup else ""
    )
    lines = [f"mqusers summary: run {facts.run_id}, {duration:.1f} s (latency in ms, send to receive; sends over "
             f"their first to last send, receives over their first to last receive{warmup})"]  # fmt: skip
    for worker, clock in sorted(facts.clocks.items()):
        estimate = f"{clock['offset_ms']:+.3f} ms ± {clock['error_ms']:.3f} ms against the master"
        unapplied = "" if clock["applied_ms"] else " (within its error: not corrected)"
        lines.append(f"clock of {worker}: {estimate}{unapplied}")
    table = [["destination", "sent", "send s", "sent/s", "sent Mbit/s", "received", "recv s", "recv/s", "recv Mbit/s",
              *_LATENCY_COLUMNS, "errors"]]  # fmt: skip
    audit = [["destination", "lost", "unreceived", "unconfirmed", "dup", "dup-reconnect", "reord", "redeliv",
              "foreign", "other-run"]]  # fmt: skip
    for row in report.rows:
        t, figures = row.totals, row.latency_ms
        table.append(
            [t.destination, str(t.sent), f"{t.send_span_s:.3f}", f"{t.send_rate_msgs:.1f}", f"{t.send_rate_mbit:.2f}",
             str(t.received), f"{t.receive_span_s:.3f}", f"{t.receive_rate_msgs:.1f}", f"{t.receive_rate_mbit:.2f}",
             *(_ms(figures, key) for key in _LATENCY_COLUMNS), str(t.errors)]
        )  # fmt: skip
        audit.append([t.destination, *(str(row.audit[k]) for k in ("lost", "unreceived", "unconfirmed", "duplicated",
                      "after_reconnect", "reordered", "redelivered", "foreign", "other_run"))])  # fmt: skip
    if report.rows:
        lines += [_render(table), _render(audit)]
    if report.operations:
        op_table = [["operation", "count", *_LATENCY_COLUMNS, "errors"]]
        for op in report.operations:
            figures = op["latency_ms"]
            op_table.append(
                [op["name"], str(op["count"]), *(_ms(figures, k) for k in _LATENCY_COLUMNS), str(op["errors"])]
            )
        lines.append(_render(op_table))
    if failover := failover_table(facts.failover):
        lines.append(_render(failover))
    if broker := broker_table(facts.broker, [row.document() for row in report.rows]):
        lines.append(_render(broker))
    lines += report.notes
    return "\n".join(lines)


def _render(table: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    rendered = []
    for row in table:
        cells = [row[0].ljust(widths[0]), *(cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True))]
        rendered.append("  ".join(cells))
    return "\n".join(rendered)


def report_document(report: RunReport) -> dict[str, Any]:
    """The summary as JSON-ready data: rows per destination and operation, plus run metadata."""
    facts, settings = report.facts, report.settings
    options = {k: v for k, v in asdict(settings).items() if k not in SECRET_FIELDS}
    options["broker"] = str(settings.broker) if settings.broker else None
    options["faults"] = [f"{record['at_s']:g}s:{record['command']}" for record in facts.faults]  # secrets masked
    return {
        "kind": "run",
        "run_id": facts.run_id,
        "started": facts.started,
        "stopped": facts.stopped,
        "ended_by": facts.ended_by,
        "drain": asdict(facts.drain),
        "options": options,
        "clock_offsets": facts.clocks,
        "generator": facts.generator,
        "failover": facts.failover,
        "faults": facts.faults,
        "broker": facts.broker,
        "destinations": [row.document() for row in report.rows],
        "operations": report.operations,
        "notes": report.notes,
        "series": report.series,
        "histograms": report.histograms,
    }


def write_json(path: str, document: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=2, sort_keys=True)
        handle.write("\n")


CSV_COLUMNS = ("destination", "sent", "received", "errors", "span_s", "send_span_s", "send_rate_msgs",
               "send_rate_mbit", "receive_span_s", "receive_rate_msgs", "receive_rate_mbit", "throughput_msgs",
               "throughput_mbit", *AUDIT_KEYS)  # fmt: skip


def write_csv(path: str, rows: list[Row]) -> None:
    """One line per destination: the counts, rates, audit and every latency figure (ms) flattened."""
    latency_keys = sorted({key for row in rows for key in row.latency_ms})
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([*CSV_COLUMNS, *(f"latency_{key}_ms" for key in latency_keys)])
        for row in rows:
            document = row.document()
            writer.writerow([*(document[c] for c in CSV_COLUMNS), *(row.latency_ms.get(k, "") for k in latency_keys)])
