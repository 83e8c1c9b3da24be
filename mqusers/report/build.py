"""The end-of-run report: one row per destination, the timed operations, and how the run ended.

:func:`build_report` computes it once; the gates (:mod:`mqusers.report.gates`) and the console summary,
JSON and CSV files (:mod:`mqusers.report.reportformats`) only read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mqusers.measure.book import Book
from mqusers.measure.connections import Connections, connection_figures
from mqusers.measure.hdrintervals import Intervals
from mqusers.measure.names import RECEIVE, SCHEDULE_LAG, SEND, split_event_name
from mqusers.measure.perdestination import DestinationFigures
from mqusers.measure.series import Series
from mqusers.measure.totals import DestinationRow, destination_rows
from mqusers.measure.transactionfigures import Transactions, transaction_figures
from mqusers.options.settings import Settings
from mqusers.report.brokerreport import broker_notes
from mqusers.report.failover import failover_notes
from mqusers.report.manydest import fold_verdict, pattern_sections, pattern_tables
from mqusers.report.networkbrokers import network_notes
from mqusers.report.perbroker import by_broker
from mqusers.report.transactionsreport import aborted_delivered
from mqusers.run.ending import DrainOutcome
from mqusers.run.faults import FaultRecord
from mqusers.run.verdicts import Generator, blocked_by_destination, overall

AUDIT_KEYS = ("lost", "worker_lost", "unreceived", "unconfirmed", "duplicated", "after_reconnect", "reordered",
              "redelivered", "in_flight", "resent", "foreign", "other_run", "distinct", "aborted",
              "aborted_delivered", "not_selected", "selector_violations", "expired", "delivered_expired", "groups",
              "group_violations", "nacks", "dead_lettered", "probes", "probes_sent")  # fmt: skip
#: The target rate counts as reached within this fraction.
SHORTFALL_TOLERANCE = 0.05
_ENDINGS = {"time": "ended by time (-t or the web UI's stop)", "count": "ended when every message was sent",
            "interrupt": "interrupted (Ctrl-C or SIGTERM)",
            "quit": "ended early: Locust quit without a signal (an unhandled error: see its log)"}  # fmt: skip


@dataclass
class RunFacts:
    """What the summary says besides the rows: identity, how it ended, clocks, the generator."""

    run_id: str
    started: float
    stopped: float
    ended_by: str
    drain: DrainOutcome
    clocks: dict[str, Any] = field(default_factory=dict)
    generator: Generator = field(default_factory=lambda: overall({}))
    #: :func:`mqusers.report.failover.failover_document` and the ``--mq-fault`` records.
    failover: dict[str, Any] = field(default_factory=dict)
    faults: list[FaultRecord] = field(default_factory=list)
    #: :func:`mqusers.report.brokerreport.broker_document`: the broker's own figures.
    broker: dict[str, Any] = field(default_factory=dict)
    #: The run's User mix has producers (:func:`mqusers.wiring.roles.produces`): sending nothing fails a gate.
    produces: bool = False
    #: ... and consumers: a run of consumers only that receives nothing fails a gate.
    consumes: bool = False
    #: What ran: ``locustfile``, ``server`` (the broker's CONNECTED header), ``users`` (per class) and
    #: ``rate`` (the rate asked, in words).
    scenario: dict[str, Any] = field(default_factory=dict)
    #: Operations that failed for want of a file descriptor (:func:`mqusers.wiring.fdlimit.failures`).
    out_of_files: int = 0
    #: Users whose on_start raised: ``user`` (class), ``error``, ``users`` (how many).
    start_failures: list[dict[str, Any]] = field(default_factory=list)
    #: Workers lost mid-test (:class:`mqusers.wiring.lostworkers.LostWorker`): their last seconds are unknown.
    lost_workers: list[dict[str, Any]] = field(default_factory=list)
    #: A backlog run's phases (:meth:`mqusers.measure.backlogfigures.BacklogFigures.document`), else None.
    backlog: dict[str, Any] | None = None
    #: Epoch s the measured window starts at: the end of ``--mq-warmup``, else the test start (0: ``started``).
    measured_from: float = 0.0


@dataclass(frozen=True)
class Row:
    """A destination's line: its totals (sends over their span, receives over theirs, the warm-up in
    neither), its send-to-receive latency (ms) and the audit's figures."""

    totals: DestinationRow
    latency_ms: dict[str, float]
    #: The figures of :data:`AUDIT_KEYS`, 0 when the audit has none.
    audit: dict[str, int]
    by_subscription: list[dict[str, Any]]
    #: Copies delivered per message sent when the audit folded them (a pattern); 0: one per topic subscription.
    copies: int = 0

    @property
    def destination(self) -> str:
        return self.totals.destination

    def document(self) -> dict[str, Any]:
        """The row as the JSON report's ``destinations`` and the CSV have it."""
        t = self.totals
        return {"destination": t.destination, "sent": t.sent, "received": t.received, "span_s": t.span_s,
                "send_span_s": t.send_span_s, "send_rate_msgs": t.send_rate_msgs, "send_rate_mbit": t.send_rate_mbit,
                "receive_span_s": t.receive_span_s, "receive_rate_msgs": t.receive_rate_msgs,
                "receive_rate_mbit": t.receive_rate_mbit, "throughput_msgs": t.throughput_msgs,
                "throughput_mbit": t.throughput_mbit,
                "latency_ms": self.latency_ms, "negative_latencies": t.receive.negative, "errors": t.errors,
                **self.audit, "by_subscription": self.by_subscription,
                "by_broker": by_broker(self.by_subscription)}  # fmt: skip


def rows_of(
    book: Book, verdict: dict[str, dict[str, Any]] | None = None, sending_until: Mapping[str, float] | None = None
) -> list[Row]:
    """Each destination's totals beside the audit's verdict on it (``sending_until``: see
    :func:`~mqusers.measure.totals.destination_rows`)."""
    rows = []
    totals_rows = destination_rows(book.tallies, sending_until)
    folded = fold_verdict(verdict or {}, [totals.destination for totals in totals_rows])
    for totals in totals_rows:
        audit = folded.get(totals.destination, {})
        figures = {key: audit.get(key, 0) for key in AUDIT_KEYS}
        # Messages received at least once (a topic: per subscription); without an audit, every delivery.
        figures["distinct"] = audit.get("received", totals.received)
        rows.append(Row(totals, totals.receive.latency_ms(), figures, audit.get("by_subscription", []),
                        audit.get("copies", 0)))  # fmt: skip
    return rows


def operation_rows(book: Book) -> list[dict[str, Any]]:
    """Every timed operation other than plain sends and receives (connect, receipt, request..., GET /api/x)."""
    rows = []
    for name, tally in sorted(book.tallies.items()):
        if split_event_name(name)[0] in (SEND, RECEIVE):
            continue
        rows.append({"name": name, "count": tally.count, "errors": tally.failures, "latency_ms": tally.latency_ms()})
    return rows


def shortfall(book: Book, settings: Settings) -> str | None:
    """One line when the open model's target rate was not reached, with the schedule lag."""
    if not settings.total_rate:
        return None
    sends = [t for name, t in book.tallies.items() if split_event_name(name)[0] == SEND and t.count]
    if not sends:
        return None
    count = sum(t.count - t.failures for t in sends)
    span = max(t.last for t in sends) - min(t.first for t in sends)
    achieved = count / span if span > 0 else float(count)
    if achieved >= settings.total_rate * (1 - SHORTFALL_TOLERANCE) or count < 2:
        return None
    lags = [t for name, t in book.tallies.items() if split_event_name(name)[0] == SCHEDULE_LAG]
    lag = max((t.latency_ms().get("p99", 0.0) for t in lags), default=0.0)
    short = 100.0 * (1 - achieved / settings.total_rate)
    return (
        f"target rate not reached: --mq-total-rate {settings.total_rate:g} msg/s asked, {achieved:,.1f} msg/s "
        f"sent ({short:.0f} % short); schedule lag p99 {lag:,.1f} ms"
    )


def notes(
    rows: list[Row], book: Book, facts: RunFacts, settings: Settings, blocked: Mapping[str, Mapping[str, float]]
) -> list[str]:
    """The plain sentences under the tables: how the run ended and what limits its figures
    (``blocked``: :func:`~mqusers.run.verdicts.blocked_by_destination` of the run's processes)."""
    lines = [
        f"{_ENDINGS.get(facts.ended_by, facts.ended_by)}; drain: {facts.drain.reason} ({facts.drain.seconds:.1f} s)"
    ]
    if facts.out_of_files:
        lines.append(
            f"the generator ran out of file descriptors: {facts.out_of_files:,} operations failed (EMFILE); the "
            "figures are those of the Users that had a connection: raise ulimit -n or use fewer users per process"
        )
    for destination, episodes in sorted(blocked.items()):
        lines.append(
            f"producers to {destination} were blocked by the broker {episodes['episodes']:g} time(s), the longest "
            f"{episodes['longest_s']:.1f} s: producer flow control, a full store or a stalled broker"
        )
    for destination, episodes in sorted(blocked_by_destination(facts.generator["processes"], "stalled").items()):
        lines.append(
            f"producers to {destination} had nothing acknowledged by the broker's host {episodes['episodes']:g} "
            f"time(s), the longest {episodes['longest_s']:.1f} s: a network partition or a dead host, not the broker"
        )
    if (line := shortfall(book, settings)) is not None:
        lines.append(line)
    lines += [
        f"{f['users']:,} {f['user']} user(s) never ran: on_start raised {f['error']}; fewer Users ran than asked"
        for f in facts.start_failures
    ]
    lines += [lost_worker_line(worker) for worker in facts.lost_workers]
    lines += failover_notes(facts.failover, facts.faults)
    documents = [row.document() for row in rows]
    lines += broker_notes(facts.broker, documents, bool(facts.lost_workers))
    lines += network_notes(facts.broker, documents)
    lines += aborted_delivered({row.destination: row.audit for row in rows})
    for row in rows:
        audit = row.audit
        if audit["unreceived"] or audit["unconfirmed"]:
            lines.append(
                f"{row.destination}: {audit['unreceived']:,} unreceived (still queued at the broker or lost: the "
                f"client cannot tell), {audit['unconfirmed']:,} unconfirmed (sent, outcome unknown): neither fails "
                "the run, only lost does (--mq-max-lost)"
            )
        if audit["worker_lost"]:
            lines.append(
                f"{row.destination}: {audit['worker_lost']} worker-lost (sent or possibly received by a lost worker "
                "after its last report: the client cannot tell): not counted as lost; the lost worker fails the run"
            )
        if audit["expired"] or audit["delivered_expired"]:
            lines.append(expiry_line(row.destination, audit["expired"], audit["delivered_expired"]))
        if audit["groups"]:
            lines.append(
                f"{row.destination}: {audit['groups']:,} message groups delivered, {audit['group_violations']:,} of "
                "them to two consumers at once"
            )
        if audit["foreign"] or audit["other_run"]:
            lines.append(
                f"{row.destination}: {audit['foreign']:,} foreign and {audit['other_run']:,} other runs' messages, "
                "counted apart from this run's figures"
            )
    return lines


def expiry_line(destination: str, expired: int, late: int) -> str:
    """What expiry did to a destination's messages (``--mq-ttl``)."""
    line = f"{destination}: {expired:,} expired (not delivered and past their time-to-live: not lost)"
    if late:
        line += f"; {late:,} delivered after their expiry (a violation: the broker handed out expired messages)"
    return line


def lost_worker_line(worker: dict[str, Any]) -> str:
    """Who was lost, when (s since the start) and what its last report had."""
    beat, last, reported = worker["last_heartbeat_s"], worker["last_report_s"], worker["reported"]
    heard = f"last heartbeat at {beat:.1f} s, " if beat is not None else ""
    said = (f"last report at {last:.1f} s, with {reported['sent']:,} sent and {reported['received']:,} received until "
            "then" if last is not None else "it never reported")  # fmt: skip
    return (f"worker {worker['worker']} (host {worker['host']}) was lost: {heard}{said}; what it sent or received "
            "after is worker-lost, not lost")  # fmt: skip


@dataclass(frozen=True)
class RunReport:
    """One run's report, computed once: what the summary, the JSON, the CSV and the gates read."""

    facts: RunFacts
    settings: Settings
    rows: list[Row]
    operations: list[dict[str, Any]]
    notes: list[str]
    #: Failed operations of every kind, broker ERROR frames and connects included.
    errors: int
    #: :meth:`Series.document`: per-second rates, latency and generator health.
    series: dict[str, Any] = field(default_factory=dict)
    #: Every operation's merged µs HdrHistogram, encoded (``HdrHistogram.decode`` reads it back).
    histograms: dict[str, str] = field(default_factory=dict)
    #: :func:`~mqusers.report.manydest.pattern_section` of each destination pattern among the rows.
    patterns: list[dict[str, Any]] = field(default_factory=list)
    #: Each pattern's :func:`~mqusers.report.manydest.destination_table` (a line per destination: the CSV's).
    pattern_destinations: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: Opened per second, refused, closed; open files and the broker's connections back to their start.
    connections: Connections | None = None
    #: Committed, aborted, transactions/s (:func:`~mqusers.measure.transactionfigures.transaction_figures`); None: none.
    transactions: Transactions | None = None
    #: :meth:`~mqusers.measure.hdrintervals.Intervals.document`: per-interval histograms per event name.
    intervals: dict[str, Any] = field(default_factory=dict)


def build_report(
    book: Book,
    verdict: dict[str, dict[str, Any]] | None,
    facts: RunFacts,
    settings: Settings,
    series: Series | None = None,
    spread: Mapping[str, DestinationFigures] | None = None,
    intervals: Intervals | None = None,
) -> RunReport:
    """``spread``: each destination of a pattern's own receive figures
    (:class:`~mqusers.measure.perdestination.Spread`)."""
    blocked = blocked_by_destination(facts.generator["processes"])
    rows = rows_of(book, verdict, {destination: b["until_s"] for destination, b in blocked.items()})
    errors = sum(t.failures for t in book.tallies.values())
    histograms = {name: t.histogram.encode().decode("ascii") for name, t in sorted(book.tallies.items())}
    tables = pattern_tables({row.destination: row.latency_ms.get("max") for row in rows}, verdict or {}, spread or {})
    files = [(p.get("open_files_start"), p.get("open_files_end")) for p in facts.generator["processes"].values()]
    connections = connection_figures(book.tallies, files, facts.broker.get("broker") or {})
    lines = notes(rows, book, facts, settings, blocked)
    if (leak := leak_line(connections)) is not None:
        lines.append(leak)
    return RunReport(
        facts, settings, rows, operation_rows(book), lines, errors, (series or Series()).document(fan_out(rows)),
        histograms, pattern_sections(tables), tables, connections,
        transaction_figures(book.tallies, (row.audit for row in rows)),
        (intervals or Intervals()).document(facts.measured_from or facts.started),
    )  # fmt: skip


def leak_line(connections: Connections) -> str | None:
    """One line when the generator ended the run holding more open files than it started with."""
    start, end = connections["open_files_start"], connections["open_files_end"]
    if start is None or end is None or end <= start:
        return None
    return (f"the generator holds {end - start:,} more open files than at the start ({start:,} then, {end:,} after "
            "the Users were gone): connections or files left open")  # fmt: skip


def fan_out(rows: list[Row]) -> dict[str, int]:
    """Copies of each message a destination delivers: one per topic subscription, one for a queue."""
    return {row.destination: row.copies or max(1, sum(s["kind"] == "topic" for s in row.by_subscription))
            for row in rows}  # fmt: skip
