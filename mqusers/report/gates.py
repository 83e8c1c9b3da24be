"""The run's gates: one line per gate it failed (``--mq-max-*``, ``--mq-min-rate``, ``--mq-gate-regression``, the
violations that always fail).

Read from the report :func:`mqusers.report.build.build_report` computed once; an exit code 3 follows.
"""

from __future__ import annotations

from typing import Any

from mqusers.measure.names import destination_kind
from mqusers.options.settings import Settings
from mqusers.report.build import RunReport
from mqusers.report.transactionsreport import aborted_delivered


def pattern_gate_failures(section: dict[str, Any], settings: Settings) -> list[str]:
    """The per-destination gates on a pattern's destinations: its worst loss, highest p99, lowest rate."""
    failures, where = [], f"{section['pattern']}: a destination's"
    worst = section["worst"][0] if section["worst"] else None
    if settings.max_lost is not None and worst is not None and worst["lost"] > settings.max_lost:
        failures.append(f"{worst['destination']}: {worst['lost']:,} lost > --mq-max-lost {settings.max_lost}")
    p99 = section["p99_ms"]["max"]
    if settings.max_p99_ms is not None and p99 is not None and p99 > settings.max_p99_ms:
        failures.append(f"{where} p99 {p99:.3f} ms > --mq-max-p99-ms {settings.max_p99_ms:g}")
    rate = section["receive_rate_msgs"]["min"] or 0.0
    if settings.min_rate is not None and rate < settings.min_rate:
        failures.append(f"{where} {rate:.1f} msg/s received < --mq-min-rate {settings.min_rate:g}")
    return failures


def gate_failures(report: RunReport) -> list[str]:
    """One line per gate failed: per destination (p99, lost, rate), and run-wide (nothing sent by a run
    with producers, errors, generator)."""
    return judge(report)[0]


def judge(report: RunReport) -> tuple[list[str], list[str]]:
    """:func:`gate_failures`' lines, and a note per figure ``--mq-gate-regression`` could not judge (too few
    samples): such a figure neither fails the run nor passes it, and the report says which."""
    settings, failures = report.settings, []
    sections = {section["pattern"]: section for section in report.patterns}
    for row in report.rows:
        where, rate = row.destination, row.totals.receive_rate_msgs
        p99 = row.latency_ms.get("p99")
        if (section := sections.get(row.destination)) is not None:
            # Each of a pattern's destinations is held to the gate on its own: the worst of them.
            failures += pattern_gate_failures(section, settings)
            continue
        if settings.max_p99_ms is not None and p99 is not None and p99 > settings.max_p99_ms:
            failures.append(f"{where}: p99 {p99:.3f} ms > --mq-max-p99-ms {settings.max_p99_ms:g}")
        if settings.max_lost is not None and row.audit["lost"] > settings.max_lost:
            failures.append(f"{where}: {row.audit['lost']:,} lost > --mq-max-lost {settings.max_lost}")
        if settings.min_rate is not None and rate < settings.min_rate:
            failures.append(f"{where}: {rate:.1f} msg/s received < --mq-min-rate {settings.min_rate:g}")
        if row.audit["selector_violations"]:
            failures.append(f"{where}: {row.audit['selector_violations']:,} deliveries a selector does not take")
        if late := row.audit["delivered_expired"]:
            failures.append(f"{where}: {late:,} delivered after their expiry (--mq-ttl)")
        if row.audit["group_violations"]:
            failures.append(f"{where}: {row.audit['group_violations']:,} message groups two consumers had at once")
    # Always a gate: a broker that delivers what was aborted is wrong, whatever the run asked.
    failures += aborted_delivered({row.destination: row.audit for row in report.rows})
    for worker in report.facts.lost_workers:
        failures.append(f"worker {worker['worker']} was lost mid-test: its last figures are unknown")
    if report.facts.produces and not any(row.totals.sent for row in report.rows):
        after = f" after the {settings.warmup:g} s warm-up" if settings.warmup else ""
        failures.append(f"nothing was sent{after}: the run has producers and not one message of theirs went out")
    # A drain of queues that got nothing measured nothing. Subscribers only on topics get nothing by design when
    # they register durable subscriptions for a later run: not a failure.
    drained = [row for row in report.rows if destination_kind(row.destination) == "queue"]
    if report.facts.consumes and not report.facts.produces and drained and not any(r.totals.received for r in drained):
        failures.append(
            "nothing was received: the run has consumers only and not one message reached them (a "
            "get-only run drains what an earlier run left: fill the queue first, docs/scenarios.md)"
        )
    # Every failed operation counts, broker ERROR frames and connects included, not only a destination's.
    errors = report.errors
    if settings.max_errors is not None and errors > settings.max_errors:
        failures.append(f"{errors:,} errors in all operations > --mq-max-errors {settings.max_errors}")
    generator = report.facts.generator["verdict"]
    if settings.fail_on_saturation and generator in ("saturated", "contended"):
        failures.append(f"the load generator's verdict is {generator} and --mq-fail-on-saturation is set")
    regressions, unjudged = regression_gate(report)
    return failures + regressions, unjudged


def regression_gate(report: RunReport) -> tuple[list[str], list[str]]:
    """``--mq-gate-regression`` against ``--mq-baseline``: a figure fails when the whole interval of its difference
    (this run against the baseline's, at ``--mq-gate-confidence``) lies beyond its threshold, the worse way. Also
    a note per figure with too few samples to judge."""
    settings = report.settings
    if not settings.baseline or not settings.gate_regression:
        return [], []
    # Here, not at the top: the statistics import numpy, which every locust process would pay for at start.
    from mqusers.report.runfiles import load_runs
    from mqusers.stats.bootstrap import REGRESSIONS, differences, family_wise, verdict
    from mqusers.stats.evidence import TOO_FEW, rule
    from mqusers.stats.samples import RunFileError, common_operations, run_from_document

    confidence = settings.gate_confidence / 100.0
    try:
        baseline = load_runs([settings.baseline])
        document = {"intervals": report.intervals, "scenario": report.facts.scenario}
        run = [run_from_document(document, "this run")]
        operations = common_operations(baseline, run)
    except RunFileError as error:
        return [f"--mq-gate-regression: cannot compare this run with --mq-baseline: {error}"], []
    # One baseline run shows its own within-run noise only: said with each failure (docs/compare.md).
    alone = "; one baseline run: the run-to-run noise is not in the interval" if len(baseline) == 1 else ""
    # The gate makes one test per operation and figure; each at the confidence divided among them
    # (Bonferroni), so the stated confidence is the whole gate's, not each figure's.
    tests = len(operations) * len(settings.gate_regression)
    each = family_wise(confidence, tests)
    stated = f"{each * 100:.4g} %, {confidence * 100:g} % over the gate's {tests} figures"
    failures, unjudged = [], []
    for operation in operations:
        found = differences(baseline, run, operation, each)
        for figure, threshold in settings.gate_regression:
            difference = found[figure]
            if difference.verdict == TOO_FEW:
                unjudged.append(f"{operation} {figure}")  # neither fails the run nor passes it: the note says so
                continue
            words = verdict(figure, difference.low, difference.high, threshold)
            if words in REGRESSIONS:
                percent, low, high = difference.percent
                failures.append(f"{operation}: {figure} {words} than --mq-baseline by {percent:+,.1f} % ("
                                f"{low:+,.1f} to {high:+,.1f} at {stated}), beyond "
                                f"--mq-gate-regression {figure}:{threshold * 100:g}%{alone}")  # fmt: skip
    if not unjudged:
        return failures, []
    note = (f"--mq-gate-regression did not judge {', '.join(unjudged)}: too few samples for a verdict ({rule()}); "
            "those figures neither fail the run nor pass it")  # fmt: skip
    return failures, [note]
