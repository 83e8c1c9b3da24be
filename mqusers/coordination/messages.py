"""Master <-> worker coordination over Locust's custom messages, and the same logic in one process.

- **Start barrier**: producers wait until the scenario's fixed-count consumers have all subscribed.
- **Open model**: with ``--mq-total-rate`` and/or ``--mq-total-messages``, producers draw blocks of
  global message indexes ``k`` from the conductor (the master, or the local runner). Message ``k``
  is due at ``t0 + k / rate`` whatever the number of producers or workers, and exactly N messages
  are sent in total.
- **Warm-up**: the go carries the master's end of the warm-up; each worker cuts at that instant on
  its own clock (until the go arrives, at its own start + warm-up).
- **Clock offsets**: the master pings each worker and keeps the best estimate
  (:class:`mqusers.coordination.conductor.ClockEstimate`). Workers get every process's offset, so a consumer can
  put a remote producer's send time on its own clock.

The arithmetic of all three is :class:`mqusers.coordination.conductor.Conductor`'s; this module carries it.
"""

from __future__ import annotations

from locust.runners import STATE_RUNNING, STATE_SPAWNING, MasterRunner, WorkerRunner

import itertools
import time
from collections.abc import Callable
from typing import Any, TypedDict

import gevent
from gevent.event import AsyncResult, Event

from mqusers.coordination.conductor import Conductor, Plan

PINGS = 8
#: Settled clocks within this long of the first go to the workers in one broadcast.
OFFSETS_COALESCE_S = 0.2
_GO, _JOINED, _BLOCK, _PING, _PONG, _OFFSETS = (
    f"mqusers_{name}" for name in ("go", "joined", "block", "ping", "pong", "offsets")
)


# The custom messages' data, by name (Locust ships them with msgpack).
class Joined(TypedDict):
    count: int


class Go(TypedDict):
    t0_ns: int
    rate: float
    total: int
    measured_from_ns: int  # the warm-up's end (master clock; 0: none)


class BlockRequest(TypedDict):
    request: int
    first: bool


class BlockReply(TypedDict):
    request: int
    start: int
    count: int


class Ping(TypedDict):
    t1: int  # master clock at send
    round: int


class Pong(Ping):
    t2: int  # worker clock at receive
    t3: int  # worker clock at reply
    tag: str


class Offsets(TypedDict):
    offsets: dict[str, int]


class Follower:
    """A producer process's side: waits for the plan, draws blocks, knows clock offsets."""

    def __init__(self) -> None:
        self.plan: Plan | None = None
        self.go = Event()
        self.offsets: dict[str, int] = {}
        self.own_offset_ns = 0
        #: The master's warm-up end (its clock; 0: none) and who puts it on this process's clock.
        self.measured_from_ns = 0
        self.on_measured_from: Callable[[int], None] = lambda _: None
        self._requests: dict[int, AsyncResult] = {}
        self._ids = itertools.count()

    def start(self, plan: Plan) -> None:
        self.plan = plan
        self.go.set()

    def reset(self) -> None:
        self.plan = None
        self.go.clear()
        self.measured_from_ns = 0

    def measure_from(self) -> None:
        """Every process cuts the warm-up at the master's instant, on its own clock."""
        if self.measured_from_ns:
            self.on_measured_from(self.measured_from_ns + self.own_offset_ns)


class Coordinator:
    """Wires a Conductor and/or Follower to one Environment's runner."""

    def __init__(self, environment: Any, process_tag: str, on_all_sent: Callable[[], None]):
        self.environment = environment
        self.process_tag = process_tag
        #: Called when a --mq-total-messages run has sent everything, before it is stopped.
        self.on_all_sent = on_all_sent
        self.conductor: Conductor | None = None
        #: The master's warm-up end (epoch ns; 0: none), sent to workers with the go.
        self.measured_from_ns = 0
        self.follower = Follower()
        self._offsets_due = False
        runner = environment.runner
        self.distributed = isinstance(runner, (MasterRunner, WorkerRunner))
        if isinstance(runner, MasterRunner):
            for name, handler in ((_JOINED, self._on_joined), (_BLOCK, self._on_block_request),
                                  (_PONG, self._on_pong)):  # fmt: skip
                runner.register_message(name, handler)
        if isinstance(runner, WorkerRunner):
            for name, handler in ((_GO, self._on_go), (_BLOCK, self._on_block), (_PING, self._on_ping),
                                  (_OFFSETS, self._on_offsets)):  # fmt: skip
                runner.register_message(name, handler)

    # -- both sides, per test ----------------------------------------------------------------

    def begin(self, target_consumers: int, rate: float, total: int, producers: int) -> None:
        """At test start on the master or local runner."""
        self.follower.reset()
        per_producer = rate * 0.25 / max(producers, 1) if rate else 1000
        block = int(min(1000, max(1, per_producer)))
        self.conductor = Conductor(target_consumers, rate, total, block)
        runner = self.environment.runner
        if isinstance(runner, MasterRunner):
            for worker in list(runner.clients):
                self._ping(worker)
        elif target_consumers == 0:
            self.follower.start(self.conductor.open())

    def joined(self) -> None:
        """A consumer in this process has subscribed."""
        runner = self.environment.runner
        if isinstance(runner, WorkerRunner):
            runner.send_message(_JOINED, dict(Joined(count=1)))
        elif self.conductor is not None and (plan := self.conductor.join()) is not None:
            self.follower.start(plan)

    def wait_for_plan(self, timeout: float) -> Plan | None:
        self.follower.go.wait(timeout)
        return self.follower.plan

    def next_block(self, timeout: float, first: bool) -> tuple[int, int] | None:
        """The next (start, count) of the shared schedule; None when the master did not answer in time."""
        runner = self.environment.runner
        if not isinstance(runner, WorkerRunner):
            if self.conductor is None:
                return 0, 0
            block = self.conductor.allocate(first)
            self._maybe_finish()
            return block
        request_id = next(self.follower._ids)
        waiter = self.follower._requests[request_id] = AsyncResult()
        runner.send_message(_BLOCK, dict(BlockRequest(request=request_id, first=first)))
        try:
            # wait() returns on timeout; get() would raise gevent.Timeout and end the User's greenlet.
            waiter.wait(timeout)
        finally:
            self.follower._requests.pop(request_id, None)
        if not waiter.successful():
            return None
        start, count = waiter.value
        return int(start), int(count)

    # -- master handlers ---------------------------------------------------------------------

    def _on_joined(self, environment: Any, msg: Any, **_: Any) -> None:
        joined: Joined = msg.data
        if self.conductor is not None and (plan := self.conductor.join(int(joined["count"]))) is not None:
            self._broadcast_go(plan)

    def _broadcast_go(self, plan: Plan) -> None:
        if self._offsets_due:  # the clocks settled so far reach the workers before the first message
            self._broadcast_offsets()
        go = Go(t0_ns=plan.t0_ns, rate=plan.rate, total=plan.total, measured_from_ns=self.measured_from_ns)
        self.environment.runner.send_message(_GO, go)

    def _on_block_request(self, environment: Any, msg: Any, **_: Any) -> None:
        asked: BlockRequest = msg.data
        start, count = self.conductor.allocate(bool(asked["first"])) if self.conductor is not None else (0, 0)
        reply = BlockReply(request=asked["request"], start=start, count=count)
        self.environment.runner.send_message(_BLOCK, reply, client_id=msg.node_id)
        self._maybe_finish()

    def _ping(self, worker: str) -> None:
        self.environment.runner.send_message(_PING, Ping(t1=time.time_ns(), round=0), client_id=worker)

    def _on_pong(self, environment: Any, msg: Any, **_: Any) -> None:
        t4 = time.time_ns()
        pong: Pong = msg.data
        if self.conductor is None:
            return
        self.conductor.record_pong(msg.node_id, pong["t1"], pong["t2"], pong["t3"], t4, pong["tag"])
        if pong["round"] + 1 < PINGS:
            ping = Ping(t1=time.time_ns(), round=pong["round"] + 1)
            self.environment.runner.send_message(_PING, ping, client_id=msg.node_id)
            return
        self.conductor.settled.add(msg.node_id)
        if not self._offsets_due:
            # Workers settle in a burst at the start: one broadcast for the burst, not one per worker (W
            # broadcasts of up to W offsets to W workers would be W³ at the moment heartbeats matter most).
            self._offsets_due = True
            gevent.spawn_later(OFFSETS_COALESCE_S, self._broadcast_offsets)
        if self.conductor.target_consumers == 0 and len(self.conductor.clocks) == len(self.environment.runner.clients):
            self._broadcast_go(self.conductor.open())

    def _broadcast_offsets(self) -> None:
        if not self._offsets_due:
            return  # sent with the go meanwhile
        self._offsets_due = False
        if self.conductor is not None:
            self.environment.runner.send_message(_OFFSETS, Offsets(offsets=self.conductor.offsets_by_tag()))

    def _maybe_finish(self) -> None:
        """With --mq-total-messages: once every producer has sent its share, end the run."""
        conductor = self.conductor
        if conductor is not None and conductor.all_sent and not conductor.finishing:
            conductor.finishing = True
            gevent.spawn(self._finish)

    def _finish(self) -> None:
        # Stopping drains first (mqusers' test_stopping): the run ends once every message is in.
        runner, options = self.environment.runner, self.environment.parsed_options
        if runner.state not in (STATE_RUNNING, STATE_SPAWNING):
            return  # already ending (-t, the web UI's stop)
        self.on_all_sent()
        if options is not None and options.headless:
            runner.quit()
        else:
            runner.stop()

    # -- worker handlers ---------------------------------------------------------------------

    def _on_go(self, environment: Any, msg: Any, **_: Any) -> None:
        go: Go = msg.data
        self.follower.start(Plan(int(go["t0_ns"]), float(go["rate"]), int(go["total"])))
        self.follower.measured_from_ns = int(go.get("measured_from_ns", 0))
        self.follower.measure_from()

    def _on_block(self, environment: Any, msg: Any, **_: Any) -> None:
        reply: BlockReply = msg.data
        waiter = self.follower._requests.get(reply["request"])
        if waiter is not None:
            waiter.set((reply["start"], reply["count"]))

    def _on_ping(self, environment: Any, msg: Any, **_: Any) -> None:
        ping: Ping = msg.data
        received = time.time_ns()
        pong = Pong(t1=ping["t1"], round=ping["round"], t2=received, t3=time.time_ns(), tag=self.process_tag)
        self.environment.runner.send_message(_PONG, pong)

    def _on_offsets(self, environment: Any, msg: Any, **_: Any) -> None:
        offsets: Offsets = msg.data
        self.follower.offsets = {tag: int(offset) for tag, offset in offsets["offsets"].items()}
        self.follower.own_offset_ns = self.follower.offsets.get(self.process_tag, 0)
        self.follower.measure_from()
