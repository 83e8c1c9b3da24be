"""A StompClient on a fresh Locust Environment over the in-memory transport, and the deliveries a test feeds it."""

from locust.env import Environment
from locust.event import Events

import time
import zlib

from mqusers.options.parsing import parse_broker_url
from mqusers.stomp.client import ClientConfig, Publisher, StompClient
from mqusers.stomp.wire import SendFrames
from tests.unit.memory_transport import MemoryConnection, MemoryTransport

ADDRESS = "stomp://127.0.0.1:1"
CONFIG = ClientConfig(parse_broker_url(ADDRESS), timeout=0.05)


def environment() -> Environment:
    env = Environment(events=Events())
    env.create_local_runner()  # the runner hooks request events into env.stats
    return env


def connected(env: Environment, config: ClientConfig = CONFIG) -> tuple[StompClient, MemoryConnection]:
    transport = MemoryTransport()
    client = StompClient(config, env.events.request.fire, transport=transport)
    client.connect()
    return client, transport.connection


def publisher(client: StompClient) -> Publisher:
    return client.publisher("/queue/a", SendFrames("/queue/a", b"body", "run", "p", {}))


def message(body: bytes, sent_ns: int, *, crc: int | None = None, ack: bytes | None = None) -> tuple[dict, bytes, int]:
    """A delivery's headers, body and the time it was read (now)."""
    headers = {
        b"mq-run": b"run",
        b"mq-sent-ns": str(sent_ns).encode(),
        b"mq-size": str(len(body)).encode(),
        b"mq-crc32": str(zlib.crc32(body) if crc is None else crc).encode(),
        b"subscription": b"s",
    }
    if ack:
        headers[b"ack"] = ack
    return headers, body, time.time_ns()


def deliver(connection: MemoryConnection, *deliveries: tuple[dict, bytes]) -> float:
    """MESSAGE frames with these headers and bodies, all in one socket read; returns the pause the
    client then asks of its reader."""
    frames = []
    for headers, body in deliveries:
        lines = b"".join(b"%s:%s\n" % item for item in {**headers, b"content-length": b"%d" % len(body)}.items())
        frames.append(b"MESSAGE\n%s\n%s\x00" % (lines, body))
    return connection.feed(b"".join(frames))
