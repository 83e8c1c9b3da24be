"""The warm-up is cut at one instant, per message by its send time.

The recorder drops every sample recorded before ``measured_from_ns`` (to the ns, also inside a
second) and opens the window, once, before any consumer sees a sample of it; a receiver leaves out a
message sent before the instant however late it arrives, yet still audits and acknowledges it.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import pytest

from mqusers.coordination.messages import Follower
from mqusers.measure.recorder import Batch, Recorder
from mqusers.stomp.receiver import Receiver
from tests.unit.fake_client import connected, environment, publisher

T0_NS = 1_764_000_000_000_000_000
CUT_NS = T0_NS + 500_000_123  # inside a second, as a warm-up's end is


class Consumer:
    def __init__(self) -> None:
        self.batches: list[Batch] = []
        self.log: list[str] = []

    def __call__(self, batches: Sequence[Batch]) -> None:
        self.batches.extend(batches)
        self.log.append("batches")

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for batch in self.batches:
            counts[batch.name] = counts.get(batch.name, 0) + batch.count
        return counts


def recorder_from(cut_ns: int, per_message: bool = False) -> tuple[Recorder, Consumer, list[dict[str, Any]]]:
    fired: list[dict[str, Any]] = []
    recorder, consumer = Recorder(lambda **event: fired.append(event), per_message), Consumer()
    recorder.add_consumer(consumer)
    recorder.measure_from(cut_ns, lambda: consumer.log.append("opened"))
    return recorder, consumer, fired


@pytest.mark.parametrize("flush_every", [1, 2, 7])
def test_samples_before_the_instant_are_dropped_to_the_ns(flush_every: int, monkeypatch: Any) -> None:
    monkeypatch.setattr("mqusers.measure.recorder.time.time_ns", lambda: T0_NS)  # the window opens by a sample
    recorder, consumer, _ = recorder_from(CUT_NS)
    send = recorder.operation("send /queue/a")
    times = [T0_NS + 1, CUT_NS - 2, CUT_NS - 1, CUT_NS, CUT_NS + 1, T0_NS + 999_999_999, T0_NS + 1_200_000_000]
    for index, now_ns in enumerate(times):
        send.record(now_ns - T0_NS, 10, now_ns)
        if index % flush_every == 0:
            recorder.flush()
    recorder.flush()
    kept = [t for t in times if t >= CUT_NS]
    assert consumer.counts() == {"send /queue/a": len(kept)}
    assert sorted(m for b in consumer.batches for m in b.micros.elements()) == [t - T0_NS for t in kept]
    assert sum(b.bytes for b in consumer.batches) == 10 * len(kept)
    assert min(b.first_ns for b in consumer.batches) == CUT_NS
    assert consumer.log[0] == "opened" and consumer.log.count("opened") == 1


def test_the_window_opens_with_no_traffic_once_its_instant_has_passed(monkeypatch: Any) -> None:
    now = [CUT_NS - 1]
    monkeypatch.setattr("mqusers.measure.recorder.time.time_ns", lambda: now[0])
    recorder, consumer, _ = recorder_from(CUT_NS)
    recorder.flush()
    assert consumer.log == []
    now[0] = CUT_NS
    recorder.flush()
    recorder.flush()
    assert consumer.log == ["opened"]


def test_per_message_events_before_the_instant_are_not_fired(monkeypatch: Any) -> None:
    monkeypatch.setattr("mqusers.measure.recorder.time.time_ns", lambda: CUT_NS)
    recorder, _, fired = recorder_from(CUT_NS, per_message=True)
    receive = recorder.operation("receive /queue/a")
    receive.record(5, 10, CUT_NS - 1)
    receive.record(7, 10, CUT_NS)
    assert [event["response_time"] for event in fired] == [0.007]


class Audit:
    def __init__(self) -> None:
        self.seqs: list[int] = []

    def record(self, producer: bytes, seq: int, redelivered: bool) -> None:
        self.seqs.append(seq)


class Client:
    """What a receiver uses of its client, recording into a real recorder."""

    closing = False
    behind = False

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.operation = recorder.operation
        self.fire = recorder.fire
        self.acks: list[bytes] = []

    def after_read(self, callback: Any) -> None:
        pass  # the test writes the ACKs with the receiver's flush

    def send_raw(self, data: bytes) -> None:
        self.acks.append(data)


def message(seq: int, sent_ns: int) -> tuple[dict[bytes, bytes], bytes]:
    body = b"x" * 10
    headers = {b"mq-run": b"run", b"mq-producer": b"p.1", b"mq-seq": b"%d" % seq, b"mq-sent-ns": b"%d" % sent_ns,
               b"mq-due-ns": b"%d" % sent_ns, b"mq-size": b"10", b"mq-crc32": b"%d" % zlib.crc32(body),
               b"ack": b"%d" % seq}  # fmt: skip
    return headers, body


def test_a_message_sent_in_the_warm_up_is_left_out_however_late_it_arrives(monkeypatch: Any) -> None:
    monkeypatch.setattr("mqusers.measure.recorder.time.time_ns", lambda: CUT_NS + 10**9)
    recorder, consumer, _ = recorder_from(CUT_NS)
    client = Client(recorder)
    receiver = Receiver(client, "/topic/a", "client-individual", run_id="run")  # type: ignore[arg-type]
    receiver.audit = Audit()  # type: ignore[assignment]
    for seq, sent_ns in enumerate((CUT_NS - 1_000, CUT_NS - 1, CUT_NS, CUT_NS + 1_000)):
        receiver(*message(seq, sent_ns), CUT_NS + 2_000)  # all arrive after the warm-up's end
    recorder.flush()
    assert consumer.counts() == {"receive /topic/a": 2, "receive-due /topic/a": 2}
    assert receiver.audit.seqs == [0, 1, 2, 3]  # type: ignore[attr-defined]
    receiver.flush()
    assert receiver.received == 4 and b"".join(client.acks).count(b"ACK\n") == 4  # every one acknowledged


def test_a_send_stamped_before_the_instant_is_left_out_though_recorded_after_it(monkeypatch: Any) -> None:
    env = environment()
    client, _ = connected(env)
    stamps = iter([CUT_NS - 1, CUT_NS + 5, CUT_NS, CUT_NS + 5])  # each publish: its stamp, then its record
    monkeypatch.setattr("mqusers.stomp.client.time.time_ns", lambda: next(stamps))
    client.recorder.measure_from(CUT_NS)
    sender = publisher(client)
    assert client.publish(sender, 1) and client.publish(sender, 2)
    assert env.stats.get("send /queue/a", "STOMP").num_requests == 1  # the one stamped at the instant


def test_a_worker_cuts_at_the_masters_instant_on_its_own_clock_until_its_window_opened(monkeypatch: Any) -> None:
    now = [T0_NS]
    monkeypatch.setattr("mqusers.measure.recorder.time.time_ns", lambda: now[0])
    recorder, consumer, _ = recorder_from(CUT_NS + 3_000_000)  # its own start + warm-up, 3 ms after the master's
    follower = Follower()
    follower.on_measured_from = recorder.move_measured_from
    follower.measured_from_ns = CUT_NS  # the go's (master clock)
    follower.measure_from()
    assert recorder.measured_from_ns == CUT_NS
    follower.own_offset_ns = 40_000  # this worker's clock runs 40 us ahead of the master's
    follower.measure_from()
    assert recorder.measured_from_ns == CUT_NS + 40_000
    now[0] = CUT_NS + 40_000
    recorder.flush()
    assert consumer.log == ["opened"]
    follower.own_offset_ns = 0
    follower.measure_from()  # too late: the window is open, its samples already judged
    assert recorder.measured_from_ns == CUT_NS + 40_000
