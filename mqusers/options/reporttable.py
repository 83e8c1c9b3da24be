"""The ``--mq-*`` options of a run's reports and gates: where the JSON, CSV and HTML reports go, and the
figures that end a run with exit 3 (a regression against a baseline too). Declared once here;
:data:`mqusers.options.table.OPTIONS` includes them.
"""

from __future__ import annotations

from mqusers.options.gatespec import parse_baseline, parse_regressions
from mqusers.options.optionspec import Option
from mqusers.options.parsing import MAX_COUNT, MAX_RATE, MAX_SECONDS, decimal, parse_bool, whole
from mqusers.options.paths import writable_file, writable_folder

REPORT_OPTIONS: tuple[Option, ...] = (
    Option(
        "mq-report-json",
        "report_json",
        writable_file,
        "write the end-of-run summary to this JSON file (its folder must exist)",
        ui=False,
        master_writes=True,
    ),
    Option(
        "mq-report-csv",
        "report_csv",
        writable_file,
        "write the per-destination summary to this CSV file (its folder must exist)",
        ui=False,
        master_writes=True,
    ),
    Option(
        "mq-report-html",
        "report_html",
        writable_file,
        "write the run's report with charts to this self-contained HTML file (its folder must exist)",
        ui=False,
        master_writes=True,
    ),
    Option(
        "mq-results",
        "results",
        writable_folder,
        "also write the run's JSON report into this folder (made if missing) as <UTC start>-<run id>.json, so the"
        " runs sort in time order; mqusers report FOLDER draws their trend",
        ui=False,
        master_writes=True,
    ),
    Option(
        "mq-hdr-log",
        "hdr_log",
        writable_file,
        "write the run's per-interval latency histograms per operation to this HdrHistogram interval log "
        "(values in µs; its folder must exist)",
        ui=False,
        master_writes=True,
    ),
    Option(
        "mq-max-p99-ms",
        "max_p99_ms",
        decimal(MAX_SECONDS * 1000, unit="ms"),
        "gate: exit 3 when any destination's send-to-receive p99 exceeds this (ms)",
    ),
    Option(
        "mq-max-errors",
        "max_errors",
        whole(MAX_COUNT),
        "gate: exit 3 when the run has more failed operations than this",
    ),
    Option(
        "mq-max-lost",
        "max_lost",
        whole(MAX_COUNT),
        "gate: exit 3 when any destination lost more messages than this (the audit); 0 by default: a lost "
        "message fails the run",
        default="0",
    ),
    Option(
        "mq-min-rate",
        "min_rate",
        decimal(MAX_RATE, unit="msg/s"),
        "gate: exit 3 when any destination receives fewer messages/s than this",
    ),
    Option(
        "mq-fail-on-saturation",
        "fail_on_saturation",
        parse_bool,
        "gate: exit 3 when the generator's verdict is saturated or contended (true/false)",
        default="false",
    ),
    Option(
        "mq-baseline",
        "baseline",
        parse_baseline,
        "the regression gate's baseline: a run JSON (--mq-report-json) or a folder of them (docs/compare.md)",
        ui=False,
        master_writes=True,
    ),
    Option(
        "mq-baseline-unfit",
        "baseline_unfit",
        parse_bool,
        "hold the run to a --mq-baseline that lost messages, had a contended or saturated generator or ended "
        "early (true/false; refused by default)",
        default="false",
        ui=False,
    ),
    Option(
        "mq-gate-regression",
        "gate_regression",
        parse_regressions,
        "gate: exit 3 when a figure is worse than --mq-baseline's by more than its percent at the gate's "
        "confidence (the whole interval beyond it): FIGURE:PERCENT items, e.g. p50:20,p99:20,throughput:10 "
        "(throughput, p50, p90, p99, p99.9)",
        ui=False,
    ),
    Option(
        "mq-gate-confidence",
        "gate_confidence",
        decimal(99.9, minimum=50, unit="%"),
        "the regression gate's confidence in percent (default 95)",
        ui=False,
    ),
)
