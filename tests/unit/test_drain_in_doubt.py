"""A drain never ends while a producer awaits a RECEIPT: that send is in no ledger yet, its message may still come."""

from __future__ import annotations

from locust.env import Environment

from types import SimpleNamespace
from typing import Any

from mqusers.audit.audit import Audit
from mqusers.options.parsing import parse_broker_url
from mqusers.run.ending import NOTHING_SENT
from mqusers.stomp.client import ClientConfig, Sent
from mqusers.wiring import lifecycle
from tests.unit.fake_client import ADDRESS, connected, environment, publisher

SLOW = ClientConfig(parse_broker_url(ADDRESS), timeout=5.0)


def arrived(env: Environment, producers: list[tuple[str, Any]]) -> str | None:
    ctx = SimpleNamespace(backlog=None, producers=producers, audit=Audit(), clock_offsets=dict)
    return lifecycle.all_arrived(env, ctx)  # type: ignore[arg-type]


def test_the_drain_waits_while_a_send_awaits_its_receipt_and_not_after() -> None:
    env = environment()
    client, connection = connected(env, SLOW)
    producers = [("/queue/a", client)]
    assert not client.awaiting and arrived(env, producers) == NOTHING_SENT
    awaited = client.publish_receipted(publisher(client), 1)
    assert awaited is not None and client.awaiting
    assert arrived(env, producers) is None  # the audit says nothing is missing; the send in doubt says wait
    connection.feed(b"RECEIPT\nreceipt-id:%s\n\n\x00" % awaited.receipt)
    assert client.settle(awaited) is Sent.CONFIRMED
    assert not client.awaiting and arrived(env, producers) == NOTHING_SENT


def test_a_receipt_that_never_comes_holds_the_drain_only_until_its_bound() -> None:
    env = environment()
    client, _ = connected(env, ClientConfig(parse_broker_url(ADDRESS), timeout=0.05))
    awaited = client.publish_receipted(publisher(client), 1)
    assert awaited is not None and arrived(env, [("/queue/a", client)]) is None
    assert client.settle(awaited) is Sent.UNCONFIRMED  # --mq-timeout passed: the send is in the ledger, in doubt
    assert arrived(env, [("/queue/a", client)]) == NOTHING_SENT
