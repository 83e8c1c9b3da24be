"""Each consumers' broker's own figures (``--mq-consumer-host``) beside what mqusers' consumers there received.

The report's ``broker`` is the producers' broker's; its ``network`` list holds one document per other
broker the consumers read from, in the same shape (:func:`~mqusers.report.brokerreport.broker_document`).
A destination's dequeued count at such a broker is what its consumers there acknowledged, so it is held
against the audit's per-broker received (:mod:`mqusers.report.perbroker`) and the network-demand probes
(:mod:`mqusers.stomp.probe`) delivered to them; what it enqueued is what the network passed on, which no
client counts.
"""

from __future__ import annotations

from typing import Any

COLUMNS = ("enqueued", "dequeued", "received", "depth", "unacked", "consumers")


def _received(rows: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    return {(row["destination"], b["broker"]): b["received"] for row in rows for b in row.get("by_broker") or []}


def _probes(rows: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    return {(row["destination"], b["broker"]): b.get("probes", 0) for row in rows for b in row.get("by_broker") or []}


def _shown(value: Any) -> str:
    return "-" if value is None else f"{value:,}"


HEADER = ["consumers' broker", *COLUMNS]


def network_rows(broker: dict[str, Any], rows: list[dict[str, Any]]) -> list[list[Any]]:
    """Per consumers' broker and destination: the two named, then enqueued, dequeued, mqusers' received there,
    depth, unacked and consumers (None where not known)."""
    received, out = _received(rows), []
    for doc in broker.get("network") or []:
        for name, figures in (doc.get("destinations") or {}).items():
            at = {**figures, "received": received.get((name, doc["address"]))}
            out.append([f"{name} {doc['address']}", *(at.get(key) for key in COLUMNS)])
    return out


def network_table(broker: dict[str, Any], rows: list[dict[str, Any]]) -> list[list[str]]:
    """The console's table of :func:`network_rows`; empty when no other broker was read."""
    found = network_rows(broker, rows)
    return [HEADER, *([name, *map(_shown, values)] for name, *values in found)] if found else []


def network_notes(broker: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    """A line per consumers' broker: no figures and why, its destinations' counts agreeing with mqusers', or each
    destination where they disagree by more than was unacknowledged at the end."""
    received, probes, lines = _received(rows), _probes(rows), []
    for doc in broker.get("network") or []:
        address = doc["address"]
        if doc.get("source") is None:
            lines.append(f"broker figures at {address}: none ({doc.get('note') or 'not collected'})")
            continue
        agreed = []
        for name, figures in doc["destinations"].items():
            dequeued = figures.get("dequeued")
            if not figures.get("comparable") or dequeued is None:
                continue
            got, probed = received.get((name, address), 0), probes.get((name, address), 0)
            gap = abs(dequeued - got - probed) - (figures.get("unacked") or 0)
            if gap > 0:
                also = f" and {probed:,} probes" if probed else ""
                lines.append(f"{name} at {address}: the broker dequeued {dequeued:,}, mqusers' consumers there "
                             f"received {got:,}{also}: {gap:,} unexplained")  # fmt: skip
            else:
                agreed.append(name)
        if agreed:
            lines.append(f"broker figures at {address}: its counts agree with mqusers' ({', '.join(agreed)}: "
                         "dequeued against what the consumers there received)")  # fmt: skip
    return lines
