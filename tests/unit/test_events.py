"""Event firing on a fresh Locust Environment: no broker, the client over an in-memory transport."""

from locust.env import Environment

import re
import time

import gevent
import pytest

from mqusers import StompClient
from mqusers.audit.ledgers import Subscription
from mqusers.options.parsing import parse_broker_url
from mqusers.stomp.client import ClientConfig, MqError, Sent
from mqusers.stomp.receiver import Receiver
from tests.unit.fake_client import ADDRESS, CONFIG, connected, deliver, environment, message, publisher
from tests.unit.memory_transport import MemoryConnection, MemoryTransport


def errors(env: Environment) -> list[str]:
    return sorted(str(e.error) for e in env.stats.errors.values())


def test_receive_event_carries_send_to_receive_latency() -> None:
    env = environment()
    client, _ = connected(env)
    receiver = Receiver(client, "/queue/a", "auto", run_id="run")
    receiver(*message(b"x" * 100, time.time_ns() - 5_000_000))
    entry = env.stats.entries[("receive /queue/a", "STOMP")]
    assert entry.num_requests == 1 and entry.num_failures == 0
    assert 5 <= entry.total_response_time < 500
    assert entry.total_content_length == 100


def test_corrupt_messages_of_this_run_are_failures() -> None:
    env = environment()
    receiver = Receiver(connected(env)[0], "/queue/a", "auto", run_id="run")
    receiver(*message(b"abc", time.time_ns(), crc=1))
    receiver({b"subscription": b"s", b"mq-run": b"run"}, b"stamp lost", time.time_ns())
    entry = env.stats.entries[("receive /queue/a", "STOMP")]
    assert (entry.num_requests, entry.num_failures) == (2, 2)
    errors = {e.error for e in env.stats.errors.values()}
    assert any("mq-crc32" in str(e) for e in errors) and any("without its mqusers headers" in str(e) for e in errors)


def test_foreign_and_other_runs_messages_are_counted_apart() -> None:
    env = environment()
    client, connection = connected(env)
    receiver = Receiver(client, "/queue/a", "client-individual", run_id="run")
    client.route("s", receiver)
    receiver.audit = Subscription("k", "/queue/a", "queue", False)
    other_headers, body, _ = message(b"old", time.time_ns() - 3_600_000_000_000, ack=b"o1")
    other = {**other_headers, b"mq-run": b"earlier", b"mq-producer": b"p", b"mq-seq": b"1"}
    deliver(connection, ({b"subscription": b"s", b"ack": b"f1"}, b"not ours"), (other, body))
    assert ("receive /queue/a", "STOMP") not in env.stats.entries  # neither received nor a failure
    assert (receiver.audit.foreign, receiver.audit.other_run, receiver.received) == (1, 1, 0)
    assert connection.sent == [b"ACK\nid:f1\n\n\x00ACK\nid:o1\n\n\x00"]  # acknowledged too, in one write


def test_other_runs_can_fail_or_be_received() -> None:
    env = environment()
    failing = Receiver(connected(env)[0], "/queue/a", "auto", run_id="run", other_runs="fail")
    failing({b"subscription": b"s"}, b"not ours", time.time_ns())
    assert env.stats.entries[("receive /queue/a", "STOMP")].num_failures == 1
    draining = Receiver(connected(env)[0], "/queue/b", "auto", run_id="run", other_runs="receive")
    headers, body, received_ns = message(b"old", time.time_ns() - 5_000_000)
    draining({**headers, b"mq-run": b"earlier"}, body, received_ns)
    entry = env.stats.entries[("receive /queue/b", "STOMP")]
    assert (entry.num_requests, entry.num_failures) == (1, 0) and entry.total_response_time >= 5


def test_client_ack_mode_batches_and_flushes() -> None:
    env = environment()
    client, connection = connected(env)
    receiver = Receiver(client, "/queue/a", "client", ack_every=3, run_id="run")
    client.route("s", receiver)
    deliver(connection, *(message(b"m", time.time_ns(), ack=b"a%d" % n)[:2] for n in range(1, 5)))
    assert connection.sent == [b"ACK\nid:a3\n\n\x00"]  # cumulative: a3 covers a1 and a2
    receiver.flush()
    assert connection.sent[-1] == b"ACK\nid:a4\n\n\x00"


def test_individual_acks_and_no_acks_while_closing() -> None:
    client, connection = connected(environment())
    receiver = Receiver(client, "/queue/a", "client-individual", ack_every=50, run_id="run")
    client.route("s", receiver)
    # ActiveMQ escapes the ':' of its ack ids; each goes back exactly as it came, all of a read in one write.
    deliver(connection, *(message(b"m", time.time_ns(), ack=b"x\\c%d" % n)[:2] for n in (1, 2, 3)))
    assert connection.sent == [b"ACK\nid:x\\c1\n\n\x00ACK\nid:x\\c2\n\n\x00ACK\nid:x\\c3\n\n\x00"]
    client.closing = True
    deliver(connection, message(b"m", time.time_ns(), ack=b"x\\c4")[:2])
    assert len(connection.sent) == 1 and receiver.received == 3


def test_receipt_times_a_sync_send_and_an_error_frame_fails_it() -> None:
    env = environment()
    client, connection = connected(env)

    def refuse() -> None:
        receipt = connection.next_frame()[1][b"receipt"]
        connection.feed(b"ERROR\nreceipt-id:%s\nmessage:queue full\n\n\x00" % receipt)

    gevent.spawn(connection.answer_receipt)
    assert client.publish(publisher(client), 1, sync=True) is Sent.CONFIRMED
    gevent.spawn(refuse)
    assert client.publish(publisher(client), 2, sync=True) is Sent.FAILED  # written, then refused: not sent
    assert client.publish(publisher(client), 3, sync=True) is Sent.UNCONFIRMED  # no RECEIPT within the timeout
    sends = env.stats.entries[("send /queue/a", "STOMP")]
    receipts = env.stats.entries[("receipt /queue/a", "STOMP")]
    assert (sends.num_requests, sends.num_failures) == (3, 0)
    assert (receipts.num_requests, receipts.num_failures) == (3, 2)
    assert "queue full" in errors(env)[0] and "no RECEIPT within 0.05s" in errors(env)[1]
    assert [frame.count(b"\nreceipt:") for frame in connection.sent] == [1, 1, 1]


def test_a_request_carries_reply_to_and_a_correlation_id_that_the_reply_echoes() -> None:
    env = environment()
    client, connection = connected(env)

    def reply() -> None:
        headers = connection.next_frame()[1]
        client.reply_arrived({b"correlation-id": headers[b"correlation-id"]}, b"body", time.time_ns())

    gevent.spawn(reply)
    assert client.request(publisher(client), 7, "/temp-queue/r") is Sent.CONFIRMED
    assert b"\nreply-to:/temp-queue/r\ncorrelation-id:p-7\n" in connection.sent[0]
    requests = env.stats.entries[("request /queue/a", "STOMP")]
    assert (requests.num_requests, requests.num_failures) == (1, 0)


def test_a_missing_reply_is_a_failure_and_the_greenlet_lives_on() -> None:
    env = environment()
    client, _ = connected(env)
    worker = gevent.spawn(lambda: [client.request(publisher(client), n, "/temp-queue/r") for n in (1, 2)])
    worker.join(timeout=5)
    assert worker.successful() and worker.value == [Sent.UNCONFIRMED, Sent.UNCONFIRMED]
    requests = env.stats.entries[("request /queue/a", "STOMP")]
    assert (requests.num_requests, requests.num_failures) == (2, 2)


def test_unclaimed_error_frame_is_a_failure_with_the_brokers_message() -> None:
    env = environment()
    _, connection = connected(env)
    connection.feed(b"ERROR\nmessage:Invalid destination\n\n\x00")
    [error] = env.stats.errors.values()
    assert error.name == f"error {ADDRESS}" and "Invalid destination" in str(error.error)


def test_a_drop_while_a_receipt_is_pending_leaves_the_message_unconfirmed() -> None:
    env = environment()
    client, connection = connected(env, ClientConfig(parse_broker_url(ADDRESS), timeout=5.0))

    def drop() -> None:
        connection.next_frame()
        connection.drop()

    gevent.spawn(drop)
    assert client.publish(publisher(client), 1, sync=True) is Sent.UNCONFIRMED
    assert client.dropped and not client.connected
    assert errors(env) == ["connection lost"]  # the drop answered the wait: the timeout says "no RECEIPT within"
    assert env.stats.entries[("receipt /queue/a", "STOMP")].num_failures == 1


def test_a_refused_subscribe_is_a_subscribe_failure_with_the_brokers_message() -> None:
    env = environment()
    client, connection = connected(env)
    # RabbitMQ confirms a SUBSCRIBE to a missing queue, then refuses it, in the same read.
    gevent.spawn(connection.answer_receipt, b"ERROR\nmessage:not_found\n\nNO_QUEUE - no queue 'q'\x00")
    sub_id = client.subscribe("/amq/queue/q", lambda h, b, _: None, ack="auto", headers={})
    gevent.sleep(0)
    entry = env.stats.entries[("subscribe /amq/queue/q", "STOMP")]
    assert (entry.num_requests, entry.num_failures) == (2, 1)
    assert errors(env) == ["broker ERROR: not_found: NO_QUEUE - no queue 'q'"]
    assert sub_id.startswith("mq-sub-") and ("error " + ADDRESS, "STOMP") not in env.stats.entries


def test_an_error_after_a_delivery_is_not_the_subscribe_refused() -> None:
    env = environment()
    client, connection = connected(env)
    received: list[bytes] = []
    gevent.spawn(connection.answer_receipt)
    sub_id = client.subscribe("/queue/q", lambda h, b, _: received.append(b), ack="auto", headers={"id": "s1"})
    connection.feed(b"MESSAGE\nsubscription:%s\n\nhello\x00ERROR\nmessage:later\n\n\x00" % sub_id.encode())
    assert received == [b"hello"]
    assert env.stats.entries[("subscribe /queue/q", "STOMP")].num_failures == 0
    assert env.stats.entries[(f"error {ADDRESS}", "STOMP")].num_failures == 1


def test_reconnecting_moves_the_generation_and_connected_at() -> None:
    transport = MemoryTransport()
    client = StompClient(CONFIG, environment().events.request.fire, transport=transport)
    assert (client.generation, client.connected) == (0, False)
    client.connect()
    first_at = client.connected_at
    assert (client.generation, client.connected, client.dropped) == (1, True, False)
    transport.connection.drop()
    assert (client.generation, client.connected, client.dropped) == (1, False, True)
    before = time.monotonic()
    client.connect()
    assert (client.generation, client.connected, client.dropped) == (2, True, False)
    assert client.connected_at >= before > first_at and len(transport.connections) == 2


def test_disconnect_waits_for_the_receipt_of_its_disconnect() -> None:
    client, connection = connected(environment(), ClientConfig(parse_broker_url(ADDRESS), timeout=5.0))
    gevent.spawn(connection.answer_receipt)
    assert client.disconnect() is True  # the RECEIPT answered it (a timeout returns False)
    assert connection.sent == [b"DISCONNECT\nreceipt:mq-bye-1\n\n\x00"] and connection.closed
    assert not client.connected and not client.dropped
    assert client.disconnect() is False  # nothing left to confirm


def test_disconnect_from_a_broker_that_never_answers_returns_at_the_timeout() -> None:
    client, connection = connected(environment())
    closing = gevent.spawn(client.disconnect)
    gevent.idle()  # it wrote DISCONNECT and waits for the RECEIPT, the connection still open
    assert not closing.ready() and connection.sent[0].startswith(b"DISCONNECT\n") and not connection.closed
    assert closing.get(timeout=10) is False  # what was written may never have been read
    assert connection.closed
    assert not client.connected and not client.dropped


def test_a_timed_disconnect_is_one_event_from_disconnect_to_its_receipt() -> None:
    env = environment()
    client, connection = connected(env, ClientConfig(parse_broker_url(ADDRESS), timeout=5.0))
    gevent.spawn(connection.answer_receipt)
    assert client.disconnect(timed=True) is True
    entry = env.stats.entries[(f"disconnect {ADDRESS}", "STOMP")]
    assert (entry.num_requests, entry.num_failures) == (1, 0) and entry.total_response_time < 1000


def test_a_timed_disconnect_without_receipt_is_a_failure_saying_so() -> None:
    env = environment()
    client, _ = connected(env, ClientConfig(parse_broker_url(ADDRESS), timeout=0.05))
    assert client.disconnect(timed=True) is False
    entry = env.stats.entries[(f"disconnect {ADDRESS}", "STOMP")]
    assert (entry.num_requests, entry.num_failures) == (1, 1)
    assert errors(env) == ["no RECEIPT within 0.05s"]


def test_an_untimed_disconnect_fires_nothing() -> None:
    env = environment()
    client, connection = connected(env, ClientConfig(parse_broker_url(ADDRESS), timeout=5.0))
    gevent.spawn(connection.answer_receipt)
    assert client.disconnect() is True
    assert not [key for key in env.stats.entries if key[0].startswith("disconnect")]


def test_a_blocked_send_shows_in_send_progress_and_disconnect_still_returns() -> None:
    env = environment()
    client, connection = connected(env)
    connection.stall()
    producer = gevent.spawn(client.publish, publisher(client), 1)
    gevent.idle()  # the producer runs until its send blocks
    assert client.send_progress() == (True, 1) and connection.in_send
    assert client.disconnect() is False  # its DISCONNECT blocks too, until the timeout
    assert producer.get(timeout=10) is Sent.FAILED  # the connection closed under the blocked send
    assert client.send_progress() == (False, 0) and connection.closed


def blocked_burst(whole: int) -> tuple[Environment, StompClient, MemoryConnection, gevent.Greenlet]:
    """A burst of 8 blocked after the kernel took ``whole`` of its frames and half of the next."""
    env = environment()
    client, connection = connected(env)
    one = len(publisher(client).frames.frame(1, time.time_ns()))  # messages 1-8: one length
    connection.stall(accept=whole * one + one // 2)
    burst = gevent.spawn(client.publish_many, publisher(client), 1, 8)
    gevent.idle()  # the burst runs until its write blocks
    assert connection.in_send
    return env, client, connection, burst


def test_a_burst_cut_by_a_dropped_connection_counts_the_frames_that_went_out_whole() -> None:
    env, _, connection, burst = blocked_burst(3)
    connection.drop()
    assert burst.get(timeout=1) == 3  # the broker may still read those three
    sends = env.stats.entries[("send /queue/a", "STOMP")]
    assert (sends.num_requests, sends.num_failures) == (8, 5)


def test_a_burst_interrupted_mid_write_says_what_went_out_whole() -> None:
    env, client, _, burst = blocked_burst(2)
    burst.kill()  # the run's end stops the User in its blocked send
    assert client.interrupted_whole(8) == 2
    assert client.interrupted_whole(1) == 1  # read once: a later interruption waited for an answer
    assert env.stats.entries[("send /queue/a", "STOMP")].num_requests == 2


@pytest.mark.parametrize(
    ("transport", "reason"),
    [
        (MemoryTransport(unreachable="no route to host"), f"cannot reach the broker at {ADDRESS} (no route to host)"),
        (MemoryTransport(b"ERROR\nmessage:bad login\n\n\x00"), "refused the connection: bad login"),
        (MemoryTransport(connected=None), "refused the connection: no CONNECTED frame within 0.05s"),
    ],
)
def test_a_failed_connect_raises_and_fires_one_line(transport: MemoryTransport, reason: str) -> None:
    env = environment()
    client = StompClient(CONFIG, env.events.request.fire, transport=transport)
    with pytest.raises(MqError, match=re.escape(reason)):
        client.connect()
    assert not client.connected and client.generation == 0
    assert all(connection.closed for connection in transport.connections)
    [error] = env.stats.errors.values()
    assert error.name == f"connect {ADDRESS}" and reason in str(error.error)


def test_a_connection_closed_before_connected_fails_at_once_not_at_the_timeout() -> None:
    # A broker killed or still starting can accept the TCP connection and close it unanswered.
    env = environment()
    transport = MemoryTransport(connected=None)
    config = ClientConfig(parse_broker_url(ADDRESS), timeout=30)
    client = StompClient(config, env.events.request.fire, transport=transport)
    gevent.spawn(lambda: transport.connection.drop())  # runs once connect() waits for CONNECTED
    with pytest.raises(MqError, match="refused the connection: the connection closed before CONNECTED"):
        client.connect()  # the drop answered it: the timeout says "no CONNECTED frame within 30s"
    assert not client.connected and not client.dropped and client.generation == 0


def test_an_earlier_connections_late_end_leaves_the_current_one_alone() -> None:
    env = environment()
    client, first = connected(env)
    client.abort()
    client.connect()
    first.listener.on_disconnected()  # its reader greenlet ending only now
    assert client.connected and not client.dropped
    assert client.generation == 2


def test_connect_sends_the_client_id_and_reads_the_dialect_from_the_server() -> None:
    transport = MemoryTransport(b"CONNECTED\nversion:1.2\nserver:RabbitMQ/3.13.7\n\n\x00")
    config = ClientConfig(parse_broker_url(ADDRESS), client_id="durable-1", dialect="auto")
    client = StompClient(config, environment().events.request.fire, transport=transport)
    client.connect()
    assert transport.connection.connect_headers == {"client-id": "durable-1"}
    assert (client.server, client.dialect.name) == ("RabbitMQ/3.13.7", "rabbitmq")


def test_a_subscribe_cut_by_the_users_stop_is_an_unconfirmed_failure_and_a_send_is_not() -> None:
    env = environment()
    client, _ = connected(env, ClientConfig(parse_broker_url(ADDRESS), timeout=30))
    waiting = gevent.spawn(client.subscribe, "/topic/t", lambda *_: None, ack="auto", headers={})
    sending = gevent.spawn(client.publish, publisher(client), 1, sync=True)
    gevent.idle()  # both wait for a RECEIPT the broker never sends
    gevent.killall([waiting, sending])  # as Locust stops a User at the end of a run
    failures = {name: entry.num_failures for (name, _), entry in env.stats.entries.items()}
    assert failures.get("subscribe /topic/t") == 1
    assert not failures.get("receipt /queue/a")  # a message's fate is the audit's `unconfirmed`
    [error] = [e for e in env.stats.errors.values() if e.name == "subscribe /topic/t"]
    assert str(error.error) == "unconfirmed: the User stopped before the broker's RECEIPT"
