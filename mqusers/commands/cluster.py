"""``mqusers cluster-compare``: the JMS test report's cluster comparison, and what a failover costs.

For each broker configuration (a single broker, a master/slave or primary/backup pair behind a
failover URL...) it runs the report's three schemes with 1 producer, 1 subscriber and 1 topic
(646-byte messages by default), sent as fast as the connection takes them:

- non-persistent messages, a non-durable subscriber;
- persistent messages, a non-durable subscriber;
- persistent messages, a durable subscriber;

each first in a warm-up run, then ``--repeats`` steady runs, interleaved (:mod:`mqusers.commands.grids`);
then, when the configuration has a ``--failover`` command (e.g. stop the master), a paced run of the
third scheme with receipts (so a loss is a confirmed message lost) during which that command runs
(``--mq-fault``). A network of brokers is a configuration too: ``--consumers-at NAME=URL [URL...]`` puts its
subscribers on other brokers than the producers' (``--mq-consumer-host``), and paced runs at ``--latency-rate``
give each row its p50 and p99, and against the first row (the single broker) what the hop adds
(:mod:`mqusers.commands.hops`). Every run is a ``locust`` child process with its own JSON report; the table:
msg/s per configuration and scheme (median and interval), the pairs not told apart from noise, the latency,
the failover window, reconnect and loss.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mqusers.commands import grids, hops
from mqusers.commands.locustchild import Stop, interruptible
from mqusers.commands.matrix import shipped_locustfiles
from mqusers.options.faultspec import parse_fault
from mqusers.options.parsing import OptionError, parse_broker_url, parse_broker_urls, parse_size
from mqusers.report.figures import figure
from mqusers.report.htmlgrids import INTERRUPTED, NOISE
from mqusers.stats.samples import Run

#: scheme: (title, locustfile, persistent, durable)
SCHEMES = {
    "nonpersistent": ("non-persistent, non-durable", "pubsub.py", False, False),
    "persistent": ("persistent, non-durable", "pubsub.py", True, False),
    "durable": ("persistent, durable", "durable_topic.py", True, True),
}
TITLES = {scheme: title for scheme, (title, *_) in SCHEMES.items()}


@dataclass(frozen=True)
class Config:
    name: str
    url: str
    #: The command that makes the configuration fail over (``--mq-fault`` form, without the time).
    failover: str = ""
    #: Where its subscribers connect when not to ``url`` (a network: ``--mq-consumer-host``), space-separated.
    consumers: str = ""


@dataclass(frozen=True)
class Plan:
    locustfiles: Path
    size: str
    steady: grids.Steady
    failover_rate: float
    failover_seconds: float
    fault_at: float
    out: Path
    extra: tuple[str, ...] = ()
    #: The latency runs' pace, msg/s; 0: none.
    latency_rate: float = 0.0

    def base(self, scheme: str, config: Config, report: Path) -> list[str]:
        _, locustfile, persistent, durable = SCHEMES[scheme]
        destination = f"/topic/mqusers.cluster.{config.name}.{scheme}.{uuid.uuid4().hex[:6]}"
        return [sys.executable, "-m", "locust", "-f", str(self.locustfiles / locustfile), "--headless",
                "--only-summary", "--host", config.url, "-u", "2", "-r", "2", "--mq-consumers", "1",
                "--mq-destination", destination, "--mq-size", self.size, "--mq-persistent", str(persistent).lower(),
                "--mq-durable", str(durable).lower(), "--mq-report-json", str(report),
                *(["--mq-consumer-host", config.consumers] if config.consumers else [])]  # fmt: skip

    def latency(self, config: Config, report: Path) -> list[str]:
        """A paced run of the non-persistent scheme: what a message that finds no queue waits."""
        paced = hops.run_args(self.latency_rate, self.steady.steady_after, self.steady.seconds)
        return [*self.base("nonpersistent", config, report), *paced, *self.extra]

    def warmup(self, scheme: str, config: Config, report: Path) -> list[str]:
        """The scheme's warm-up run on this configuration: unpaced, ``--warmup-seconds`` long."""
        return [*self.base(scheme, config, report), *self.steady.warmup_args(), "--mq-rate", "0", *self.extra]

    def throughput(self, scheme: str, config: Config, report: Path, warmup_rate: float | None) -> list[str]:
        """A measured run: unpaced, its start left out, as long as :meth:`grids.Steady.run_seconds` says."""
        return [*self.base(scheme, config, report), *self.steady.run_args(warmup_rate), "--mq-rate", "0",
                *self.extra]  # fmt: skip

    def failover_run(self, config: Config, report: Path) -> list[str]:
        return [*self.base("durable", config, report), "-t", f"{self.failover_seconds:g}s", "--mq-receipts", "true",
                "--mq-total-rate", f"{self.failover_rate:g}", "--mq-fault", f"{self.fault_at:g}s:{config.failover}",
                *self.extra]  # fmt: skip


def scheme_figures(report: dict[str, Any]) -> dict[str, Any]:
    """One run's figures from its report (``msgs``: the report's own, over the run after its --mq-warmup)."""
    [row] = report["destinations"] or [{}]
    return {"destination": row.get("destination"), "msgs": row.get("receive_rate_msgs"),
            "mbit": row.get("receive_rate_mbit"), "sent": row.get("sent", 0), "received": row.get("received", 0),
            "lost": row.get("lost", 0), "p99_ms": row.get("latency_ms", {}).get("p99")}  # fmt: skip


def failover_figures(report: dict[str, Any]) -> dict[str, Any]:
    [row] = report["destinations"] or [{}]
    failover = report.get("failover") or {}
    rows = failover.get("destinations") or [{}]
    fault = (report.get("faults") or [{}])[0]
    return {
        "window_ms": failover.get("worst_window_ms"),
        # None when no client lost its broker (a network's subscriber whose broker lived): no reconnect to time.
        "reconnect_ms": _worst(rows, "reconnect_max_ms"),
        "after_ready_ms": _worst(rows, "after_ready_max_ms"),
        "unrecovered": sum(r.get("unrecovered", 0) for r in rows),
        "lost": row.get("lost", 0),
        "unconfirmed": row.get("unconfirmed", 0),
        "dup_after_reconnect": row.get("after_reconnect", 0),
        "fault_exit": fault.get("exit_code"),
    }


def _worst(rows: list[dict[str, Any]], key: str) -> float | None:
    return max((row[key] for row in rows if row.get(key) is not None), default=None)


def markdown(rows: list[dict[str, Any]], latency_rate: float = 0.0) -> str:
    """The table; with ``latency_rate`` (msg/s), each row's paced p50 and p99 and what the hop adds."""
    at = f" at {latency_rate:,.0f} msg/s" if latency_rate else ""
    latency = f"p50 ms{at} | p99 ms{at} | " if latency_rate else ""
    lines = [
        "| configuration | " + " | ".join(f"{t} msg/s" for t in TITLES.values()) + f" | {NOISE} noise | "
        f"{latency}failover window ms | reconnect ms | lost | unconfirmed | dup after reconnect |",
        "|---|" + "---:|" * len(TITLES) + "---|" + "---:|" * (7 if latency_rate else 5),
    ]
    for row in rows:
        schemes = " | ".join(grids.cell_text(row["schemes"].get(s) or {}) for s in SCHEMES)
        noise = grids.noise_text(row.get("noise", []), TITLES)
        f = row.get("failover") or {}
        losses = " | ".join(str(f.get(key, "-")) for key in ("lost", "unconfirmed", "dup_after_reconnect"))
        paced = " | ".join(hops.cell_text(row.get("latency"))) + " | " if latency_rate else ""
        lines.append(f"| {row['config']} | {schemes} | {noise} | {paced}{figure(f.get('window_ms'))} | "
                     f"{figure(f.get('reconnect_ms'))} | {losses} |")  # fmt: skip
    return "\n".join(lines)


def _config(text: str, failovers: dict[str, str], consumers: dict[str, str]) -> Config:
    name, sep, url = text.partition("=")
    if not sep or not name.strip() or not name.replace("-", "").replace("_", "").isalnum():
        raise OptionError(f"--config {text!r}: use NAME=URL, NAME of letters, digits, - and _")
    parse_broker_url(url, f"--config {name}")
    return Config(name, url, failovers.pop(name, ""), consumers.pop(name, ""))


def _named(texts: Sequence[str], option: str, form: str) -> dict[str, str]:
    """``NAME=VALUE`` options by name; one line naming the option and its ``form`` when one has no value."""
    found = {}
    for text in texts:
        name, sep, value = text.partition("=")
        if not sep or not value.strip():
            raise OptionError(f"{option} {text!r}: use {form}")
        found[name] = value
    return found


def _consumers(texts: Sequence[str]) -> dict[str, str]:
    return {name: " ".join(str(address) for address in parse_broker_urls(urls, f"--consumers-at {name}"))
            for name, urls in _named(texts, "--consumers-at", "NAME=URL, several space-separated").items()}  # fmt: skip


def _failovers(texts: Sequence[str]) -> dict[str, str]:
    found = _named(texts, "--failover", "NAME=COMMAND")
    for name, command in found.items():
        parse_fault(f"0:{command}", f"--failover {name}")  # the same checks as --mq-fault: it must exist here
    return found


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="mqusers cluster-compare", description=__doc__.splitlines()[0])
    parser.add_argument("--config", action="append", default=[], help="NAME=URL, repeatable (a failover list: a,b)")
    parser.add_argument("--failover", action="append", default=[],
                        help="NAME=COMMAND that makes configuration NAME fail over (no shell), repeatable")  # fmt: skip
    parser.add_argument("--consumers-at", action="append", default=[],
                        help="NAME=URL [URL...]: configuration NAME's subscribers connect there (a network), "
                             "repeatable")  # fmt: skip
    parser.add_argument(
        "--latency-rate",
        type=float,
        default=0.0,
        help="msg/s of each configuration's paced latency runs, e.g. 1000 (default 0: none)",
    )
    grids.add_options(parser, 20_000)
    parser.add_argument("--size", default="646", help="message body size (default 646 bytes, as the report)")
    parser.add_argument("--failover-rate", type=float, default=500.0, help="msg/s during the failover run")
    parser.add_argument("--failover-seconds", type=float, default=30.0, help="length of the failover run")
    parser.add_argument("--fault-at", type=float, default=10.0, help="seconds into the failover run")
    parser.add_argument("--schemes", default=",".join(SCHEMES), help="comma-separated: " + ", ".join(SCHEMES))
    parser.add_argument("--out", default="reports/cluster", help="folder for each run's JSON report and log")
    parser.add_argument("--json", default="", help="write the table's figures here")
    parser.add_argument("--locustfiles", type=Path, default=shipped_locustfiles(), help="folder of the scenarios")
    args, extra = parser.parse_known_args(argv)
    try:
        failovers, consumers = _failovers(args.failover), _consumers(args.consumers_at)
        configs = [_config(text, failovers, consumers) for text in args.config]
        schemes = list(dict.fromkeys(s.strip() for s in args.schemes.split(",") if s.strip()))
        if not configs:
            raise OptionError("--config NAME=URL: at least one configuration")
        if failovers:
            raise OptionError(f"--failover {', '.join(failovers)}: no --config of that name")
        if consumers:
            raise OptionError(f"--consumers-at {', '.join(consumers)}: no --config of that name")
        if args.latency_rate < 0:
            raise OptionError("--latency-rate: 0 (none) or more")
        if unknown := [s for s in schemes if s not in SCHEMES]:
            raise OptionError(f"--schemes: {', '.join(unknown)} unknown (known: {', '.join(SCHEMES)})")
        parse_size(args.size, "--size")
        steady = grids.steady(args)
        if args.failover_rate <= 0 or not 0 < args.fault_at < args.failover_seconds:
            raise OptionError("--failover-rate positive; --fault-at within --failover-seconds")
    except OptionError as error:
        sys.stderr.write(f"mqusers cluster-compare: {error}\n")
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plan = Plan(args.locustfiles, args.size, steady, args.failover_rate, args.failover_seconds, args.fault_at, out,
                tuple(extra), args.latency_rate)  # fmt: skip
    rows, failed = [], 0
    with interruptible() as stop:
        for config in configs:
            if stop.requested:
                break
            row, missing = _measure(plan, config, schemes, stop)
            failed += missing
            if plan.latency_rate and not stop.requested:
                row["latency"], missing = _latency(plan, config, stop)
                failed += missing
            if config.failover and not stop.requested:
                report = out / f"{config.name}-failover.json"
                document = grids.attempt(f"{config.name} failover", plan.failover_run(config, report), report,
                                         plan.failover_seconds, stop)  # fmt: skip
                row["failover"] = {**failover_figures(document), "report": str(report)} if document is not None \
                    else None  # fmt: skip
                failed += document is None and not stop.requested
            rows.append(row)
    hops.with_hops(rows)
    table = markdown(rows, plan.latency_rate)
    print("\n" + table + "\n\n" + steady.legend() + (f"\n{INTERRUPTED}" if stop.requested else ""))
    if args.json:
        document = {"kind": "cluster-compare", "size": args.size, **steady.document(), "titles": TITLES, "rows": rows,
                    "table": table, "interrupted": stop.requested, "latency_rate": plan.latency_rate}  # fmt: skip
        Path(args.json).write_text(json.dumps(document, indent=2) + "\n")
    return 1 if failed or stop.requested else 0


def _measure(plan: Plan, config: Config, schemes: list[str], stop: Stop) -> tuple[dict[str, Any], int]:
    """One configuration's row: each scheme's warm-up, then its repeats interleaved; and how many runs failed.

    After a Ctrl-C or SIGTERM (``stop``), the row of the runs that ended before it."""
    row: dict[str, Any] = {"config": config.name, "url": config.url, "consumers": config.consumers, "warmup": {},
                           "schemes": {}, "failover": None}  # fmt: skip
    failed, rates = 0, {}
    for scheme in schemes:
        if stop.requested:
            break
        report = plan.out / f"{config.name}-{scheme}-warmup.json"
        document = grids.attempt(f"{config.name} {scheme} warm-up (left out)", plan.warmup(scheme, config, report),
                                 report, plan.steady.warmup_seconds, stop)  # fmt: skip
        if document is not None:
            row["warmup"][scheme] = {**scheme_figures(document), "report": str(report)}
            rates[scheme] = row["warmup"][scheme]["msgs"]
        failed += document is None and not stop.requested
    runs: dict[str, list[Run]] = {scheme: [] for scheme in schemes}
    figures: dict[str, list[dict[str, Any]]] = {scheme: [] for scheme in schemes}
    repeats = plan.steady.repeats
    for repeat, scheme in grids.interleaved(schemes, repeats):
        if stop.requested:
            break
        report = plan.out / f"{config.name}-{scheme}-{repeat}.json"
        command = plan.throughput(scheme, config, report, rates.get(scheme))
        document = grids.attempt(f"{config.name} {scheme} run {repeat}/{repeats}", command, report,
                                 plan.steady.run_seconds(rates.get(scheme)), stop)  # fmt: skip
        if document is None:
            failed += not stop.requested
            continue
        found = scheme_figures(document)
        run = grids.counted_run(document, found["destination"], str(report))
        if run is None:
            failed += 1
            continue
        runs[scheme].append(run)
        figures[scheme].append({"repeat": repeat, "report": str(report), **found, "msgs": grids.throughput(run)})
    for scheme in schemes:
        row["schemes"][scheme] = {**grids.summary(runs[scheme]), "runs": figures[scheme]}
    row["noise"] = [list(pair) for pair in grids.indistinct(runs)]
    return row, failed


def _latency(plan: Plan, config: Config, stop: Stop) -> tuple[dict[str, Any], int]:
    """The row's latency cell from ``--repeats`` paced runs, and how many of them failed."""
    runs, failed = [], 0
    for repeat in range(1, plan.steady.repeats + 1):
        if stop.requested:
            break
        report = plan.out / f"{config.name}-latency-{repeat}.json"
        document = grids.attempt(f"{config.name} latency run {repeat}/{plan.steady.repeats}",
                                 plan.latency(config, report), report, plan.steady.steady_after + plan.steady.seconds,
                                 stop)  # fmt: skip
        found = hops.run_figures(document) if document is not None else None
        if found is None:
            failed += not stop.requested
            continue
        runs.append({"repeat": repeat, "report": str(report), **found})
    return hops.measured(runs, plan.latency_rate), failed
