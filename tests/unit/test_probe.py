"""Network-demand probes: set apart by every receiver, and the wait for one's own bounded."""

import time

import gevent

from mqusers.audit.ledgers import Subscription
from mqusers.stomp.probe import PROBE_EVERY_S, Probe, await_demand
from mqusers.stomp.receiver import Receiver
from mqusers.stomp.wire import probe_frame
from tests.unit.fake_client import CONFIG, connected, deliver, environment, message
from tests.unit.memory_transport import MemoryTransport


def test_a_probe_is_no_ones_message_and_only_its_own_token_counts_as_back() -> None:
    env = environment()
    client, connection = connected(env)
    receiver = Receiver(client, "/topic/t", "client-individual", run_id="run")
    client.route("s", receiver)
    receiver.audit = Subscription("k", "/topic/t", "topic", False)
    probe = receiver.probe = Probe(["/topic/t"])
    others = {b"subscription": b"s", b"ack": b"a1", b"mq-probe": b"someone-else"}
    deliver(connection, (others, b""))
    assert probe.pending == {"/topic/t"} and not probe.reached.is_set()
    mine = {b"subscription": b"s", b"ack": b"a2", b"mq-probe": probe.token}
    headers, body, _ = message(b"stamped", time.time_ns(), ack=b"a3")
    headers.update({b"mq-producer": b"p", b"mq-seq": b"1"})
    deliver(connection, (mine, b""), (headers, body))
    assert probe.reached.is_set() and not probe.pending
    # Neither probe is received, foreign or a failure; the stamped message after them is received as usual.
    assert (receiver.audit.foreign, receiver.audit.other_run, receiver.received) == (0, 0, 1)
    assert not env.stats.errors
    assert b"ACK\nid:a1\n" in b"".join(connection.sent) and b"ACK\nid:a2\n" in b"".join(connection.sent)


def test_the_wait_probes_each_pending_destination_until_its_token_is_back() -> None:
    transport = MemoryTransport()
    probe = Probe(["/topic/a", "/topic/b"])
    gevent.get_hub().loop.update_now()  # the loop's clock is read once an iteration: not since the imports
    gevent.spawn_later(PROBE_EVERY_S * 1.5, probe.back, "/topic/a")
    gevent.spawn_later(PROBE_EVERY_S * 2.5, probe.back, "/topic/b")
    assert await_demand(CONFIG, probe, wait_s=5, transport=transport) is None
    sends = [frame for frame in transport.connection.sent if frame.startswith(b"SEND")]
    joined = b"".join(sends)
    assert probe_frame("/topic/a", probe.token) in joined and probe_frame("/topic/b", probe.token) in joined
    # /topic/a is probed until it is back (twice), /topic/b once more; then the connection is closed.
    assert joined.count(b"destination:/topic/a\n") == 2 and joined.count(b"destination:/topic/b\n") == 3
    assert transport.connection.sent[-1].startswith(b"DISCONNECT")


def test_no_demand_within_the_bound_is_one_line_naming_the_broker_and_the_destination() -> None:
    probe = Probe(["/topic/a"])
    started = time.monotonic()
    why = await_demand(CONFIG, probe, wait_s=0.5, transport=MemoryTransport())
    assert 0.5 <= time.monotonic() - started < 2.5  # the DISCONNECT's receipt is waited for within its timeout
    assert why == (
        "no network demand within 0.5 s: stomp://127.0.0.1:1 passed no probe on to this subscriber of /topic/a"
    )


def test_an_unreachable_producers_broker_is_said_not_raised() -> None:
    why = await_demand(CONFIG, Probe(["/topic/a"]), wait_s=1, transport=MemoryTransport(unreachable="refused"))
    assert why is not None and why.startswith("network demand not probed: stomp://127.0.0.1:1: ")
