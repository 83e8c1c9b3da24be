"""The report's ``broker`` section: the broker's own figures beside mqusers', and where they disagree.

Computed once per run from the :class:`~mqusers.brokers.sampler.BrokerSampler`: counters as the
difference between the first reading (before any message) and the last (after the drain), gauges
as last read. The summary prints them next to mqusers' sent and received and a cross-check line
per disagreement the in-flight messages do not explain; the JSON and the HTML report carry them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mqusers.brokers.model import COUNTERS
from mqusers.brokers.sampler import BrokerSampler

#: Figures of the moment: reported as last read.
GAUGES = ("depth", "unacked", "consumers", "producers", "memory_percent", "memory_bytes", "store_bytes", "paging",
          "pages", "publish_rate", "deliver_rate", "ack_rate")  # fmt: skip
#: Shown in the summary's table only when a destination has some: trouble, not the usual case.
TROUBLE = ("expired", "killed", "pages")


def broker_document(
    sampler: BrokerSampler | None, note: str = "", warmup: bool = False, consumers_at: str = ""
) -> dict[str, Any]:
    """The JSON report's ``broker`` (``source`` None and a ``note`` when there were no broker figures).

    ``consumers_at``: the consumers' broker when it is another (``--mq-consumer-host``): these figures are
    the producers' broker's, and what it dequeued it passed on (over the network, to that broker).

    A destination without a baseline reading (``baseline`` false) has its counters as the broker
    has them, since it started; with a warm-up the counters include the warm-up's messages, which
    the summary leaves out (``comparable`` false: no cross-check).
    """
    if sampler is None or sampler.samples == 0:
        errors = sampler.errors if sampler is not None else {}
        return {"source": None, "note": note or "; ".join(dict.fromkeys(errors.values())), "destinations": {},
                "consumers_at": consumers_at or None}  # fmt: skip
    destinations: dict[str, dict[str, Any]] = {}
    restarted = len(sampler.instances) > 1  # every counter started again: no difference is this test's
    for name, last in sorted(sampler.last.items()):
        first = sampler.first.get(name, {})
        based = name in sampler.baseline
        base = first if based else {}
        reset = restarted or name in sampler.counters_reset
        read: Mapping[str, Any] = last  # by name: the tables below are the model's field names
        figures: dict[str, Any] = {k: None if reset else read[k] - base.get(k, 0) for k in COUNTERS if k in read}
        figures.update({k: read[k] for k in GAUGES if k in read})
        # A source that did not answer its last reading left figures older than the run's end: shown, not compared.
        comparable = based and not warmup and not reset and not sampler.failing
        destinations[name] = {**figures, "baseline": based, "comparable": comparable}
    jvm: dict[str, Any] | None = None
    if sampler.jvm_last is not None:
        first_jvm, last_jvm = sampler.jvm_first or {}, sampler.jvm_last
        jvm = {**last_jvm, "gc_count_run": last_jvm.get("gc_count", 0) - first_jvm.get("gc_count", 0),
               "gc_seconds_run": last_jvm.get("gc_seconds", 0.0) - first_jvm.get("gc_seconds", 0.0),
               "heap_used_mb_max": max((p["heap_used_mb"] or 0.0 for p in sampler.kept), default=0.0)}  # fmt: skip
    return {
        "source": sampler.source.name if sampler.source is not None else None,
        "samples": sampler.samples,
        "failures": sampler.failures,
        "errors": sampler.errors,
        "broker": sampler.broker,
        "destinations": destinations,
        "jvm": jvm,
        "series": sampler.kept,
        "alarms_seen": sorted(sampler.alarms),
        "restarted": restarted,
        "warmup": warmup,
        "stale_s": None if (stale := sampler.stale_s) is None else round(stale, 1),
        "note": note,
        "consumers_at": consumers_at or None,
    }


def broker_table(broker: dict[str, Any], rows: list[dict[str, Any]]) -> list[list[str]]:
    """Per destination: the broker's enqueued / dequeued beside mqusers' sent / received; depth, unacked,
    consumers; expired, killed and pages (paged to disk) when a destination has some."""
    if not broker.get("destinations"):
        return []
    ours = {row["destination"]: row for row in rows}
    trouble = [k for k in TROUBLE if any(figures.get(k) for figures in broker["destinations"].values())]
    first = "producers' broker" if broker.get("consumers_at") else "broker"
    table = [[first, "enqueued", "sent", "dequeued", "received", "depth", "unacked", "consumers", *trouble]]
    for name, figures in broker["destinations"].items():
        row = ours.get(name, {})
        table.append([name, _count(figures.get("enqueued")), _count(row.get("sent")),
                      _count(figures.get("dequeued")), _count(row.get("received")),
                      *(_count(figures.get(k)) for k in ("depth", "unacked", "consumers", *trouble))])  # fmt: skip
    return table


def _count(value: Any) -> str:
    return "-" if value is None else f"{value:,}" if isinstance(value, int) else f"{value:,.1f}"


def cross_check(broker: dict[str, Any], rows: list[dict[str, Any]], lost_workers: bool = False) -> list[str]:
    """A line per destination where the broker's counts and mqusers' disagree beyond what was in flight.

    Sent against enqueued: they may differ by the sends whose outcome mqusers does not know
    (``unconfirmed``); a transaction's messages count once it commits (``aborted`` ones never); the
    network-demand probes subscribers elsewhere sent (``probes_sent``) and were delivered (``probes``) count
    as the broker's messages.
    Received against dequeued (each message acknowledged once, whatever its redeliveries, a NACKed
    one it dead-lettered and what it expired: ActiveMQ's dequeueCount and Artemis's
    MessagesAcknowledged count those too): by what the broker still had dispatched and
    unacknowledged at the end, and fewer dequeued by the ``unconfirmed`` too (a send in doubt that
    arrived: ActiveMQ 5.17 counts it neither enqueued nor dequeued when a partition cut its RECEIPT).
    Its expired count against the audit's ``expired``: by what it still
    held (ActiveMQ drops an expired message only when it would dispatch it, or at its periodic
    sweep). With ``lost_workers``, more enqueued or dequeued than mqusers counted is what a lost
    worker did after its last report: the line says so, with the ``worker_lost`` it bounds.
    """
    lines = []
    figures_of = broker.get("destinations", {})
    for row in rows:
        figures = figures_of.get(row["destination"])
        if not figures or not figures.get("comparable", True):
            continue
        name, unconfirmed = row["destination"], row.get("unconfirmed", 0)
        enqueued, dequeued = figures.get("enqueued"), figures.get("dequeued")
        aborted = row.get("aborted", 0)
        # Network-demand probes (mqusers.stomp.probe) are messages to the broker, none of mqusers' sent.
        committed = row["sent"] - aborted + row.get("probes_sent", 0)
        if enqueued is not None and abs(enqueued - committed) > unconfirmed:
            gap = abs(enqueued - committed) - unconfirmed
            other = (
                ""
                if enqueued < committed
                else " (a lost worker's sends after its last report)"
                if lost_workers
                else " (another producer on this destination?)"
            )
            of = f", {aborted:,} of them aborted" if aborted else ""
            lines.append(f"{name}: the broker enqueued {enqueued:,}, mqusers sent {row['sent']:,} "
                         f"({unconfirmed:,} unconfirmed{of}): {gap:,} unexplained{other}")  # fmt: skip
        # Messages of other runs and foreign ones are acknowledged (so dequeued) but counted apart.
        # ``distinct``: the audit's messages received at least once (a report saved before it: received
        # less its duplicates); a redelivery flagged by the broker is no duplicate but no new message either.
        once = row.get("distinct", row["received"] - row.get("duplicated", 0) - row.get("after_reconnect", 0))
        expired = figures.get("expired")
        distinct = once + row.get("foreign", 0) + row.get("other_run", 0) + (expired or 0)
        distinct += row.get("dead_lettered", 0) + row.get("probes", 0)
        slack = figures.get("unacked", 0)
        # A send in doubt that arrived anyway may be dispatched outside the broker's counts (ActiveMQ 5.17
        # after a partition: neither enqueued nor dequeued), so fewer dequeued may be the unconfirmed.
        doubt = unconfirmed if dequeued is not None and dequeued < distinct else 0
        onward, received = "", distinct - (expired or 0)
        if (passed := passed_on(broker, row)) is not None:
            # What the consumers elsewhere took is what the other brokers were passed, counted by them.
            distinct += passed
            onward = f", the other brokers enqueued {passed:,} more than their consumers took"
        else:
            # A probe sent before a subscriber's demand arrived reached fewer subscriptions than a broker that
            # passes a topic on may count it for (ActiveMQ counts each per remote subscription).
            doubt += max(0, row.get("probes_sent", 0) * len(row.get("by_subscription", ())) - row.get("probes", 0))
        if dequeued is not None and abs(dequeued - distinct) > slack + doubt:
            gap = abs(dequeued - distinct) - slack - doubt
            lost = row.get("worker_lost", 0)
            why = ("" if dequeued < distinct else f" (a lost worker's receipts after its last report; {lost:,} "
                   "worker-lost)" if lost_workers else " (another consumer on this destination?)")  # fmt: skip
            also = f" and {expired:,} expired" if expired else ""
            held = f"{slack:,} unacknowledged at the end" + (f", {doubt:,} unconfirmed" if doubt else "")
            lines.append(f"{name}: the broker dequeued {dequeued:,}, mqusers received {received:,} "
                         f"distinct{also}{onward} ({held}): {gap:,} unexplained{why}")  # fmt: skip
        lines += _expiry_check(name, expired, row.get("expired", 0), figures.get("depth", 0))
    return lines


def passed_on(broker: dict[str, Any], row: dict[str, Any]) -> int | None:
    """What the producers' broker passed on of ``row``'s destination, less what mqusers' consumers on the other
    brokers received there (probes included): the other brokers' own enqueued counts, which take a topic's
    message once per broker with conduit subscriptions and once per remote subscriber without. None when some
    consumers' broker has no comparable count of it (not read, restarted, warmed up)."""
    docs = broker.get("network") or []
    if not docs:
        return None
    there = {b["broker"]: b["received"] + b.get("probes", 0) for b in row.get("by_broker") or []}
    passed = 0
    for doc in docs:
        figures = (doc.get("destinations") or {}).get(row["destination"]) or {}
        if not figures.get("comparable") or figures.get("enqueued") is None:
            return None
        passed += figures["enqueued"] - there.get(doc["address"], 0)
    return passed


def _expiry_check(name: str, broker: int | None, audit: int, held: int) -> list[str]:
    """The broker's expired count against the audit's, by what the broker still held; a line when they disagree,
    or when the audit counted expired messages and the broker has no such count (RabbitMQ's management API)."""
    if broker is None:
        return [f"{name}: the broker reports no expired count; the {audit:,} expired are mqusers' own"] if audit else []
    # Fewer by the broker: the rest may still wait in the queue, expired but not yet dropped.
    gap = audit - broker - held if broker < audit else broker - audit
    if gap <= 0:
        return []
    return [f"{name}: the broker expired {broker:,}, mqusers counted {audit:,} expired ({held:,} still held at the "
            f"end): {gap:,} unexplained"]  # fmt: skip


def _against(broker: dict[str, Any], rows: list[dict[str, Any]], compared: list[str]) -> str:
    """What the agreeing dequeued counts were held against (:func:`cross_check`)."""
    if not broker.get("consumers_at"):
        return "received"
    if all(passed_on(broker, row) is not None for row in rows if row["destination"] in compared):
        return "what was received there and what the other brokers enqueued"
    return "received (delivered there or passed on over the network)"


def broker_notes(broker: dict[str, Any], rows: list[dict[str, Any]], lost_workers: bool = False) -> list[str]:
    """The summary's lines: why there are no broker figures, the sampling's failures, the cross-check."""
    if not broker:
        return []
    if broker.get("source") is None:
        return [f"broker figures: none ({broker['note']})"] if broker.get("note") else []
    lines = [f"broker figures: {broker['note']}"] if broker.get("note") else []
    if broker.get("alarms_seen"):
        lines.append(f"the broker raised resource alarms during the run: {', '.join(broker['alarms_seen'])} "
                     "(publishers are blocked while one is on)")  # fmt: skip
    if broker.get("failures"):
        errors = "; ".join(dict.fromkeys(broker["errors"].values()))
        lines.append(f"broker figures: {broker['failures']:,} of the readings failed ({errors})")
    if broker.get("stale_s") is not None and broker.get("destinations"):
        lines.append(f"broker figures: the broker did not answer at the end; its figures above are its last answer,"
                     f" {broker['stale_s']:.0f} s before the report, not compared with mqusers' counts")  # fmt: skip
    if broker.get("warmup") and broker.get("destinations"):
        lines.append("broker figures: not compared with mqusers' counts (the broker's include the warm-up)")
    if broker.get("restarted"):
        lines.append("broker figures: the broker restarted during the test and its counters started again:"
                     " they are not compared with mqusers' counts")  # fmt: skip
    disagreements = cross_check(broker, rows, lost_workers)
    figures_of = broker.get("destinations", {})
    compared = [row["destination"] for row in rows if (figures := figures_of.get(row["destination"]))
                and figures.get("comparable") and figures.get("enqueued") is not None]  # fmt: skip
    if compared and not disagreements:
        expired = ", expired against expired" if any(figures_of[name].get("expired") for name in compared) else ""
        whose = "the producers' broker's" if broker.get("consumers_at") else "the broker's"
        against = _against(broker, rows, compared)
        lines.append(f"broker figures: {whose} counts agree with mqusers' ({', '.join(compared)}: enqueued "
                     f"against sent, dequeued against {against}{expired})")  # fmt: skip
    return lines + disagreements
