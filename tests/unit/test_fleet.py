"""benchmarks/fleet.py's synthetic worker reports are what real workers ship, and judge exact when merged."""

from __future__ import annotations

import pytest

from benchmarks.fleet import Shape, audit_delta, deals, destination, producer_id, reports, tag
from mqusers.audit.audit import Audit
from mqusers.audit.intervals import IntervalSet
from mqusers.audit.ledgers import ReceiveLedger, SentLedger

START_NS = 1_700_000_000 * 1_000_000_000


@pytest.mark.parametrize("run", [1, 3])
def test_the_broker_deals_every_seq_to_exactly_one_consumer(run: int) -> None:
    shape = Shape(workers=3, rate=1000, consumers=2, run=run)
    for q in range(4):
        got = sorted(s for g in range(6) for lo, hi in deals(shape, q, g, 5, 47) for s in range(lo, hi + 1))
        assert got == list(range(5, 48))


def test_a_workers_delta_is_what_its_ledgers_drain_for_the_same_deliveries() -> None:
    shape = Shape(workers=3, rate=900, destinations=2, producers=2, consumers=2)
    for report in (0, 1):
        delta = audit_delta(shape, 1, report, START_NS)
        n = shape.per_report
        sent, received = SentLedger(tag(1)), ReceiveLedger(tag(1))
        for d in range(shape.destinations):
            for p in range(shape.producers):
                stream = sent.producer(destination(d), producer_id(1, p))
                for seq in range(report * n + 1, (report + 1) * n + 1):
                    stream.record(seq, START_NS + seq)
            for c in range(shape.consumers):
                sub = received.subscription(f"{tag(1)}/{d}/{c}", destination(d), "queue", START_NS - 10**9)
                g = 1 * shape.consumers + c
                for seq in range(report * n + 1, (report + 1) * n + 1):  # in the order the broker sends them
                    for w in range(shape.workers):
                        for p in range(shape.producers):
                            if (seq + w * shape.producers + p) % (shape.workers * shape.consumers) == g:
                                sub.record(producer_id(w, p), seq)
        drained_sent, drained_received = sent.drain(), received.drain(packed=True)
        assert [(e["producer"], e["seqs"]) for e in delta["producers"]] == [
            (e["producer"], e["seqs"]) for e in drained_sent["producers"]
        ]
        mine = [(s["key"], s["deliveries"], s["streams"]) for s in delta["subscriptions"]]
        theirs = [(s["key"], s["deliveries"], s["streams"]) for s in drained_received["subscriptions"]]
        assert mine == theirs  # a queue consumer's seqs are in its process's share, no stream of its own
        assert [
            (sh["destination"], sorted(zip(sh["producers"], sh["seqs"], strict=True))) for sh in delta["shares"]
        ] == [
            (sh["destination"], sorted(zip(sh["producers"], sh["seqs"], strict=True)))
            for sh in drained_received["shares"]
        ]


def test_every_workers_reports_merged_judge_exact() -> None:
    shape = Shape(workers=4, rate=2000, destinations=2)
    audit = Audit()
    data = list(reports(shape, 2, START_NS // 10**9))
    assert len(data) == 8
    for _, _, report in data:
        audit.merge(report["mqusers_audit"])
    verdict = audit.verdict(START_NS + 10 * 10**9, 0)
    for d in range(shape.destinations):
        fig = verdict[destination(d)]
        assert (fig["sent"], fig["received"]) == (shape.sent(2), shape.sent(2))
        assert (fig["lost"], fig["duplicated"], fig["unreceived"], fig["in_flight"]) == (0, 0, 0, 0)
    # One delivery left out of one report: the audit finds exactly it.
    audit = Audit()
    first = data[0][2]["mqusers_audit"]
    seqs = first["shares"][0]["seqs"]
    share = IntervalSet.decode(seqs[0][0])
    seqs[0] = [share.difference(IntervalSet([(share.first, share.first)])).pack()]
    first["subscriptions"][0]["deliveries"] -= 1
    for _, _, report in data:
        audit.merge(report["mqusers_audit"])
    fig = audit.verdict(START_NS + 10 * 10**9, 0)[destination(0)]
    assert (fig["received"], fig["lost"]) == (shape.sent(2) - 1, 1)
