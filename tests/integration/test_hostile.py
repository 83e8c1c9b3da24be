"""A broker that misbehaves: each case a failure naming what was wrong, the connection dropped and
retried with back-off, the run ended by -t with its report; never a pass."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.hostile_peer import HostilePeer
from tests.integration.locust_runs import run_locust

#: One producer, one subscriber, a slow rate: the peer's behaviour is the only load.
ARGS = ("--mq-rate", "5")
SECONDS = 3
#: Locust's own start and stop, the drain's idle timeout (5 s) and a DISCONNECT's timeout.
END_WITHIN_S = SECONDS + 25


@pytest.fixture
def peer(request: pytest.FixtureRequest) -> Iterator[HostilePeer]:
    hostile = HostilePeer(request.param)
    yield hostile
    hostile.close()


def run_against(peer: HostilePeer, tmp_path: Path, *args: str) -> tuple[object, float]:
    began = time.monotonic()
    run = run_locust("pubsub.py", peer.url, *ARGS, "--mq-timeout", "1", *args, seconds=SECONDS, tmp_path=tmp_path)
    return run, time.monotonic() - began


@pytest.mark.parametrize(
    ("peer", "what"),
    [
        ("oversized", "MESSAGE frame declares content-length 2,000,000,000, over the 134,217,728-byte limit"),
        ("garbage", "not a STOMP command: '\\\\x16\\\\x03\\\\x01\\\\x02\\\\x00\\\\x01\\\\x00\\\\x01"),
        ("no-nul", "MESSAGE frame of content-length 5 is not followed by its NUL: 'X\\\\n\\\\n' after its body"),
        ("long-header", "MESSAGE frame's headers run past 1,048,576 bytes: 'subscription:mq-sub-1\\\\nx-long:vvv"),
        # A 15 s run against it took 38.9 s and said only "no RECEIPT within 10s".
        ("unended", "MESSAGE frame never ended: 67 bytes of it, then nothing for 1 s (no NUL)"),
    ],
    indirect=["peer"],
)
def test_what_is_not_stomp_is_a_failure_the_connection_retried_and_the_run_ends(
    peer: HostilePeer, what: str, tmp_path: Path
) -> None:
    run, took = run_against(peer, tmp_path)
    assert took < END_WITHIN_S, (took, run.output[-3000:])
    assert run.code != 0, run.output[-3000:]
    # A Locust failure naming the broker (the event's target) and what was wrong, escaped and bounded.
    failure = next((line for line in run.output.splitlines() if "protocol error" in line), "")
    assert f"STOMP error {peer.url}: MqError(" in failure, run.output[-3000:]
    assert f"protocol error, connection dropped: {what}" in failure, failure
    assert len(failure) < 400, failure
    assert run.operation(f"error {peer.url}")["errors"] >= 2
    # Dropped and retried with the User's back-off (0.25 s doubling to 1 s): more than once, not a storm.
    connects = run.operation(f"connect {peer.url}")["count"]
    assert 3 <= connects <= 2 * 12, connects
    assert run.report["ended_by"] == "time", run.report["ended_by"]
    assert "every expected message arrived" not in run.output
    assert "Traceback" not in run.output and "Errno" not in run.output


@pytest.mark.parametrize("peer", ["silent"], indirect=True)
def test_a_subscription_never_confirmed_is_a_failure_and_nothing_is_said_to_have_arrived(
    peer: HostilePeer, tmp_path: Path
) -> None:
    # A RECEIPT timeout longer than the run: the SUBSCRIBE is still waiting when -t stops the Users.
    run = run_locust("pubsub.py", peer.url, *ARGS, "--mq-timeout", "30", seconds=SECONDS, tmp_path=tmp_path)
    assert run.code != 0, run.output[-3000:]
    subscribes = run.operation("subscribe /topic/mqusers.pubsub")
    assert subscribes["errors"] == subscribes["count"] == 1, subscribes
    assert "unconfirmed: the User stopped before the broker's RECEIPT" in run.output
    drain = run.report["drain"]["reason"]
    assert drain == "no subscription was confirmed by the broker: no delivery could be checked", drain
    assert "every expected message arrived" not in run.output
    assert "nothing was expected" not in run.output


@pytest.mark.parametrize(("peer", "window"), [("silent", 1), ("silent", 5)], indirect=["peer"])
def test_a_producer_never_has_more_sends_awaiting_a_receipt_than_its_window(
    peer: HostilePeer, window: int, tmp_path: Path
) -> None:
    """A broker that reads every SEND and confirms none: the peer reads exactly the window's worth, and the
    report says each of them was sent, its outcome unknown (the RECEIPT timeout is longer than the run)."""
    run = run_locust(
        "put_only.py", peer.url, "--mq-receipts", "true", "--mq-in-flight", str(window), "--mq-timeout", "30",
        users=1, seconds=SECONDS, tmp_path=tmp_path,
    )  # fmt: skip
    assert peer.sends == window, run.output[-3000:]
    row = run.row("/queue/mqusers.backlog")
    assert (row["sent"], row["unconfirmed"], row["lost"]) == (window, window, 0), row
