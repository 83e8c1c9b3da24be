"""Three brokers of a network (services/network.py) or cluster (services/artemis_cluster.py) for a test module:
started side by side, joined (a message sent to the first reaches a consumer on each other), stopped after."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import services
from tests.integration import broker_stats as bs
from tests.integration.reference_client import Inbox, connect


def url(name: str) -> str:
    return f"stomp://127.0.0.1:{services.ports(name)['stomp']}"


def joined(source: str, to: str, timeout: float) -> bool:
    """Probes sent to ``source`` on a queue of their own, one each half second, until one reaches a consumer on
    ``to``: the link (a network connector, a cluster connection) is up and forwards on demand."""
    queue = f"/queue/joined.{uuid.uuid4().hex[:6]}"
    inbox = Inbox()
    consumer = connect(services.ports(to)["stomp"], inbox)
    producer = connect(services.ports(source)["stomp"], Inbox())
    consumer.subscribe(queue, id="1", ack="auto")

    def arrived() -> bool:
        producer.send(queue, "probe")
        return len(inbox) > 0

    try:
        return bs.wait_for(arrived, timeout, interval=0.5)
    finally:
        producer.disconnect()
        consumer.disconnect()


def start_joined(names: Sequence[str], timeout: float) -> list[str]:
    """``names`` started side by side (their JVMs start in parallel, each start waiting for its own readiness), then
    the first joined to each other within ``timeout`` s; the names this call started, for :func:`stop_all`."""
    with ThreadPoolExecutor(len(names)) as pool:
        starts = {name: pool.submit(services.start, name) for name in names}
    started = [name for name, start in starts.items() if start.exception() is None and start.result()]
    try:
        for start in starts.values():
            start.result()  # a start that failed fails the module, once every started one is known
        for to in names[1:]:
            assert joined(names[0], to, timeout), f"no route from {names[0]} to {to} in {timeout:g} s"
    except BaseException:
        stop_all(started)
        raise
    return started


def stop_all(names: Sequence[str]) -> None:
    for name in reversed(names):
        with contextlib.suppress(services.ServiceError):
            services.stop(name)


@contextlib.contextmanager
def running(names: Sequence[str], timeout: float) -> Iterator[None]:
    """A module fixture's body: ``names`` started and joined, stopped at the end (those it started)."""
    started = start_joined(names, timeout)
    try:
        yield
    finally:
        stop_all(started)
