"""A shared-schedule message: its latency from the schedule is never below its latency from the send.

The producer's wait and due stamp (:func:`~mqusers.users.pacing.until_due`, :func:`~mqusers.users.pacing.due_epoch_ns`)
on fake clocks whose sleeps wake early or late, and the real :class:`~mqusers.stomp.receiver.Receiver`'s
two latencies of the message; no broker.
"""

import zlib
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from mqusers.stomp.receiver import Receiver
from mqusers.users.pacing import due_epoch_ns, until_due


class Clocks:
    """A perf clock (s) and an epoch clock (ns) at the same rate; every read takes ``read_ns``."""

    def __init__(self, perf_ns: int, epoch_offset_ns: int, read_ns: int, wake_errors_ns: list[int]):
        self.perf_ns, self.offset, self.read_ns, self.errors = perf_ns, epoch_offset_ns, read_ns, wake_errors_ns

    def perf(self) -> float:
        self.perf_ns += self.read_ns
        return self.perf_ns / 1e9

    def epoch_ns(self) -> int:
        self.perf_ns += self.read_ns
        return self.perf_ns + self.offset

    def sleep(self, seconds: float) -> None:
        """Wakes ``seconds`` later give or take the next error: early, as gevent's cached loop time does."""
        error = self.errors.pop(0) if self.errors else 1_000
        self.perf_ns += max(0, int(seconds * 1e9) + error)


class Operation:
    def __init__(self) -> None:
        self.micros: list[int] = []

    def record(self, micros: int, size: int, now_ns: int) -> None:
        self.micros.append(micros)


class Client:
    """What a receiver uses of its client: operations by name, nothing closing."""

    closing = False
    behind = False
    #: No warm-up, whatever the epoch: the offsets drawn reach before 1970.
    recorder = SimpleNamespace(measured_from_ns=-(2**63))

    def __init__(self) -> None:
        self.operations: dict[str, Operation] = {}

    def operation(self, name: str) -> Operation:
        return self.operations.setdefault(name, Operation())

    def fire(self, **event: object) -> None:
        raise AssertionError(f"no failure expected: {event}")


@settings(max_examples=400, deadline=None)
@given(
    start_ns=st.integers(0, 10**12),
    ahead_ns=st.integers(-5_000_000, 50_000_000),  # the slot is due this long after the producer asks
    epoch_offset_ns=st.integers(-(10**15), 10**18),
    read_ns=st.integers(0, 2_000),
    wake_errors_ns=st.lists(st.integers(-1_500_000, 1_500_000), max_size=6),
    stamp_after_ns=st.integers(0, 50_000),  # from the due stamp to the send stamp
    transit_ns=st.integers(0, 20_000_000),
)
def test_latency_from_the_schedule_is_never_below_latency_from_the_send(
    start_ns: int, ahead_ns: int, epoch_offset_ns: int, read_ns: int, wake_errors_ns: list[int],
    stamp_after_ns: int, transit_ns: int,
) -> None:  # fmt: skip
    clocks = Clocks(start_ns, epoch_offset_ns, read_ns, wake_errors_ns)
    due = (start_ns + ahead_ns) / 1e9
    late = until_due(due, clocks.perf, clocks.sleep)
    assert late >= 0  # never sent before its due time, however early the loop woke
    due_ns = due_epoch_ns(due, clocks.perf(), clocks.epoch_ns())
    clocks.perf_ns += stamp_after_ns
    sent_ns = clocks.epoch_ns()  # the send stamp publish reads after the wait
    assert sent_ns >= due_ns
    body = b"x" * 10
    headers = {b"mq-run": b"run", b"mq-sent-ns": b"%d" % sent_ns, b"mq-due-ns": b"%d" % due_ns,
               b"mq-size": b"10", b"mq-crc32": b"%d" % zlib.crc32(body)}  # fmt: skip
    client = Client()
    Receiver(client, "/queue/a", "auto", run_id="run")(headers, body, sent_ns + transit_ns)  # type: ignore[arg-type]
    [from_send] = client.operations["receive /queue/a"].micros
    [from_due] = client.operations["receive-due /queue/a"].micros
    assert from_due >= from_send >= 0


def test_an_early_wake_up_sleeps_again_until_due() -> None:
    clocks = Clocks(0, 0, 0, [-900_000, -50_000])  # the loop wakes 0.9 ms, then 50 us, early
    assert until_due(0.002, clocks.perf, clocks.sleep) >= 0
    assert clocks.perf_ns >= 2_000_000 and not clocks.errors  # it slept three times
