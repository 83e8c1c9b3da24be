"""The message audit against independent truths: each test builds what really happened, feeds the
ledgers as mqusers' hooks would, and compares the master's verdict with a plain computation."""

from locust.rpc.protocol import Message

import json
import random
from collections import Counter
from typing import Any

from mqusers.audit.audit import Audit
from mqusers.audit.ledgers import CHECKPOINT_NS, ReceiveLedger, SentLedger

S = 1_000_000_000
MS = 1_000_000
Q, T = "/queue/audit", "/topic/audit"


def verdict(*ledgers: Any, now: int = 1000 * S, drain: int = 5 * S, offsets: dict[str, int] | None = None) -> Any:
    audit = Audit()
    for ledger in ledgers:
        audit.merge(json.loads(json.dumps(ledger.drain())))
    return audit.verdict(now, drain, offsets)


def test_injected_gap_lost_resent_no_duplicates() -> None:
    """The producer records 1..100, repeating 30-34; the wire drops 10-19 (the injected gap)."""
    sent, received = SentLedger("w1"), ReceiveLedger("w2")
    sub = received.subscription("w2/1", Q, "queue", joined_ns=0)
    for index, seq in enumerate([*range(1, 35), *range(30, 35), *range(35, 101)]):
        sent.producer(Q, "w1.p.1").record(seq, S + index * MS)
        if not 10 <= seq <= 19:
            sub.record(b"w1.p.1", seq)
    fig = verdict(sent, received)[Q]
    assert (fig["sent"], fig["resent"], fig["received"], fig["lost"], fig["duplicated"]) == (100, 5, 90, 10, 0)
    assert (fig["skipped"], fig["in_flight"], fig["foreign"], fig["unexpected"]) == (0, 0, 0, 0)
    assert fig["reordered"] == 4  # the repeated 30..33 arrive after 34
    assert fig["kind"] == "queue" and fig["expected"] == 100


def test_a_producer_that_skips_numbers_is_not_a_loss() -> None:
    """Seqs 10-19 never sent at all: reported as skipped, not lost."""
    sent, received = SentLedger("w1"), ReceiveLedger("w1")
    sub = received.subscription("w1/1", Q, "queue", joined_ns=0)
    for index, seq in enumerate([*range(1, 10), *range(20, 35), *range(30, 35), *range(35, 101)]):
        sent.producer(Q, "p").record(seq, S + index * MS)
        sub.record("p", seq)
    fig = verdict(sent, received)[Q]
    assert (fig["sent"], fig["skipped"], fig["resent"], fig["lost"], fig["duplicated"]) == (90, 10, 5, 0, 0)


def test_outside_consumer_steals_k() -> None:
    rng = random.Random(3)
    n, k = 3000, 37
    stolen = set(rng.sample(range(1, n + 1), k))
    sent = SentLedger("w1")
    ledgers = [ReceiveLedger("w2"), ReceiveLedger("w3")]
    subs = [ledger.subscription(f"{ledger.process}/{i}", Q, "queue", 0) for ledger in ledgers for i in range(2)]
    for seq in range(1, n + 1):
        sent.producer(Q, "p").record(seq, S + seq * MS)
        if seq not in stolen:
            rng.choice(subs).record(b"p", seq)
    fig = verdict(sent, *ledgers)[Q]
    assert (fig["lost"], fig["received"], fig["duplicated"], fig["in_flight"]) == (k, n - k, 0, 0)
    assert fig["subscriptions"] == 4


def test_what_a_departed_consumer_left_unacknowledged_comes_back_redelivered_not_duplicated() -> None:
    """Consumer A (one process) took 1..10 and left without ACKing 6..10; the broker gave them to B
    (another process) flagged redelivered, and then 10 once more unflagged: only that is a duplicate."""
    sent, a, b = SentLedger("w1"), ReceiveLedger("w2"), ReceiveLedger("w3")
    for kind, destination in (("queue", Q), ("topic", T)):
        # A topic's durable subscriber comes back under its own key, as a queue's next consumer would.
        first = a.subscription("s", destination, kind, 0, durable=True)
        again = b.subscription("s" if kind == "topic" else "b", destination, kind, 0, durable=True)
        for seq in range(1, 11):
            sent.producer(destination, "w1.p").record(seq, S + seq * MS)
            first.record(b"w1.p", seq)
        for seq in range(6, 11):
            again.record(b"w1.p", seq, True)
        again.record(b"w1.p", 10)
    audit = merged([sent.drain(), b.drain(), a.drain()])
    for destination in (Q, T):
        # Through a snapshot too: what a master's merge of worker deltas keeps.
        for figures in (audit.verdict(100 * S, S), merged([audit.snapshot()]).verdict(100 * S, S)):
            fig = figures[destination]
            assert (fig["received"], fig["redelivered"], fig["duplicated"], fig["lost"]) == (10, 5, 1, 0), destination


def reference_duplicates(sends: Counter[int], deliveries: Counter[int]) -> int:
    return sum(max(0, count - max(sends[seq], 1)) for seq, count in deliveries.items())


def reference_reordered(seqs: list[int]) -> int:
    top, count = -1, 0
    for seq in seqs:
        if seq < top:
            count += 1
        top = max(top, seq)
    return count


def test_duplicates_reordering_redeliveries_against_brute_force() -> None:
    for seed in range(12):
        rng = random.Random(seed)
        kind = "queue" if seed % 2 else "topic"
        audit, sent, received = Audit(), SentLedger("w1"), ReceiveLedger("w2")
        subs = [received.subscription(f"w2/{i}", Q, kind, 0) for i in range(3)]
        # Per subscription: (producer, seq), and flagged redelivered or not.
        log: dict[int, list[tuple[str, int, bool]]] = {i: [] for i in range(3)}
        sends = {p: Counter[int]() for p in ("a", "b")}
        redelivered = 0
        traffic = []
        for p in sends:
            for seq in range(1, 400):
                for _ in range(1 + (rng.random() < 0.05) + (rng.random() < 0.02)):  # some resends
                    sends[p][seq] += 1
                    sent.producer(Q, p).record(seq, S + seq * MS)
                    targets = [rng.randrange(3)] if kind == "queue" else [0, 1, 2]
                    for i in targets:
                        traffic.append((i, p, seq, False))
                        if rng.random() < 0.04:  # the broker delivers it again, maybe elsewhere
                            traffic.append((rng.randrange(3) if kind == "queue" else i, p, seq, rng.random() < 0.7))
        for _ in range(300):  # local disorder
            j = rng.randrange(len(traffic) - 5)
            k = j + rng.randrange(1, 5)
            traffic[j], traffic[k] = traffic[k], traffic[j]
        for i, p, seq, flag in traffic:
            subs[i].record(p.encode() if seed % 4 < 2 else p, seq, flag)  # header bytes or str ids alike
            log[i].append((p, seq, flag))
            redelivered += flag
            if rng.random() < 0.01:
                audit.merge(received.drain())
        audit.merge(sent.drain())
        audit.merge(received.drain())
        fig = audit.verdict(1000 * S, 5 * S)[Q]
        reordered = sum(reference_reordered([s for q, s, _ in log[i] if q == p]) for i in range(3) for p in sends)
        # A delivery the broker flagged redelivered is received, never a duplicate.
        groups = [[0, 1, 2]] if kind == "queue" else [[0], [1], [2]]
        duplicated = sum(reference_duplicates(sends[p], Counter(s for i in g for q, s, f in log[i] if q == p and not f))
                         for g in groups for p in sends)  # fmt: skip
        received = sum(len({(q, s) for i in g for q, s, _ in log[i]}) for g in groups)
        assert (fig["duplicated"], fig["reordered"], fig["redelivered"]) == (duplicated, reordered, redelivered), seed
        assert fig["received"] == received, seed
        assert fig["resent"] == sum(sum(c.values()) - len(c) for c in sends.values())
        assert fig["lost"] == 0 and fig["sent"] == 2 * 399


def reference_topic(sends: dict[str, dict[int, int]], sessions: list[tuple[int, int | None]], got: set[Any],
                    now: int, drain: int, durable: bool = False) -> dict[str, int]:  # fmt: skip
    """Expected from exact send times: sent strictly inside a session; in flight when sent within
    ``drain`` of now or of a leave."""
    if durable:
        sessions = [(sessions[0][0], sessions[-1][1])]
    expected, zone = set(), set()
    for p, times in sends.items():
        for seq, t in times.items():
            for joined, left in sessions:
                if joined < t and (left is None or t < left):
                    expected.add((p, seq))
                    if t >= now - drain or (left is not None and t >= left - drain):
                        zone.add((p, seq))
    missing = expected - got
    return {"expected": len(expected), "received": len(got), "lost": len(missing - zone),
            "in_flight": len(missing & zone), "unexpected": len(got - expected)}  # fmt: skip


def sum_figures(figures: list[dict[str, int]]) -> dict[str, int]:
    return {key: sum(f[key] for f in figures) for key in figures[0]}


def test_topic_late_joiner_and_early_leaver_against_brute_force() -> None:
    rng = random.Random(11)
    sent, received = SentLedger("w1"), ReceiveLedger("w2")
    now, drain = 11 * S + 50 * MS, 500 * MS
    sends: dict[str, dict[int, int]] = {"p1": {}, "p2": {}}
    for seq in range(1, 101):  # one send per checkpoint interval: every send time is known exactly
        for offset, p in ((0, "p1"), (30 * MS, "p2")):
            t = S + (seq - 1) * CHECKPOINT_NS + offset
            sent.producer(T, p).record(seq, t)
            sends[p][seq] = t
    plans = {"early": [(0, None)], "late": [(3 * S + 350 * MS, None)], "leaver": [(0, 6 * S + 50 * MS)]}
    truth = []
    for key, sessions in plans.items():
        joined, left = sessions[0]
        sub = received.subscription(key, T, "topic", joined)
        got = set()
        for p, times in sends.items():
            for seq, t in times.items():
                in_session = joined < t and (left is None or t < left)
                withheld = t > now - 300 * MS or (left is not None and t > left - 200 * MS)
                if in_session and not withheld and rng.random() > 0.03:
                    sub.record(p, seq)
                    got.add((p, seq))
        if left is not None:
            sub.leave(left)
        truth.append(reference_topic(sends, sessions, got, now, drain))
    fig = verdict(sent, received, now=now, drain=drain)[T]
    expected = sum_figures(truth)
    assert {k: fig[k] for k in expected} == expected
    assert fig["lost"] > 0 and fig["in_flight"] > 0  # both kinds of gap occurred
    assert (fig["subscriptions"], fig["sent"], fig["kind"]) == (3, 200, "topic")


def test_topic_boundaries_are_conservative_with_dense_sends() -> None:
    """1 ms apart, so a join or leave falls between checkpoints: the uncertain seqs are not expected,
    never counted lost, and at most one checkpoint interval's worth is given up at each end."""
    sent, received = SentLedger("w1"), ReceiveLedger("w2")
    times = {seq: S + seq * MS for seq in range(1, 10_001)}
    for seq, t in times.items():
        sent.producer(T, "p").record(seq, t)
    joined, left = 2 * S + 333 * MS + 1, 7 * S + 777 * MS + 1
    sub = received.subscription("w2/1", T, "topic", joined)
    got = {("p", seq) for seq, t in times.items() if joined < t < left}
    for _, seq in sorted(got):
        sub.record("p", seq)
    sub.leave(left)
    fig = verdict(sent, received, now=100 * S, drain=S)[T]
    truth = reference_topic({"p": times}, [(joined, left)], got, 100 * S, S)
    per_boundary = CHECKPOINT_NS // MS
    assert fig["lost"] == 0 and fig["in_flight"] == 0
    assert truth["expected"] - 2 * per_boundary <= fig["expected"] <= truth["expected"]
    assert fig["received"] == len(got) and fig["unexpected"] == truth["expected"] - fig["expected"]


def test_durable_subscription_expects_what_was_sent_while_offline() -> None:
    sent, received = SentLedger("w1"), ReceiveLedger("w2")
    times = {seq: S + (seq - 1) * CHECKPOINT_NS for seq in range(1, 101)}  # 1.0 s .. 10.9 s
    for seq, t in times.items():
        sent.producer(T, "p").record(seq, t)
    away, back = 4 * S + 50 * MS, 7 * S + 50 * MS
    offline = {seq for seq, t in times.items() if away <= t <= back}
    durable = received.subscription("d", T, "topic", joined_ns=500 * MS, durable=True)
    plain = received.subscription("n", T, "topic", joined_ns=500 * MS)
    forgetful = received.subscription("f", T, "topic", joined_ns=500 * MS, durable=True)
    for sub in (durable, plain, forgetful):
        for seq, t in times.items():
            if t < away:
                sub.record("p", seq)
        sub.leave(away)
    for key, sub in (("d", durable), ("n", plain), ("f", forgetful)):
        assert received.subscription(key, T, "topic", back, durable=key != "n") is sub  # same key: resumed
    for seq, t in times.items():
        if seq in offline:
            durable.record("p", seq)  # the broker kept them
        elif t > back:
            for sub in (durable, plain, forgetful):
                sub.record("p", seq)
    audit = Audit()
    audit.merge(sent.drain())
    audit.merge(received.drain())
    fig = audit.verdict(100 * S, 5 * S)[T]
    got = {("p", seq) for seq in times if seq not in offline}
    truth = [reference_topic({"p": times}, [(500 * MS, None)], {("p", s) for s in times}, 100 * S, 5 * S),
             reference_topic({"p": times}, [(500 * MS, away), (back, None)], got, 100 * S, 5 * S),
             reference_topic({"p": times}, [(500 * MS, None)], got, 100 * S, 5 * S)]  # fmt: skip
    assert {k: fig[k] for k in truth[0]} == sum_figures(truth)
    assert fig["lost"] == len(offline)  # only the forgetful durable one misses them
    assert truth[0]["expected"] == 100 and truth[0]["lost"] == 0


def test_unreceived_messages_in_the_drain_window_are_in_flight() -> None:
    sent, received = SentLedger("w1"), ReceiveLedger("w2")
    sub = received.subscription("w2/1", Q, "queue", 0)
    times = {seq: S + seq * 10 * MS for seq in range(1, 1001)}  # 1.01 s .. 11.0 s
    dropped = {17, 400, 555}
    for seq, t in times.items():
        sent.producer(Q, "p").record(seq, t)
        if t < 9 * S and seq not in dropped:
            sub.record("p", seq)
    audit = Audit()
    audit.merge(sent.drain())
    audit.merge(received.drain())
    late = sum(1 for t in times.values() if t >= 9 * S)
    fig = audit.verdict(now_ns=11 * S, drain_ns=2 * S + 500 * MS)  # horizon 8.5 s: all late ones still in flight
    assert (fig[Q]["lost"], fig[Q]["in_flight"]) == (3, late)
    fig = audit.verdict(now_ns=11 * S, drain_ns=2 * S + 50 * MS)  # horizon 8.95 s, between checkpoints
    truly_lost = 3 + sum(1 for t in times.values() if 9 * S <= t < 8 * S + 950 * MS)
    assert fig[Q]["lost"] == truly_lost and fig[Q]["in_flight"] == late  # the uncertain ones stay in flight
    fig = audit.verdict(now_ns=11 * S + 60 * MS, drain_ns=2 * S)  # horizon 9.06 s: 9.0-9.06 s may be uncertain
    # Nothing after 9 s arrived: the late ones out of the window are unreceived, never lost (no later one came).
    assert fig[Q]["lost"] == 3
    assert fig[Q]["lost"] + fig[Q]["in_flight"] + fig[Q]["unreceived"] == 3 + late
    fig = audit.verdict(now_ns=30 * S, drain_ns=5 * S)
    assert (fig[Q]["lost"], fig[Q]["unreceived"], fig[Q]["in_flight"]) == (3, late, 0)
    fig = audit.verdict(now_ns=30 * S, drain_ns=0, settled=False)  # the drain was cut: no evidence of loss
    assert (fig[Q]["lost"], fig[Q]["unreceived"]) == (0, 3 + late)


def test_clock_offsets_put_join_times_on_the_producers_clock() -> None:
    off_producer, off_consumer = -1 * S, 2 * S  # each process's clock minus the master's
    sent, received = SentLedger("w1"), ReceiveLedger("w2")
    true_times = {seq: S + (seq - 1) * CHECKPOINT_NS for seq in range(1, 101)}
    for seq, t in true_times.items():
        sent.producer(T, "p").record(seq, t + off_producer)
    joined = 5 * S + 50 * MS
    sub = received.subscription("w2/1", T, "topic", joined + off_consumer)
    got = {("p", seq) for seq, t in true_times.items() if t > joined}
    for _, seq in sorted(got):
        sub.record("p", seq)
    audit = Audit()
    audit.merge(sent.drain())
    audit.merge(received.drain())
    truth = reference_topic({"p": true_times}, [(joined, None)], got, 11 * S, S)
    fig = audit.verdict(11 * S, S, {"w1": off_producer, "w2": off_consumer})[T]
    assert {k: fig[k] for k in truth} == truth and truth["unexpected"] == 0
    assert audit.verdict(11 * S, S)[T]["unexpected"] == 30  # without offsets: 3 s of receipts look unexpected


def test_foreign_producers_are_counted_apart() -> None:
    sent, received = SentLedger("w1"), ReceiveLedger("w2")
    queue_sub = received.subscription("w2/1", Q, "queue", 0)
    topic_sub = received.subscription("w2/2", T, "topic", 0)
    for seq in range(1, 11):
        sent.producer(Q, "p").record(seq, S + seq * MS)
        for sub in (queue_sub, topic_sub):
            sub.record("p", seq)
            sub.record(b"previous-run.p", seq)
            sub.record(b"previous-run.p", seq)
    fig = verdict(sent, received)
    assert (fig[Q]["foreign"], fig[Q]["duplicated"], fig[Q]["lost"], fig[Q]["received"]) == (20, 0, 0, 10)
    # "p" never sent to the topic: a producer is a (destination, id) pair, so those are foreign too
    assert (fig[T]["foreign"], fig[T]["sent"], fig[T]["expected"], fig[T]["received"]) == (30, 0, 0, 0)


def scenario(seed: int) -> list[dict[str, Any]]:
    """Three workers, producers and subscriptions spread over them, drains at random moments."""
    rng = random.Random(seed)
    workers = [(SentLedger(f"w{i}"), ReceiveLedger(f"w{i}")) for i in range(3)]
    producers = [(rng.choice(workers)[0], d, f"p{i}") for i, d in enumerate([Q, Q, T, T])]
    subs = []
    for i in range(6):
        ledger = rng.choice(workers)[1]
        destination = Q if i < 3 else T
        kind = "queue" if destination == Q else "topic"
        subs.append(ledger.subscription(f"{ledger.process}/{i}", destination, kind, i * S, durable=i == 5))
    deltas = []
    for step in range(2000):
        ledger, destination, name = rng.choice(producers)
        seq = step // 4 + 1 if rng.random() > 0.01 else rng.randrange(1, step // 4 + 2)
        t = S + step * 7 * MS
        ledger.producer(destination, name).record(seq, t)
        for sub in [s for s in subs if s.destination == destination]:
            if rng.random() < (0.4 if destination == Q else 0.95):
                sub.record(name.encode(), seq, rng.random() < 0.02)
        if step == 1500:
            subs[4].leave(t)
        if rng.random() < 0.02:
            sent, received = rng.choice(workers)
            deltas += [sent.drain(), received.drain()]
    for sent, received in workers:
        deltas += [sent.drain(), received.drain()]
    return json.loads(json.dumps(deltas))


def merged(deltas: list[dict[str, Any]]) -> Audit:
    audit = Audit()
    for delta in deltas:
        audit.merge(delta)
    return audit


def test_merge_is_associative_and_commutative() -> None:
    for seed in range(5):
        rng = random.Random(seed)
        deltas = scenario(seed)
        reference = merged(deltas)
        figures = reference.verdict(20 * S, S, {"w1": 3 * MS})
        for _ in range(4):
            shuffled = deltas[:]
            rng.shuffle(shuffled)
            cut = sorted(rng.sample(range(1, len(shuffled)), 3))
            groups = [shuffled[a:b] for a, b in zip([0, *cut], [*cut, len(shuffled)], strict=True)]
            partial = [json.loads(json.dumps(merged(group).snapshot())) for group in groups]
            rng.shuffle(partial)
            nested = merged([partial[0], merged(partial[1:]).snapshot()])
            for audit in (merged(shuffled), merged(partial), nested):
                assert audit.snapshot() == reference.snapshot()
                assert audit.verdict(20 * S, S, {"w1": 3 * MS}) == figures
        assert merged([reference.snapshot()]).snapshot() == reference.snapshot()
        assert figures[Q]["received"] > 0 and figures[T]["subscriptions"] == 3


def test_deltas_cross_locusts_wire_unchanged() -> None:
    deltas = scenario(0)
    shipped = [Message("report", delta, "w1").serialize() for delta in deltas]
    arrived = [Message.unserialize(data).data for data in shipped]
    assert arrived == deltas
    assert merged(arrived).snapshot() == merged(deltas).snapshot()


def test_a_million_in_order_records_cost_one_interval_per_producer() -> None:
    # What a record costs in time is measured by benchmarks.ceiling (the receive and send paths); here, its size.
    n = 1_000_000
    sent, received = SentLedger("w1"), ReceiveLedger("w2")
    record = sent.producer(Q, "p").record
    for seq in range(1, n + 1):
        record(seq, S + seq * 10_000)  # 10 µs apart: 10 s of sends, a checkpoint every 100 ms of them
    on_message = received.subscription("w2/1", Q, "queue", 0).record
    for seq in range(1, n + 1):
        on_message(b"p", seq, False)
    shipped, got = sent.drain(), received.drain()
    assert shipped["producers"][0]["seqs"] == [[[1, n]]]
    assert len(shipped["producers"][0]["checkpoints"]) == 100
    assert got["subscriptions"][0]["streams"] == [
        {"producer": "p", "seqs": [[[1, n]]], "reordered": 0, "redelivered": 0, "flagged": []}
    ]
    assert got["subscriptions"][0]["deliveries"] == n
    audit = Audit()
    audit.merge(shipped)
    audit.merge(got)
    fig = audit.verdict(100 * S, S)[Q]
    assert (fig["sent"], fig["received"], fig["lost"], fig["duplicated"]) == (n, n, 0, 0)
    assert audit.snapshot()["queues"] == [{"destination": Q, "producer": "p", "seqs": [[[1, n]]], "flagged": []}]


def test_a_burst_recorded_as_a_run_drains_like_its_messages_one_by_one() -> None:
    """Messages written together (one socket write) are one ``record_run``; a run overlapping what
    was sent before (a resend) takes the careful path and counts the repeats."""
    by_run, one_by_one = SentLedger("w1"), SentLedger("w1")
    bursts = [(1, 64, S), (65, 64, S + 50 * MS), (129, 10, S + 300 * MS), (120, 20, S + 400 * MS)]
    for first, count, sent_ns in bursts:
        by_run.producer(Q, "p").record_run(first, count, sent_ns)
        for seq in range(first, first + count):
            one_by_one.producer(Q, "p").record(seq, sent_ns)
    mine, theirs = by_run.drain()["producers"][0], one_by_one.drain()["producers"][0]
    assert mine["seqs"] == theirs["seqs"] == [[[1, 139]], [[120, 138]]]
    assert mine["last_ns"] == theirs["last_ns"] == S + 400 * MS
    # A checkpoint is (a seq, its send time): a run marks its last seq, sent at the same moment as its first.
    assert theirs["checkpoints"] == [[1, S], [129, S + 300 * MS], [139, S + 400 * MS]]
    assert mine["checkpoints"] == [[64, S], [138, S + 300 * MS], [139, S + 400 * MS]]


def test_a_put_only_fill_reports_its_unsure_sends_as_unconfirmed() -> None:
    """No subscription reads the queue: nothing is expected, and the sends of a connection that
    ended unconfirmed (here 61-100 of 100) are the destination's unconfirmed figure."""
    sent = SentLedger("w1")
    producer = sent.producer(Q, "p")
    for seq in range(1, 101):
        producer.record(seq, S + seq * MS)
    producer.unconfirmed.add_range(61, 100)
    producer.unconfirmed.add_range(150, 160)  # numbers never sent are not sends
    fig = verdict(sent)[Q]
    assert (fig["sent"], fig["subscriptions"], fig["expected"], fig["unconfirmed"]) == (100, 0, 0, 40)
    assert fig["lost"] == fig["unreceived"] == fig["in_flight"] == 0


def test_what_a_lost_worker_may_have_taken_is_worker_lost_not_lost() -> None:
    """Producer on w1; queue consumers on w1 and w2; w2 dies after shipping: what it took since is unknown."""
    sent, survivor, dead = SentLedger("w1"), ReceiveLedger("w1"), ReceiveLedger("w2")
    mine, theirs = survivor.subscription("w1/0", Q, "queue", 0), dead.subscription("w2/0", Q, "queue", 0)
    for seq in range(1, 101):
        sent.producer(Q, "w1.P.0").record(seq, S + seq * MS)
    audit = Audit()
    for seq in range(1, 41):
        (mine if seq % 2 else theirs).record("w1.P.0", seq)
    for ledger in (sent, survivor, dead):
        audit.merge(json.loads(json.dumps(ledger.drain())))
    for seq in range(41, 101):  # w2 takes its share, then dies with it unshipped
        (mine if seq % 2 else theirs).record("w1.P.0", seq)
    audit.merge(survivor.drain())
    judged = audit.verdict(1000 * S, 5 * S)[Q]
    assert (judged["lost"], judged["unreceived"], judged["worker_lost"]) == (29, 1, 0)  # unaware: a false loss
    fig = audit.verdict(1000 * S, 5 * S, lost_processes=frozenset({"w2"}))[Q]
    assert (fig["lost"], fig["unreceived"], fig["worker_lost"], fig["received"]) == (0, 0, 30, 70)
    assert fig["drops"] == 1  # what it had not acknowledged comes again: at-least-once
    assert audit.shipped_by("w2") == {"sent": 0, "received": 20} and audit.shipped_by("w1")["sent"] == 100


def test_a_lost_producers_unshipped_sends_are_not_foreign_and_its_shipped_ones_not_lost() -> None:
    """w2's producer shipped seqs 1-50, sent 51-60 unshipped, then died; w1's consumer got 1-45 and 51-60."""
    sent, received = SentLedger("w2"), ReceiveLedger("w1")
    sub = received.subscription("w1/0", Q, "queue", 0)
    for seq in range(1, 51):
        sent.producer(Q, "w2.P.0").record(seq, S + seq * MS)
    for seq in [*range(1, 46), *range(51, 61)]:
        sub.record("w2.P.0", seq)
    lost = frozenset({"w2"})
    audit = Audit()
    for ledger in (sent, received):
        audit.merge(json.loads(json.dumps(ledger.drain())))
    assert (audit.verdict(1000 * S, 5 * S)[Q]["foreign"], audit.verdict(1000 * S, 5 * S)[Q]["lost"]) == (0, 5)
    fig = audit.verdict(1000 * S, 5 * S, lost_processes=lost)[Q]
    assert (fig["foreign"], fig["lost"], fig["worker_lost"], fig["unexpected"]) == (0, 0, 5, 0)
    # A producer never shipped at all: its deliveries are the lost worker's, not foreign; the worker
    # shipped nothing, so it may have consumed from any destination.
    other = ReceiveLedger("w1")
    other.subscription("w1/0", T, "queue", 0).record("w3.P.0", 1)
    audit.merge(json.loads(json.dumps(other.drain())))
    assert audit.verdict(1000 * S, 5 * S)[T]["foreign"] == 1
    assert audit.verdict(1000 * S, 5 * S, lost_processes=frozenset({"w3"}))[T]["foreign"] == 0


def test_a_lost_workers_topic_subscription_is_worker_lost_and_a_survivors_is_judged_as_ever() -> None:
    """w1 publishes 1-100 to a topic; w2's subscriber shipped 1-40 then died; w1's own lost 50 in the broker."""
    sent, survivor, dead = SentLedger("w1"), ReceiveLedger("w1"), ReceiveLedger("w2")
    mine, theirs = survivor.subscription("w1/0", T, "topic", 0), dead.subscription("w2/0", T, "topic", 0)
    for seq in range(1, 101):
        sent.producer(T, "w1.P.0").record(seq, S + seq * MS)
        if seq != 50:
            mine.record("w1.P.0", seq)
        if seq <= 40:
            theirs.record("w1.P.0", seq)
    audit = Audit()
    for ledger in (sent, survivor, dead):
        audit.merge(json.loads(json.dumps(ledger.drain())))
    fig = audit.verdict(1000 * S, 5 * S, lost_processes=frozenset({"w2"}))[T]
    assert (fig["lost"], fig["worker_lost"], fig["unreceived"], fig["expected"]) == (1, 60, 0, 200)
    by = {s["key"]: s for s in fig["by_subscription"]}
    assert (by["w1/0"]["lost"], by["w2/0"]["worker_lost"], by["w2/0"]["lost"]) == (1, 60, 0)
