"""A run's report as people and programs read it: the console summary, the JSON document, the CSV.

Everything here reads a :class:`mqusers.report.build.RunReport`; nothing is computed twice.
"""

from __future__ import annotations

import csv
import json
import textwrap
from dataclasses import asdict
from typing import Any

from mqusers.options.parsing import brokers_text
from mqusers.options.table import SECRET_FIELDS
from mqusers.report.backlogreport import backlog_sentence, phase_table, priority_sentence, priority_table
from mqusers.report.brokerreport import broker_table
from mqusers.report.build import AUDIT_KEYS, Row, RunReport
from mqusers.report.failover import failover_table
from mqusers.report.figures import count, mbit, ms, rate, seconds
from mqusers.report.manydest import section_lines
from mqusers.report.networkbrokers import network_table
from mqusers.report.perbroker import spread_table
from mqusers.report.transactionsreport import transactions_sentence
from mqusers.run.verdicts import Generator, master_sentence

#: Sentences of the summary wrap at this width (a table is as wide as its longest destination's name).
WIDTH = 99
#: Latency columns of the summary (every figure is in the JSON), each header with its unit.
_LATENCY_COLUMNS = ("p50", "p90", "p99", "p99.9", "max")
#: The audit's columns, shown as a table only when one of them is not 0.
_AUDIT_COLUMNS = {"lost": "lost", "worker_lost": "worker-lost", "unreceived": "unreceived",
                  "unconfirmed": "unconfirmed", "duplicated": "dup", "after_reconnect": "dup-reconnect",
                  "reordered": "reord", "redelivered": "redeliv", "aborted_delivered": "aborted-deliv",
                  "not_selected": "not-selected", "selector_violations": "selector-violations", "expired": "expired",
                  "delivered_expired": "dlv-expired", "group_violations": "group-violations",
                  "nacks": "nacks", "dead_lettered": "dead-lettered"}  # fmt: skip
#: Columns shown only in a run that has one of them: every other run's table stays as narrow as it was.
_RARE_COLUMNS = ("worker_lost", "aborted_delivered", "not_selected", "selector_violations", "expired",
                 "delivered_expired", "group_violations", "nacks", "dead_lettered")  # fmt: skip


def format_summary(report: RunReport, files: list[str] | None = None) -> str:
    """The console summary: what ran, what happened, latency, the verdicts and ``files`` (the paths written).

    Within about 25 lines of 100 columns for a run of one destination: the first screen a user reads.
    """
    lines = [wrap(sentence) for sentence in _what_ran(report)]
    if report.rows:
        lines.append(render_table(_traffic_table(report)))
        lines += _audit(report)
        if spread := spread_table([row.document() for row in report.rows]):
            lines.append(render_table(spread))
    for section in report.patterns:
        lines += [render_table(part) if isinstance(part, list) else wrap(part) for part in section_lines(section)]
    if report.facts.backlog is not None:
        lines += [
            render_table(phase_table(report.facts.backlog, report.operations)),
            wrap(backlog_sentence(report.facts.backlog)),
        ]
        if priorities := priority_table(report.facts.backlog, report.operations):
            lines += [render_table(priorities), wrap(priority_sentence(report.facts.backlog) or "")]
    if latency := _latency_table(report):
        lines.append(render_table(latency))
    if failover := failover_table(report.facts.failover):
        lines.append(render_table(failover))
    if broker := broker_table(report.facts.broker, [row.document() for row in report.rows]):
        lines.append(render_table(broker))
    if network := network_table(report.facts.broker, [row.document() for row in report.rows]):
        lines.append(render_table(network))
    sentences = [*report.notes, *_connections_line(report), *transactions_sentence(report.transactions),
                 *_generator_lines(report.facts.generator)]  # fmt: skip
    if clocks := report.facts.clocks:
        sentences.append(_clocks_line(clocks))
    if files:
        sentences.append(f"files written: {', '.join(files)}")
    lines += [wrap(sentence) for sentence in sentences]
    return "\n".join(lines)


def wrap(sentence: str) -> str:
    """A sentence within :data:`WIDTH` columns, its continuation lines indented (a path is never cut)."""
    return textwrap.fill(sentence, WIDTH, subsequent_indent="  ", break_on_hyphens=False, break_long_words=False)


def _what_ran(report: RunReport) -> list[str]:
    facts, settings, scenario = report.facts, report.settings, report.facts.scenario
    where = " ".join(filter(None, [scenario.get("locustfile"), f"on {scenario['server']}" if scenario.get("server")
                                   else "", f"at {settings.broker}" if settings.broker else "",
                                   f"(consumers at {brokers_text(settings.consumer_brokers)})"
                                   if settings.consumer_brokers
                                   else ""]))  # fmt: skip
    users = scenario.get("users") or {}
    size = settings.size or scenario.get("size")
    messages = scenario["payload"] if scenario.get("payload") else f"{count(size)} B messages" if size else ""
    load = [f"{count(sum(users.values()))} users ({', '.join(f'{n} {name}' for name, n in sorted(users.items()))})"
            if users else "", scenario.get("rate", ""), messages,
            f"{facts.stopped - facts.started:,.1f} s"]  # fmt: skip
    figures = (f"the {settings.warmup:g} s warm-up left out (of Locust's tables too); rates over their spans "
               "(send s, recv s)" if settings.warmup else "rates over their spans (send s: first to last send; "
               "recv s: first to last receive)")  # fmt: skip
    return [
        f"mqusers summary: run {facts.run_id}" + (f", {where}" if where else ""),
        f"load: {', '.join(filter(None, load))}",
        f"figures: {figures}",
    ]


def _traffic_table(report: RunReport) -> list[list[str]]:
    """Per destination: counts, each direction's span and its rates over it (loss is the audit's, below)."""
    table = [["destination", "sent", "send s", "sent/s", "Mbit/s", "received", "recv s", "recv/s", "Mbit/s", "errors"]]
    for row in report.rows:
        t = row.totals
        table.append([t.destination, count(t.sent), seconds(t.send_span_s), rate(t.send_rate_msgs),
                      mbit(t.send_rate_mbit), count(t.received), seconds(t.receive_span_s),
                      rate(t.receive_rate_msgs), mbit(t.receive_rate_mbit), count(t.errors)])  # fmt: skip
    return table


def _audit(report: RunReport) -> list[str]:
    """The audit's verdict: one line when it found nothing, else its table."""
    if not any(row.audit[key] for row in report.rows for key in _AUDIT_COLUMNS):
        return ["audit: nothing lost, unreceived, duplicated, reordered or redelivered"]
    keys = [key for key in _AUDIT_COLUMNS if key not in _RARE_COLUMNS or any(row.audit[key] for row in report.rows)]
    table = [["audit", *(_AUDIT_COLUMNS[key] for key in keys)]]
    table += [[row.destination, *(count(row.audit[key]) for key in keys)] for row in report.rows]
    return [render_table(table)]


def _latency_table(report: RunReport) -> list[list[str]]:
    """Send-to-receive latency per destination, then every other timed operation; ms with µs digits."""
    table = [["latency", "count", *(f"{key} ms" for key in _LATENCY_COLUMNS)]]
    for row in report.rows:
        if row.totals.received:
            table.append([f"receive {row.destination}", count(row.totals.received),
                          *(ms(row.latency_ms.get(_key(k))) for k in _LATENCY_COLUMNS)])  # fmt: skip
    for op in report.operations:
        figures = op["latency_ms"]
        failed = f" ({count(op['errors'])} failed)" if op["errors"] else ""
        table.append([op["name"] + failed, count(op["count"]), *(ms(figures.get(_key(k))) for k in _LATENCY_COLUMNS)])
    return table if len(table) > 1 else []


def _key(column: str) -> str:
    return column.replace(".", "")  # p99.9 is p999 in the figures


def _connections_line(report: RunReport) -> list[str]:
    """Connection churn's sentence (a run whose Users closed connections on purpose): opened per second,
    closed, and whether the generator's open files and the broker's connections came back."""
    c = report.connections
    if c is None or not c["closed"] + c["close_failed"]:
        return []
    files = (
        "open files unknown"
        if c["open_files_start"] is None or c["open_files_end"] is None
        else f"open files {count(c['open_files_start'])} at the start, {count(c['open_files_end'])} at the end"
    )
    broker = ("the broker reports no connection count" if c["broker_connections_end"] is None else
              f"the broker's own count at the end: {count(c['broker_connections_end'])}")  # fmt: skip
    return [f"connections: {count(c['opened'])} opened ({rate(c['per_s'])}/s), {count(c['failed'])} failed; "
            f"{count(c['closed'])} closed with the broker's receipt, {count(c['close_failed'])} without; {files}; "
            f"{broker}"]  # fmt: skip


#: Workers named one by one in the clocks' line up to this many; beyond, those within their error are a range.
CLOCKS_NAMED = 4


def _clocks_line(clocks: dict[str, dict[str, float]]) -> str:
    """One sentence for every worker, so the first screen stays short with a hundred: each corrected one named."""

    def each(worker: str, c: dict[str, float]) -> str:
        kept = "" if c["applied_ms"] else " (within its error: not corrected)"
        return f"{worker} {c['offset_ms']:+,.3f} ± {c['error_ms']:,.3f}{kept}"

    if len(clocks) <= CLOCKS_NAMED:
        return f"clocks against the master, ms: {', '.join(each(w, c) for w, c in sorted(clocks.items()))}"
    noise = [c for c in clocks.values() if not c["applied_ms"]]
    corrected = [each(w, c) for w, c in sorted(clocks.items()) if c["applied_ms"]]
    parts = []
    if noise:
        offsets, errors = [c["offset_ms"] for c in noise], [c["error_ms"] for c in noise]
        parts.append(f"{len(noise)} of {len(clocks)} workers within their error, not corrected (offsets "
                     f"{min(offsets):+,.3f} to {max(offsets):+,.3f}, errors ± {min(errors):,.3f} to "
                     f"{max(errors):,.3f})")  # fmt: skip
    return f"clocks against the master, ms: {'; '.join([*parts, *corrected])}"


def _generator_lines(generator: Generator) -> list[str]:
    """The verdict's one sentence (:func:`mqusers.run.verdicts.sentence`), as the JSON, web UI and HTML say it,
    and the master's (:func:`mqusers.run.verdicts.master_sentence`) in a distributed run."""
    lines = [f"generator: {generator['sentence'] if generator['processes'] else generator['verdict']}"]
    if master := generator.get("master"):
        lines.append(master_sentence(master))
    return lines


def render_table(table: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    rendered = []
    for row in table:
        cells = [row[0].ljust(widths[0]), *(cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True))]
        rendered.append("  ".join(cells).rstrip())
    return "\n".join(rendered)


def report_document(report: RunReport) -> dict[str, Any]:
    """The summary as JSON-ready data: rows per destination and operation, plus run metadata."""
    facts, settings = report.facts, report.settings
    options = {k: v for k, v in asdict(settings).items() if k not in SECRET_FIELDS}
    options["broker"] = str(settings.broker) if settings.broker else None
    options["consumer_brokers"] = [str(address) for address in settings.consumer_brokers]
    options["payload"] = str(settings.payload) if settings.payload else None
    options["profile"] = str(settings.profile) if settings.profile else None
    options["size_dist"] = str(settings.size_dist) if settings.size_dist else None
    options["faults"] = [f"{record['at_s']:g}s:{record['command']}" for record in facts.faults]  # secrets masked
    return {
        "kind": "run",
        "run_id": facts.run_id,
        "started": facts.started,
        "stopped": facts.stopped,
        "ended_by": facts.ended_by,
        "scenario": facts.scenario,
        "drain": asdict(facts.drain),
        "options": options,
        "clock_offsets": facts.clocks,
        "generator": facts.generator,
        "failover": facts.failover,
        "faults": facts.faults,
        "lost_workers": facts.lost_workers,
        "start_failures": facts.start_failures,
        "broker": facts.broker,
        "backlog": facts.backlog,
        "destinations": [row.document() for row in report.rows],
        "patterns": report.patterns,
        "operations": report.operations,
        "connections": report.connections,
        "transactions": report.transactions,
        "notes": report.notes,
        "series": report.series,
        "histograms": report.histograms,
        "intervals": report.intervals,
    }


def write_json(path: str, document: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=2, sort_keys=True)
        handle.write("\n")


CSV_COLUMNS = ("destination", "sent", "received", "errors", "span_s", "send_span_s", "send_rate_msgs",
               "send_rate_mbit", "receive_span_s", "receive_rate_msgs", "receive_rate_mbit", "throughput_msgs",
               "throughput_mbit", *AUDIT_KEYS)  # fmt: skip


def write_csv(path: str, rows: list[Row], patterns: dict[str, list[dict[str, Any]]] | None = None) -> None:
    """One line per destination: the counts, rates, audit and every latency figure (ms) flattened.

    A pattern's row is followed by a line per destination of it (``patterns``: each one's
    :func:`~mqusers.report.manydest.destination_table`): the audit's figures, ``received`` its timed
    deliveries, its receive rate over the pattern's span, p50 and p99; the other columns empty.
    """
    latency_keys = sorted({key for row in rows for key in row.latency_ms} | ({"p50", "p99"} if patterns else set()))
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([*CSV_COLUMNS, *(f"latency_{key}_ms" for key in latency_keys)])
        for row in rows:
            document = row.document()
            writer.writerow([*(document[c] for c in CSV_COLUMNS), *(row.latency_ms.get(k, "") for k in latency_keys)])
            for line in (patterns or {}).get(row.destination, []):
                cells = {**line, "received": line["deliveries"]}
                writer.writerow([*(cells.get(c, "") for c in CSV_COLUMNS),
                                 *(cells.get(f"{k}_ms", "") for k in latency_keys)])  # fmt: skip
