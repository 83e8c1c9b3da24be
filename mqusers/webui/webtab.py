"""What the web UI's mqusers tabs show: live figures per destination during a test, the exact summary after it.

Locust's own table rounds receive latency to whole milliseconds and its RPS chart adds sends and
receives together; these rows keep them apart and keep microseconds. Live, they read the run
state as the report would (the book's µs HdrHistograms since the start, the audit's running
verdict; the generator's health in the run tab) plus the recent rates from the per-second series; at the end they
are the report's own rows, so the page and ``--mq-report-json`` say the same. Pure: no Flask.
"""

from __future__ import annotations

import time
from typing import Any

from mqusers.measure.series import Series
from mqusers.measure.totals import DestinationRow, destination_rows
from mqusers.options.parsing import brokers_text
from mqusers.options.settings import Settings
from mqusers.report.build import RunReport
from mqusers.report.gates import gate_failures
from mqusers.run.context import RunContext
from mqusers.run.verdicts import Generator, master_sentence

#: Live rates are the mean over this many complete buckets of the series.
RATE_WINDOW = 5
#: The destination table: (row key, column title). Live and final rows share it.
#: Locust's table shows a cell as it is given: the figures are text with thousands separators, one
#: format per kind (counts whole, rates to 0.1 msg/s, latency in ms with µs digits, as the console and reports).
COLUMNS = (("destination", "Destination"), ("sent", "Sent"), ("received", "Received"),
           ("sent_per_s", "Sent msg/s"), ("received_per_s", "Received msg/s"), ("backlog", "Backlog"),
           ("p50_ms", "p50 ms"), ("p99_ms", "p99 ms"), ("p999_ms", "p99.9 ms"), ("max_ms", "max ms"),
           ("lost", "Lost"), ("duplicated", "Dup."), ("foreign", "Foreign"),
           ("errors", "Errors"))  # fmt: skip
#: The generator's verdict is the run's, not a destination's: it is in the run table (one column fewer
#: keeps the destination table inside a 1280 px window).
#: The run table: one fact per row, the first says whether the figures are live or final.
FACT_COLUMNS = (("fact", "Run"), ("value", "Value"))


def generator_text(generator: Generator) -> str:
    """The verdict's one sentence (:func:`mqusers.run.verdicts.sentence`), as the console and the reports say it."""
    return generator["sentence"] if generator["processes"] else generator["verdict"]


def recent_rates(series: Series, destination: str, now: float, lag_s: float) -> tuple[float, float] | None:
    """(sent/s, received/s) over the last complete buckets, ``lag_s`` before ``now``; None before there are any.

    ``lag_s``: how late a second's counts are complete here (the recorder's flush, a worker's report).
    """
    buckets = series.traffic.get(destination)
    if not buckets:
        return None
    width = series.width_s
    end = int(now - lag_s) // width * width
    # The first bucket is partial: the run started within it.
    start = max(end - RATE_WINDOW * width, min(buckets) + width)
    if end <= start:
        return None
    window = [buckets[t] for t in range(start, end, width) if t in buckets]
    seconds = end - start
    return sum(b.sent for b in window) / seconds, sum(b.received for b in window) / seconds


def _ms(figures: dict[str, float], key: str) -> str | None:
    value = figures.get(key)
    return None if value is None else f"{value:,.3f}"


def _rate(value: float) -> str:
    return f"{value:,.1f}"


def _row(totals: DestinationRow, audit: dict[str, Any]) -> dict[str, Any]:
    latency = totals.receive.latency_ms()
    counts = {"sent": totals.sent, "received": totals.received, "backlog": totals.backlog,
              "lost": audit.get("lost", 0), "duplicated": audit.get("duplicated", 0),
              "foreign": audit.get("foreign", 0), "errors": totals.errors}  # fmt: skip
    return {
        "name": totals.destination,  # the page keys its rows by name
        "destination": totals.destination,
        **{key: f"{value:,}" for key, value in counts.items()},
        **{f"{key}_ms": _ms(latency, key) for key in ("p50", "p99", "p999", "max")},
    }


def live_rows(ctx: RunContext, lag_s: float, now: float | None = None) -> list[dict[str, Any]]:
    """Each destination's figures so far; rates over the last :data:`RATE_WINDOW` complete seconds."""
    now = time.time() if now is None else now
    verdict = ctx.audit.verdict(int(now * 1e9), int(ctx.settings.drain * 1e9))
    rows = []
    for totals in destination_rows(ctx.book.tallies):
        row = _row(totals, verdict.get(totals.destination, {}))
        rates = recent_rates(ctx.series, totals.destination, now, lag_s)
        row["sent_per_s"], row["received_per_s"] = (_rate(r) for r in rates) if rates else (None, None)
        rows.append(row)
    return rows


def final_rows(report: RunReport) -> list[dict[str, Any]]:
    """The report's rows: sends over their own span, receives over theirs, as the JSON has them."""
    rows = []
    for line in report.rows:
        totals = line.totals
        row = _row(totals, line.audit)
        row["sent_per_s"], row["received_per_s"] = _rate(totals.send_rate_msgs), _rate(totals.receive_rate_msgs)
        rows.append(row)
    return rows


def _facts(*facts: tuple[str, str]) -> list[dict[str, str]]:
    # The page sorts rows by "name": the facts' order.
    return [{"name": f"{n:03d}", "fact": fact, "value": value} for n, (fact, value) in enumerate(facts)]


def master_facts(generator: Generator) -> list[tuple[str, str]]:
    """The master's cost in a distributed run: a fact of its own (none otherwise)."""
    master = generator.get("master")
    return [("master", master_sentence(master).removeprefix("master: "))] if master else []


def broker_facts(settings: Settings) -> list[tuple[str, str]]:
    """The broker, or with consumers on other brokers (``--mq-consumer-host``) the producers' and theirs."""
    if not settings.consumer_brokers:
        return [("broker", str(settings.broker or "-"))]
    return [("producers' broker", str(settings.broker or "-")),
            ("consumers at", brokers_text(settings.consumer_brokers))]  # fmt: skip


def live_facts(ctx: RunContext, generator: Generator, lag_s: float) -> list[dict[str, str]]:
    started = time.strftime("%H:%M:%S", time.localtime(ctx.started)) if ctx.started else "-"
    return _facts(
        ("figures", f"live since {started}: counts and latency (send to receive) from the exact µs histograms"),
        ("rates", f"the last {RATE_WINDOW} complete seconds, about {lag_s:g} s behind"),
        ("run id", ctx.run_id),
        *broker_facts(ctx.settings),
        ("generator", generator_text(generator)),
        *master_facts(generator),
    )


def final_facts(report: RunReport, html_link: str | None, json_path: str | None) -> list[dict[str, str]]:
    """How the run went: the summary's notes, failed gates, where the reports are."""
    facts = report.facts
    duration = facts.stopped - facts.started
    rows = [
        ("figures", f"final, the report's: {duration:.1f} s; sends over their span, receives over theirs"),
        ("run id", facts.run_id),
        *broker_facts(report.settings),
        ("generator", generator_text(facts.generator)),
        *master_facts(facts.generator),
        *(("note", note) for note in report.notes),
        *(("gate failed", failure) for failure in gate_failures(report)),
    ]
    if html_link:
        rows.append(("HTML report", f"{html_link} (a link in the Download Data tab)"))
    if json_path:
        rows.append(("JSON report", json_path))
    return _facts(*rows)


def refused_facts(reason: str) -> list[dict[str, str]]:
    return _facts(("refused", reason))
