"""Event firing on a fresh Locust Environment: no broker, frames fed to the client directly."""

from locust.env import Environment
from locust.event import Events

import time
import zlib

import gevent

from mqusers import Receiver, StompClient
from mqusers.client import ClientConfig, Publisher, Sent
from mqusers.measure.ledgers import Subscription
from mqusers.parsing import parse_broker_url
from mqusers.wire import FrameParser, SendFrames


class Wire(StompClient):
    """A client whose socket is a list: what it would send is kept, nothing is connected."""

    def __init__(self, fire):  # type: ignore[no-untyped-def]
        super().__init__(ClientConfig(parse_broker_url("stomp://127.0.0.1:1"), timeout=0.05), fire)
        self.sent: list[bytes] = []

    def send_raw(self, data: bytes) -> None:
        self.sent.append(data)


def environment() -> Environment:
    env = Environment(events=Events())
    env.create_local_runner()  # the runner hooks request events into env.stats
    return env


def message(body: bytes, sent_ns: int, *, crc: int | None = None, ack: bytes | None = None) -> tuple[dict, bytes]:
    headers = {
        b"mq-run": b"run",
        b"mq-sent-ns": str(sent_ns).encode(),
        b"mq-size": str(len(body)).encode(),
        b"mq-crc32": str(zlib.crc32(body) if crc is None else crc).encode(),
        b"subscription": b"s",
    }
    if ack:
        headers[b"ack"] = ack
    return headers, body


def test_receive_event_carries_send_to_receive_latency() -> None:
    env = environment()
    client = Wire(env.events.request.fire)
    receiver = Receiver(client, "/queue/a", "auto", run_id="run")
    receiver(*message(b"x" * 100, time.time_ns() - 5_000_000))
    entry = env.stats.entries[("receive /queue/a", "STOMP")]
    assert entry.num_requests == 1 and entry.num_failures == 0
    assert 5 <= entry.total_response_time < 500
    assert entry.total_content_length == 100


def test_corrupt_messages_of_this_run_are_failures() -> None:
    env = environment()
    receiver = Receiver(Wire(env.events.request.fire), "/queue/a", "auto", run_id="run")
    receiver(*message(b"abc", time.time_ns(), crc=1))
    receiver({b"subscription": b"s", b"mq-run": b"run"}, b"stamp lost")
    entry = env.stats.entries[("receive /queue/a", "STOMP")]
    assert (entry.num_requests, entry.num_failures) == (2, 2)
    errors = {e.error for e in env.stats.errors.values()}
    assert any("mq-crc32" in str(e) for e in errors) and any("without its mqusers headers" in str(e) for e in errors)


def test_foreign_and_other_runs_messages_are_counted_apart() -> None:
    env = environment()
    receiver = Receiver(Wire(env.events.request.fire), "/queue/a", "client-individual", run_id="run")
    receiver.audit = Subscription("k", "/queue/a", "queue", False)
    receiver({b"subscription": b"s", b"ack": b"f1"}, b"not ours")
    other_headers, body = message(b"old", time.time_ns() - 3_600_000_000_000, ack=b"o1")
    receiver({**other_headers, b"mq-run": b"earlier", b"mq-producer": b"p", b"mq-seq": b"1"}, body)
    assert ("receive /queue/a", "STOMP") not in env.stats.entries  # neither received nor a failure
    assert (receiver.audit.foreign, receiver.audit.other_run, receiver.received) == (1, 1, 0)
    assert receiver._client.sent == [b"ACK\nid:f1\n\n\x00", b"ACK\nid:o1\n\n\x00"]  # type: ignore[attr-defined]


def test_other_runs_can_fail_or_be_received() -> None:
    env = environment()
    failing = Receiver(Wire(env.events.request.fire), "/queue/a", "auto", run_id="run", other_runs="fail")
    failing({b"subscription": b"s"}, b"not ours")
    assert env.stats.entries[("receive /queue/a", "STOMP")].num_failures == 1
    draining = Receiver(Wire(env.events.request.fire), "/queue/b", "auto", run_id="run", other_runs="receive")
    headers, body = message(b"old", time.time_ns() - 5_000_000)
    draining({**headers, b"mq-run": b"earlier"}, body)
    entry = env.stats.entries[("receive /queue/b", "STOMP")]
    assert (entry.num_requests, entry.num_failures) == (1, 0) and entry.total_response_time >= 5


def test_client_ack_mode_batches_and_flushes() -> None:
    env = environment()
    client = Wire(env.events.request.fire)
    receiver = Receiver(client, "/queue/a", "client", ack_every=3, run_id="run")
    for n in range(1, 5):
        receiver(*message(b"m", time.time_ns(), ack=b"a%d" % n))
    assert client.sent == [b"ACK\nid:a3\n\n\x00"]
    receiver.flush()
    assert client.sent[-1] == b"ACK\nid:a4\n\n\x00"


def test_individual_acks_and_no_acks_while_closing() -> None:
    client = Wire(environment().events.request.fire)
    receiver = Receiver(client, "/queue/a", "client-individual", ack_every=50, run_id="run")
    receiver(*message(b"m", time.time_ns(), ack=b"x:1"))
    assert client.sent == [b"ACK\nid:x\\c1\n\n\x00"]
    client.closing = True
    receiver(*message(b"m", time.time_ns(), ack=b"x:2"))
    assert len(client.sent) == 1 and receiver.received == 1


def test_receipt_times_a_sync_send_and_an_error_frame_fails_it() -> None:
    env = environment()
    client = Wire(env.events.request.fire)
    client._connected.set()
    publisher = Publisher("/queue/a", SendFrames("/queue/a", b"body", "run", "p", {}))
    parser = FrameParser(lambda c, h, b: client._take_frame(c, h, b))

    def answer(template: bytes) -> None:
        while not client.sent:
            gevent.sleep(0.001)
        receipt = client.sent.pop().split(b"receipt:")[1].split(b"\n")[0]
        parser.feed(template % receipt)

    gevent.spawn(answer, b"RECEIPT\nreceipt-id:%s\n\n\x00")
    assert client.publish(publisher, 1, sync=True)
    gevent.spawn(answer, b"ERROR\nreceipt-id:%s\nmessage:queue full\n\n\x00")
    assert client.publish(publisher, 2, sync=True) is Sent.FAILED  # written, then refused: not sent
    assert client.publish(publisher, 3, sync=True) is Sent.UNCONFIRMED  # no RECEIPT within the timeout
    sends = env.stats.entries[("send /queue/a", "STOMP")]
    receipts = env.stats.entries[("receipt /queue/a", "STOMP")]
    assert (sends.num_requests, sends.num_failures) == (3, 0)
    assert (receipts.num_requests, receipts.num_failures) == (3, 2)
    errors = sorted(str(e.error) for e in env.stats.errors.values())
    assert "queue full" in errors[0] and "no RECEIPT within 0.05s" in errors[1]


def test_a_missing_reply_is_a_failure_and_the_greenlet_lives_on() -> None:
    env = environment()
    client = Wire(env.events.request.fire)
    publisher = Publisher("/queue/a", SendFrames("/queue/a", b"body", "run", "p", {}))
    worker = gevent.spawn(lambda: [client.request(publisher, n, "/temp-queue/r") for n in (1, 2)])
    worker.join(timeout=5)
    assert worker.successful() and worker.value == [Sent.UNCONFIRMED, Sent.UNCONFIRMED]
    requests = env.stats.entries[("request /queue/a", "STOMP")]
    assert (requests.num_requests, requests.num_failures) == (2, 2)


def test_unclaimed_error_frame_is_a_failure_with_the_brokers_message() -> None:
    env = environment()
    client = Wire(env.events.request.fire)
    client._connected.set()
    FrameParser(lambda c, h, b: client._take_frame(c, h, b)).feed(b"ERROR\nmessage:Invalid destination\n\n\x00")
    [error] = env.stats.errors.values()
    assert error.name == "error stomp://127.0.0.1:1" and "Invalid destination" in str(error.error)
