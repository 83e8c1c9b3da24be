"""The InfluxDB sink's surroundings in unit tests: a store that keeps what it is sent, a run context, an Environment."""

from __future__ import annotations

import locust  # noqa: F401  (gevent first)
from locust.argument_parser import get_parser
from locust.env import Environment
from locust.event import Events

from collections.abc import Callable
from dataclasses import dataclass, field

from gevent.event import Event

from mqusers.brokers.model import BrokerSample
from mqusers.measure.recorder import Recorder
from mqusers.run.context import Shipping
from mqusers.sinks import schema


class Store:
    def __init__(self) -> None:
        self.bodies: list[str] = []
        self.failure: Exception | None = None
        self.took = Event()  # set once a body is taken: what a test waits on instead of sleeping

    def send(self, body: str) -> None:
        if self.failure is not None:
            raise self.failure
        self.bodies.append(body)
        self.took.set()

    @property
    def lines(self) -> list[str]:
        return [line for body in self.bodies for line in body.split("\n")]


@dataclass
class Ctx:
    run_id: str = "run-1"
    shipping: Shipping = field(default_factory=Shipping)
    recorder: Recorder = field(default_factory=lambda: Recorder(lambda **_: None))
    annotations: list[Callable[[str, str, int], None]] = field(default_factory=list)
    broker_listeners: list[Callable[[BrokerSample], None]] = field(default_factory=list)


def environment(runner_kind: str = "local") -> Environment:
    parsed = get_parser(default_config_files=[]).parse_args(["--headless"])
    env = Environment(user_classes=[], events=Events(), parsed_options=parsed, locustfile="pubsub.py")
    if runner_kind == "local":
        env.create_local_runner()
    else:
        env.create_master_runner("127.0.0.1", 0)  # port 0: Locust's server binds a random free port itself
    return env


def parse(points: list[str]) -> list[tuple[str, dict[str, str], dict[str, str], int]]:
    """(measurement, tags, fields, ts) of simple lines (no escaped separators; event text kept whole)."""
    out = []
    for text in points:
        head, rest = text.split(" ", 1)
        body, ts = rest.rsplit(" ", 1)
        name, *tags = head.split(",")
        pairs = [body] if name == schema.EVENTS.name else body.split(",")
        out.append((name, dict(t.split("=", 1) for t in tags), dict(f.split("=", 1) for f in pairs), int(ts)))
    return out
