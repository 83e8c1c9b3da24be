"""A producer's window of sends awaiting their RECEIPT: never more than its size, each one's outcome once."""

from __future__ import annotations

import gevent

from mqusers.options.parsing import parse_broker_url
from mqusers.stomp.client import ClientConfig, Sent
from mqusers.users.inflight import ReceiptWindow
from tests.unit.fake_client import ADDRESS, connected, environment, publisher

SLOW = ClientConfig(parse_broker_url(ADDRESS), timeout=5.0)


def receipts_asked(frames: list[bytes]) -> list[bytes]:
    return [frame.split(b"\nreceipt:")[1].split(b"\n")[0] for frame in frames]


def test_a_window_of_three_sends_three_then_waits_for_the_oldest() -> None:
    env = environment()
    client, connection = connected(env, SLOW)
    settled: list[tuple[int, Sent]] = []

    def note(seq: int, outcome: Sent) -> None:
        settled.append((seq, outcome))

    window = ReceiptWindow(client, 3)
    sending = gevent.spawn(lambda: [window.send(publisher(client), seq, b"", note) for seq in range(1, 6)])
    gevent.sleep(0.05)
    assert len(connection.sent) == 3 and settled == []  # the third waits for the first's RECEIPT
    first, second, third = receipts_asked(connection.sent)
    connection.feed(b"RECEIPT\nreceipt-id:%s\n\n\x00" % second)  # out of order: the oldest still waits
    gevent.sleep(0.05)
    assert len(connection.sent) == 3 and settled == []
    connection.feed(b"RECEIPT\nreceipt-id:%s\n\n\x00" % first)
    gevent.sleep(0.05)
    # The first and the already-answered second settle: two more go out, and the window is full again.
    assert settled == [(1, Sent.CONFIRMED), (2, Sent.CONFIRMED)] and len(connection.sent) == 5
    assert not sending.ready()
    connection.feed(b"RECEIPT\nreceipt-id:%s\n\n\x00" % third)
    sending.join(1)
    assert sending.successful() and len(window) == 2
    receipts = env.stats.entries[("receipt /queue/a", "STOMP")]
    assert (receipts.num_requests, receipts.num_failures) == (3, 0)


def test_the_rest_settle_within_one_bound_and_an_abandoned_send_is_unconfirmed() -> None:
    env = environment()
    client, connection = connected(env, ClientConfig(parse_broker_url(ADDRESS), timeout=0.2))
    settled: list[tuple[int, Sent]] = []

    def note(seq: int, outcome: Sent) -> None:
        settled.append((seq, outcome))

    window = ReceiptWindow(client, 10)
    for seq in (1, 2, 3):
        window.send(publisher(client), seq, b"", note)
    connection.feed(b"RECEIPT\nreceipt-id:%s\n\n\x00" % receipts_asked(connection.sent)[1])
    started = gevent.get_hub().loop.now()
    window.settle_all(0.2)  # one bound for all: the first waits it out, the others get what has come
    assert gevent.get_hub().loop.now() - started < 0.5
    assert settled == [(1, Sent.UNCONFIRMED), (2, Sent.CONFIRMED), (3, Sent.UNCONFIRMED)]
    window.send(publisher(client), 4, b"", note)
    assert window.abandon_all() == [4] and settled[-1] == (4, Sent.UNCONFIRMED) and len(window) == 0
    connection.feed(b"RECEIPT\nreceipt-id:%s\n\n\x00" % receipts_asked(connection.sent)[3])  # too late: ignored
    assert env.stats.entries[("receipt /queue/a", "STOMP")].num_failures == 2


def test_a_refused_send_is_not_sent_and_a_failed_write_frees_its_place() -> None:
    client, connection = connected(environment(), SLOW)
    settled: list[tuple[int, Sent]] = []

    def note(seq: int, outcome: Sent) -> None:
        settled.append((seq, outcome))

    window = ReceiptWindow(client, 2)
    window.send(publisher(client), 1, b"", note)
    gevent.spawn(lambda: connection.feed(b"ERROR\nreceipt-id:%s\nmessage:queue full\n\n\x00"
                                          % receipts_asked(connection.sent)[0]))  # fmt: skip
    window.send(publisher(client), 2, b"", note)  # the window is full: waits for 1, which the broker refused
    assert settled == [(1, Sent.FAILED)] and len(window) == 1
    connection.drop()
    window.send(publisher(client), 3, b"", note)
    assert settled[-1] == (3, Sent.FAILED) and len(window) == 1  # not written: not in the window
