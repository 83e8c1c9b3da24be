"""The broker-metrics sampler and the report's broker section, with a scripted source (the real
sources are tested against real brokers in tests/integration/test_broker_sources.py)."""

from __future__ import annotations

import locust  # noqa: F401  (gevent first)

from typing import Any

import gevent
from gevent.event import Event

from mqusers.brokers.model import BrokerFigures, BrokerSample, DestinationFigures, JvmFigures, MetricsError
from mqusers.brokers.sampler import MAX_KEPT, SETTLE_READS, BrokerSampler
from mqusers.report.brokerreport import broker_document, broker_notes, broker_table, cross_check, passed_on
from tests.unit.fake_clock import Clock


class Scripted:
    """A source whose queue grows by 10 enqueued / 8 dequeued per reading; ``fail`` raises instead."""

    name = "activemq"
    settle_s = 0.01

    def __init__(self) -> None:
        self.reads, self.calls, self.fail, self.hang, self.closed = 0, 0, False, False, False
        self.answer = Event()  # cleared: a slow broker, whose reading waits until it is set
        self.answer.set()

    def broker(self) -> BrokerFigures:
        self.calls += 1
        if self.hang:
            gevent.sleep(60)
        self.answer.wait()
        if self.fail:
            raise MetricsError("ActiveMQ at stomp://h:1 does not answer ActiveMQ.Statistics.Broker")
        self.reads += 1
        return {"memory_percent": 1.0, "connections": 3}

    def destination(self, destination: str) -> DestinationFigures:
        if destination == "/queue/new" and self.reads < 3:
            return {}  # not created yet at the first readings
        n = self.reads
        return {"enqueued": 100 + 10 * n, "dequeued": 100 + 8 * n, "depth": 2 * n, "unacked": 1, "consumers": 1}

    def close(self) -> None:
        self.closed = True


class Jvm:
    def __init__(self) -> None:
        self.n = 0

    def sample(self) -> JvmFigures:
        self.n += 1
        return {"heap_used_mb": 100.0 + self.n, "heap_committed_mb": 512.0, "gc_count": 5 + self.n, "gc_seconds": 0.5}


class Seen(list[BrokerSample]):
    """The samples a listener got; ``wait(n)`` until it has ``n``, the event it means."""

    def __init__(self) -> None:
        super().__init__()
        self._more = Event()

    def __call__(self, sample: BrokerSample) -> None:
        self.append(sample)
        self._more.set()

    def wait(self, n: int) -> None:
        with gevent.Timeout(10):  # a bound for a broken sampler, not a measure of speed
            while len(self) < n:
                self._more.clear()
                self._more.wait()


def sampler(source: Scripted, **kwargs: object) -> tuple[BrokerSampler, Seen]:
    seen = Seen()
    made = BrokerSampler(source, Jvm(), lambda: ["/queue/a", "/queue/new", "/queue/a"], interval=0.01, timeout=0.05,
                         listeners=[seen], **kwargs)  # type: ignore[arg-type]  # fmt: skip
    return made, seen


def test_counters_are_this_tests_differences_and_gauges_their_last_reading() -> None:
    source = Scripted()
    made, seen = sampler(source)
    made.start(1.0)  # the baseline reading happens before start returns
    assert source.reads == 1
    seen.wait(3)
    before = source.reads
    made.stop()
    # Its counters never stop moving: the last readings give up after SETTLE_READS.
    assert source.reads - before == SETTLE_READS
    assert source.closed and len(seen) == made.samples >= 3
    document = broker_document(made)
    last = source.reads
    assert document["destinations"]["/queue/a"] == {"enqueued": 10 * (last - 1), "dequeued": 8 * (last - 1),
                                                     "depth": 2 * last, "unacked": 1, "consumers": 1,
                                                     "baseline": True, "comparable": True}  # fmt: skip
    # Unknown at the first reading: its baseline is nothing, so all it counted is this test's.
    assert document["destinations"]["/queue/new"]["enqueued"] == 100 + 10 * last
    warmed = broker_document(made, warmup=True)
    assert warmed["destinations"]["/queue/a"]["comparable"] is False
    assert any("include the warm-up" in line for line in broker_notes(warmed, []))
    assert not any("warm-up" in line for line in broker_notes(document, []))
    assert document["jvm"]["gc_count_run"] == made.samples - 1 and document["jvm"]["heap_used_mb_max"] > 100
    assert document["source"] == "activemq" and document["failures"] == 0 and document["series"]


def test_a_failing_or_hanging_source_is_counted_logged_once_and_never_blocks() -> None:
    source = Scripted()
    source.fail = True
    made, seen = sampler(source)
    made.start(1.0)
    seen.wait(2)  # two readings, the broker's part failing in each (the JVM answers)
    source.fail, source.hang = False, True
    made.sample()  # a reading hanging costs at most twice the timeout (the sampler's own bound)...
    calls = source.calls
    made.stop()  # ...and one failing at the end is not asked again
    assert source.calls == calls and source.closed
    assert made.failures >= 3 and len(made.errors) == 1
    assert "Statistics.Broker" in made.errors["broker"]
    document = broker_document(made)
    assert document["destinations"] == {} and seen  # the JVM still answered
    assert broker_notes(document, [])[0].startswith("broker figures: ")


def test_an_alarm_seen_in_any_reading_is_in_the_summary() -> None:
    source = Scripted()
    made = BrokerSampler(source, None, lambda: [], interval=60, timeout=1)
    made.sample()
    source.broker = lambda: {"alarms": ["memory"]}  # type: ignore[method-assign]
    made.sample()
    source.broker = lambda: {"alarms": []}  # type: ignore[method-assign]
    made.sample()
    document = broker_document(made)
    assert document["alarms_seen"] == ["memory"] and document["broker"] == {"alarms": []}
    assert broker_notes(document, [])[0].startswith("the broker raised resource alarms during the run: memory")


def test_no_source_says_why_in_one_line() -> None:
    document = broker_document(None, "off (--mq-broker-metrics off)")
    assert document["source"] is None and broker_notes(document, []) == [
        "broker figures: none (off (--mq-broker-metrics off))"
    ]


def test_kept_samples_are_bounded() -> None:
    made = BrokerSampler(Scripted(), None, lambda: [], interval=1, timeout=1)
    for _ in range(3 * MAX_KEPT):
        made.sample()
    assert len(made.kept) <= MAX_KEPT and made.samples == 3 * MAX_KEPT


def test_fewer_dequeued_than_received_may_be_the_sends_in_doubt() -> None:
    # ActiveMQ 5.17 after a partition: the send whose RECEIPT was cut arrived, uncounted.
    broker = {"destinations": {"/queue/a": {"enqueued": 4091, "dequeued": 4091, "unacked": 0}}}
    row = {"destination": "/queue/a", "sent": 4092, "received": 4092, "unconfirmed": 1}
    assert cross_check(broker, [row]) == []
    assert cross_check(broker, [{**row, "sent": 4093, "received": 4093}]) == [
        "/queue/a: the broker enqueued 4,091, mqusers sent 4,093 (1 unconfirmed): 1 unexplained",
        "/queue/a: the broker dequeued 4,091, mqusers received 4,093 distinct (0 unacknowledged at the end, "
        "1 unconfirmed): 1 unexplained",
    ]


def test_the_cross_check_names_only_what_in_flight_messages_do_not_explain() -> None:
    broker = {"destinations": {"/queue/a": {"enqueued": 1000, "dequeued": 990, "unacked": 10},
                               "/queue/b": {"enqueued": 1005, "dequeued": 900, "unacked": 5}}}  # fmt: skip
    rows = [{"destination": "/queue/a", "sent": 1002, "received": 992, "unconfirmed": 2, "duplicated": 2},
            {"destination": "/queue/b", "sent": 1000, "received": 1000, "unconfirmed": 0}]  # fmt: skip
    assert cross_check(broker, rows) == [
        "/queue/b: the broker enqueued 1,005, mqusers sent 1,000 (0 unconfirmed): 5 unexplained "
        "(another producer on this destination?)",
        "/queue/b: the broker dequeued 900, mqusers received 1,000 distinct (5 unacknowledged at the end): "
        "95 unexplained",
    ]
    header, row_a, _ = broker_table(broker, rows)
    assert header[:5] == ["broker", "enqueued", "sent", "dequeued", "received"]
    assert row_a == ["/queue/a", "1,000", "1,002", "990", "992", "-", "10", "-"]


def test_with_consumers_on_another_broker_the_figures_say_they_are_the_producers_brokers() -> None:
    figures = {"enqueued": 3000, "dequeued": 3000, "unacked": 0, "comparable": True}
    broker = {"source": "activemq", "consumers_at": "stomp://127.0.0.1:61642", "destinations": {"/queue/a": figures}}
    rows = [{"destination": "/queue/a", "sent": 3000, "received": 3000, "unconfirmed": 0}]
    assert broker_table(broker, rows)[0][0] == "producers' broker"
    assert broker_notes(broker, rows) == [
        "broker figures: the producers' broker's counts agree with mqusers' (/queue/a: enqueued against sent, "
        "dequeued against received (delivered there or passed on over the network))"
    ]


def _network(b: int, c: int, comparable: bool = True) -> list[dict[str, Any]]:
    """Two consumers' brokers' documents: what each enqueued of /topic/t."""
    return [{"address": address, "source": "activemq",
             "destinations": {"/topic/t": {"enqueued": n, "dequeued": 0, "comparable": comparable}}}
            for address, n in (("stomp://b", b), ("stomp://c", c))]  # fmt: skip


def test_a_topic_passed_on_to_other_brokers_is_held_against_what_they_enqueued_conduit_or_not() -> None:
    """Two subscribers on each of B and C, 1,500 messages, 2 probes each side: with conduit subscriptions the
    producers' broker passes each message once per broker (3,004 dequeued), without once per subscriber (6,008).
    Both agree: the other brokers' enqueued counts say which. Received alone (6,004) would call 3,000 unexplained."""
    rows = [{"destination": "/topic/t", "sent": 1500, "received": 6000, "distinct": 6000, "unconfirmed": 0,
             "probes": 4, "probes_sent": 4, "by_subscription": [{}] * 4,
             "by_broker": [{"broker": "stomp://b", "received": 3000, "probes": 2},
                           {"broker": "stomp://c", "received": 3000, "probes": 2}]}]  # fmt: skip
    for passed, each in ((3004, 1502), (6008, 3004)):
        figures = {"enqueued": 1504, "dequeued": passed, "unacked": 0, "comparable": True}
        broker = {"source": "activemq", "consumers_at": "stomp://b stomp://c", "destinations": {"/topic/t": figures},
                  "network": _network(each, each)}  # fmt: skip
        assert passed_on(broker, rows[0]) == passed - 6004
        assert broker_notes(broker, rows) == [
            "broker figures: the producers' broker's counts agree with mqusers' (/topic/t: enqueued against sent, "
            "dequeued against what was received there and what the other brokers enqueued)"
        ]
    broker["network"] = _network(3004, 4004)  # a thousand copies C counts that A never passed on
    assert cross_check(broker, rows) == [
        "/topic/t: the broker dequeued 6,008, mqusers received 6,004 distinct, the other brokers enqueued 1,004 "
        "more than their consumers took (0 unacknowledged at the end): 1,000 unexplained"
    ]
    # A consumers' broker restarted (its counters again from zero): held against received alone, as without one.
    broker["network"] = _network(3004, 3004, comparable=False)
    assert passed_on(broker, rows[0]) is None


def test_a_destination_first_read_after_the_load_began_has_no_baseline_and_no_cross_check() -> None:
    source = Scripted()
    source.answer.clear()  # a slow broker: its first reading comes after the load began
    made = BrokerSampler(source, None, lambda: ["/queue/a"], interval=60, timeout=1)
    made.start(0.05)
    assert source.reads == 0 and made.baseline == set()
    source.answer.set()
    made.stop()
    figures = broker_document(made)["destinations"]["/queue/a"]
    assert figures["baseline"] is False and figures["enqueued"] == 100 + 10 * source.reads  # as the broker has it
    rows = [{"destination": "/queue/a", "sent": 1, "received": 1}]
    assert cross_check(broker_document(made), rows) == []


def test_the_last_reading_is_taken_once_when_nothing_moved_since_the_one_before() -> None:
    source, clock = Scripted(), Clock()
    made = BrokerSampler(source, None, lambda: ["/queue/a"], interval=60, timeout=1, clock=clock, sleep=clock.sleep)
    made.start(1.0)
    source.destination = lambda destination: {"enqueued": 7, "depth": 0}  # type: ignore[method-assign]
    made.sample()
    clock.now += 2 * source.settle_s  # the broker had time to refresh since
    reads = source.reads
    made.stop()
    assert source.reads == reads + 1


def test_agreeing_readings_too_close_together_do_not_count_as_settled() -> None:
    source, clock = Scripted(), Clock()
    source.settle_s = 0.2
    made = BrokerSampler(source, None, lambda: ["/queue/a"], interval=60, timeout=1, clock=clock, sleep=clock.sleep)
    made.start(1.0)
    source.destination = lambda destination: {"enqueued": 7, "depth": 0}  # type: ignore[method-assign]
    made.sample()
    reads = source.reads
    made.stop()  # the first reading agrees with one taken a moment ago: read again after settle_s
    assert source.reads == reads + 2 and clock.now == 1000.0 + source.settle_s  # slept settle_s between them


class Restarting(Scripted):
    """A broker that restarts after the second reading: another instance, every counter from zero."""

    def broker(self) -> BrokerFigures:
        figures = super().broker()
        return {**figures, "instance": "ID:b-1" if self.reads <= 2 else "ID:b-2"}

    def destination(self, destination: str) -> DestinationFigures:
        n = self.reads
        counted = 100 + 10 * n if n <= 2 else 10 * (n - 2)
        return {"enqueued": counted, "dequeued": counted, "depth": 0}


def test_a_broker_restart_is_said_once_and_its_counters_are_not_compared() -> None:
    made = BrokerSampler(Restarting(), None, lambda: ["/queue/a"], interval=60, timeout=1)
    for _ in range(4):
        made.sample()
    assert made.instances == ["ID:b-1", "ID:b-2"]
    document = broker_document(made)
    figures = document["destinations"]["/queue/a"]
    assert document["restarted"] and figures["comparable"] is False
    assert (figures["enqueued"], figures["dequeued"], figures["depth"]) == (None, None, 0)
    rows = [{"destination": "/queue/a", "sent": 140, "received": 140}]
    assert cross_check(document, rows) == []
    assert broker_table(document, rows)[1][:5] == ["/queue/a", "-", "140", "-", "140"]
    assert [n for n in broker_notes(document, rows) if "restarted" in n] == [
        "broker figures: the broker restarted during the test and its counters started again: "
        "they are not compared with mqusers' counts"
    ]


def test_counters_that_go_down_without_a_known_instance_are_not_compared() -> None:
    source = Restarting()
    source.broker = Scripted.broker.__get__(source)  # type: ignore[method-assign]  # a source that names no instance
    made = BrokerSampler(source, None, lambda: ["/queue/a"], interval=60, timeout=1)
    for _ in range(4):
        made.sample()
    document = broker_document(made)
    assert not document["restarted"] and made.counters_reset == {"/queue/a"}
    assert document["destinations"]["/queue/a"]["comparable"] is False
    assert document["destinations"]["/queue/a"]["enqueued"] is None


def test_figures_older_than_the_end_are_shown_but_not_compared() -> None:
    source = Scripted()
    made = BrokerSampler(source, None, lambda: ["/queue/a"], interval=60, timeout=1)
    made.sample()
    made.baseline = {"/queue/a"}
    made.sample()
    source.fail = True  # the broker stopped answering before the end (killed, partitioned)
    made.sample()
    figures = broker_document(made)["destinations"]["/queue/a"]
    assert figures["enqueued"] == 10 and figures["comparable"] is False
    assert cross_check(broker_document(made), [{"destination": "/queue/a", "sent": 999, "received": 999}]) == []


def test_a_destination_the_broker_stops_reporting_is_not_a_counter_reset() -> None:
    source = Scripted()
    made = BrokerSampler(source, None, lambda: ["/queue/a"], interval=60, timeout=1)
    made.sample()
    source.destination = lambda destination: {}  # type: ignore[method-assign]  # e.g. an auto-deleted queue
    made.sample()
    assert made.counters_reset == set()


def test_figures_left_by_a_broker_that_stopped_answering_are_dated_and_not_compared() -> None:
    source, clock = Scripted(), Clock()
    made = BrokerSampler(source, None, lambda: ["/queue/a"], interval=60, timeout=1, clock=clock, sleep=clock.sleep)
    made.start(1.0)
    made.sample()
    clock.now += 7.0
    source.fail = True
    made.stop()  # the last reading fails: the figures are the previous answer's, 7 s old
    document = broker_document(made)
    assert document["stale_s"] == 7.0
    assert document["destinations"]["/queue/a"]["comparable"] is False
    rows = [{"destination": "/queue/a", "sent": 10**6, "received": 10**6}]  # far from the stale counts
    notes = broker_notes(document, rows)
    assert any("did not answer at the end" in line and "not compared" in line for line in notes)
    assert not any("unexplained" in line for line in notes)
    source.fail = False
    made.sample()
    assert broker_document(made)["stale_s"] is None  # answered again: current figures
