"""The failover bookkeeping: outages per client, their windows, the per-destination summary."""

from __future__ import annotations

from collections import Counter

from mqusers.measure.buckets import Traffic
from mqusers.measure.outages import (
    AFTERMATH_S,
    MAX_OUTAGES,
    Availability,
    Outages,
    after_ready_ns,
    latency_split,
    summarize,
    window_ns,
    windows,
)
from mqusers.measure.series import Series
from mqusers.report.failover import failover_document, failover_notes, failover_table

S = 1_000_000_000


def _outage(
    outages: Outages, role: str = "producer", destination: str = "/queue/a", client: str = "p1"
) -> Availability:
    return Availability(outages, role, destination, client)


def test_an_outage_runs_from_the_last_good_operation_to_the_first_after_the_reconnect() -> None:
    outages = Outages("proc")
    user = _outage(outages)
    user.lost(last_ok_ns=10 * S, lost_ns=11 * S)
    assert not user.pending
    user.refused(12 * S, "cannot reach the broker")
    user.refused(13 * S, "cannot reach the broker")
    user.reconnected(14 * S)
    assert user.pending
    user.back(13 * S)  # older than the reconnect: not the first good operation after it
    assert user.pending
    user.back(15 * S)
    assert not user.pending
    (outage,) = outages.records
    assert outage["process"] == "proc" and outage["refused"] == 2
    assert window_ns(outage, 99 * S) == 5 * S
    assert after_ready_ns(outage) == 1 * S  # the broker refused at 13 s: ready no earlier


def test_a_client_that_never_worked_before_starts_its_window_at_the_drop() -> None:
    outages = Outages()
    user = _outage(outages, role="consumer")
    user.lost(last_ok_ns=-1, lost_ns=20 * S)
    user.reconnected(20 * S + S // 2)
    user.back(21 * S)
    assert window_ns(outages.records[0], 99 * S) == S
    assert after_ready_ns(outages.records[0]) == S // 2  # none refused: from the drop


def test_a_client_not_back_by_the_end_is_unrecovered_and_says_why() -> None:
    outages = Outages()
    user = _outage(outages, role="consumer", destination="/topic/t", client="c1")
    user.lost(5 * S, 6 * S)
    user.refused(7 * S, "broker ERROR: client id already in use")
    (row,) = summarize(outages.records, end_ns=10 * S)
    assert (row.outages, row.reconnects, row.unrecovered, row.refused) == (1, 0, 1, 1)
    assert row.window_max_ms == {"consumer": 5000.0}
    assert row.after_ready_max_ms is None
    document = failover_document(outages.records, 0, Series(), 10 * S)
    assert document["lines"] == [
        "/topic/t: consumer c1 lost its connection and never got it back (1 refused attempts: broker ERROR: "
        "client id already in use)"
    ]


def test_the_summary_takes_the_worst_per_role_and_the_windows_merge_per_destination() -> None:
    outages = Outages()
    for client, (last_ok, back) in {"p1": (10, 13), "p2": (11, 12)}.items():
        user = _outage(outages, client=client)
        user.lost(last_ok * S, last_ok * S)
        user.reconnected(back * S)
        user.back(back * S)
    consumer = _outage(outages, role="consumer", client="c1")
    consumer.lost(12 * S, 12 * S)
    consumer.reconnected(14 * S)
    consumer.back(15 * S)
    late = _outage(outages, client="p3")
    late.lost(30 * S, 30 * S)
    late.reconnected(31 * S)
    late.back(31 * S)
    (row,) = summarize(outages.records, 99 * S)
    assert row.window_max_ms == {"producer": 3000.0, "consumer": 3000.0}
    assert (row.outages, row.reconnects, row.reconnect_max_ms) == (4, 4, 3000.0)
    assert windows(outages.records, 99 * S) == {"/queue/a": [(10 * S, 15 * S), (30 * S, 31 * S)]}


def test_closed_outages_ship_as_they_end_and_open_ones_only_with_the_final_payload() -> None:
    outages = Outages()
    seen: list[str] = []
    outages.listeners.append(lambda outage: seen.append(outage["client"]))
    done, stuck = _outage(outages, client="done"), _outage(outages, client="stuck")
    done.lost(1, 2)
    stuck.lost(1, 2)
    assert outages.drain(final=False) == []
    done.reconnected(3)
    done.back(4)
    assert seen == ["done"]  # the annotation fires where the outage ended, once
    assert [o["client"] for o in outages.drain(final=False)] == ["done"]
    assert [o["client"] for o in outages.drain(final=True)] == ["stuck"]
    assert outages.drain(final=True) == []
    master = Outages()
    master.merge(outages.records)
    assert len(master.records) == 2 and seen == ["done"]


def test_outages_are_bounded_and_the_rest_counted() -> None:
    outages = Outages()
    user = _outage(outages)
    for _ in range(MAX_OUTAGES + 3):
        user.lost(1, 2)
    assert (len(outages.records), outages.overflow) == (MAX_OUTAGES, 3)
    assert failover_document(outages.records, outages.overflow, Series(), 3)["outages"] == MAX_OUTAGES + 3


def test_latency_is_split_by_the_buckets_a_window_or_its_aftermath_touches() -> None:
    buckets = {
        100: Traffic(received=2, latency=Counter({1000: 2})),
        105: Traffic(received=1, latency=Counter({900_000: 1})),
        105 + AFTERMATH_S: Traffic(received=1, latency=Counter({2000: 1})),
        200: Traffic(received=1, latency=Counter({1000: 1})),
    }
    split = latency_split(buckets, [(104 * S, 106 * S - 1)], 1)
    assert split["during"]["count"] == 2 and split["during"]["max_ms"] >= 900.0
    assert split["outside"]["count"] == 3 and split["outside"]["max_ms"] < 1.1


def test_the_console_shows_a_table_only_when_a_connection_dropped() -> None:
    quiet = failover_document([], 0, Series(), 0)
    assert (failover_table(quiet), failover_notes(quiet, [])) == ([], [])
    outages = Outages()
    user = _outage(outages)
    user.lost(1 * S, 1 * S)
    user.reconnected(2 * S)
    user.back(2 * S)
    document = failover_document(outages.records, 0, Series(), 3 * S)
    header, row = failover_table(document)
    assert header[0] == "failover" and row[:3] == ["/queue/a", "1", "1"] and row[3] == "1,000"
    assert failover_notes(document, [])[0].startswith("failover: 1 connection drop(s), the longest window")
