"""The role split: how a test's users divide into producers and consumers, and mixes refused before load.

A STOMP User class has a ``role`` (``producer`` for producers and requesters, ``consumer`` for
consumers and responders); other Users (an ``HttpUser``) have none. Locust spawns fixed-count
classes first, then the weighted ones by weight, so a scenario's fixed-count consumers could take
every user. For each test (:func:`arrange`, from each class's declared ``fixed_count`` and
``weight``):

1. ``--mq-consumers N`` is the number of consumer users, shared by the consumer classes; 0 means
   none (a class left with none gets weight 0 too: Locust would weigh a ``fixed_count`` of 0).
   With producers in the mix N must be below ``-u``; without, at most ``-u``.
2. Otherwise, when the mix has both roles and ``-u`` is at least 2, one role's fixed counts give way
   until the other has a user: ``queue_balance.py`` (3 fixed workers) at ``-u 2`` runs 1 worker
   and 1 producer.
3. A mix that still leaves a role of the scenario without a user (``pubsub.py`` at ``-u 1``) is
   refused with one line. A mix of one role (``put_only.py``, ``get_only.py``) needs nothing else.

The counts are Locust's own: its dispatcher is asked (:func:`spawned`), on stand-in classes.
"""

from __future__ import annotations

from locust.dispatch import UsersDispatcher
from locust.runners import WorkerNode

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

PRODUCER, CONSUMER = "producer", "consumer"
ROLES = (PRODUCER, CONSUMER)
#: How far above ``-u`` a refusal looks for the first user count that would run.
_HINT_SEARCH = 64


@dataclass(frozen=True)
class Mix:
    """One User class as the split sees it."""

    name: str
    role: str | None
    fixed_count: int
    weight: float


@dataclass(frozen=True)
class Arrangement:
    """The classes' counts for this test, what Locust spawns with them, and why it may not start."""

    mix: list[Mix]
    #: Users per class for the test's ``-u`` (empty when the user count is not known).
    spawned: dict[str, int]
    problem: str | None

    def count(self, role: str) -> int:
        return sum(self.spawned.get(m.name, 0) for m in self.mix if m.role == role)


def role_of(user_class: type) -> str | None:
    role = getattr(user_class, "role", None)
    return role if role in ROLES else None


def spawned(mix: Sequence[Mix], users: int) -> dict[str, int]:
    """Users per class Locust spawns for ``users`` (its dispatcher, one worker, one step)."""
    if not mix or users <= 0:
        return {m.name: 0 for m in mix}
    stand_ins = [type(m.name, (), {"fixed_count": m.fixed_count, "weight": m.weight}) for m in mix]
    dispatcher = UsersDispatcher([WorkerNode("split")], stand_ins)
    dispatcher.new_dispatch(users, users)
    return dict(next(dispatcher)["split"])


def arrange(mix: Sequence[Mix], users: int | None, consumers: int | None) -> Arrangement:
    """The mix this test runs (see the module docs); ``users`` None: not known (a load shape)."""
    arrangement, missing = _split(list(mix), users, consumers)
    if missing is None or users is None:
        return arrangement
    return replace(arrangement, problem=_refusal(list(mix), users, consumers, arrangement.spawned, missing))


def _split(declared: list[Mix], users: int | None, consumers: int | None) -> tuple[Arrangement, str | None]:
    """The arrangement, and the role left without a user (its refusal line still to write)."""
    mix = _share_consumers(declared, consumers) if consumers is not None else declared
    roles = [r for r in ROLES if any(m.role == r and (m.fixed_count or m.weight) for m in mix)]
    if users is None or users <= 0:
        return Arrangement(mix, {}, None), None
    if consumers is not None:
        if consumers > users:
            more = "; no producer would run" if PRODUCER in roles else ""
            return Arrangement(mix, {}, f"--mq-consumers {consumers} is more than the {users} users (-u){more}"), None
        if consumers == users and PRODUCER in roles:
            problem = f"--mq-consumers {consumers} takes all {users} users (-u); no producer would run"
            return Arrangement(mix, {}, problem), None
    elif len(roles) == 2 and users >= len(roles):
        for short in ROLES:
            mix = _give_way(mix, users, short)
    arrangement = Arrangement(mix, spawned(mix, users), None)
    return arrangement, next((r for r in roles if not arrangement.count(r)), None)


def _share_consumers(mix: list[Mix], consumers: int) -> list[Mix]:
    """``consumers`` users over the consumer classes, the first ones taking the remainder."""
    classes = [m for m in mix if m.role == CONSUMER]
    if not classes:
        return mix
    each, extra = divmod(consumers, len(classes))
    shares = {m.name: each + (i < extra) for i, m in enumerate(classes)}
    return [_fixed(m, shares[m.name]) if m.name in shares else m for m in mix]


def _fixed(m: Mix, count: int) -> Mix:
    # A fixed_count of 0 makes a Locust class weighted: none at all needs weight 0 as well.
    return replace(m, fixed_count=count, weight=m.weight if count else 0)


def _give_way(mix: list[Mix], users: int, short: str) -> list[Mix]:
    """The other role's fixed counts, lowered (largest first) until ``short`` gets a user."""
    while not _role_count(mix, users, short):
        other = [m for m in mix if m.role not in (short, None) and m.fixed_count]
        if not other:
            return mix
        largest = max(other, key=lambda m: m.fixed_count)
        total = sum(m.fixed_count for m in mix if m.fixed_count)
        # Straight to what leaves one user free, then one at a time (weights may still say no).
        step = max(1, min(largest.fixed_count, total - (users - 1)))
        mix = [_fixed(m, m.fixed_count - step) if m is largest else m for m in mix]
    return mix


def _role_count(mix: Sequence[Mix], users: int, role: str) -> int:
    counts = spawned(mix, users)
    return sum(counts.get(m.name, 0) for m in mix if m.role == role)


def _refusal(declared: list[Mix], users: int, consumers: int | None, counts: dict[str, int], role: str) -> str:
    split = ", ".join(f"{counts.get(m.name, 0)} {m.name}" for m in declared if m.role)
    line = f"-u {users} runs {split}: no {role} would run"
    runs = (n for n in range(users + 1, users + _HINT_SEARCH) if _runs(declared, n, consumers))
    enough = next(runs, None)
    more = f"use -u {enough} or more" if enough else "use more users (-u)"
    if role == CONSUMER:
        return f"{line}; {more}, or --mq-consumers 0 to only produce"
    return f"{line}; {more}" + (", or fewer --mq-consumers" if consumers else "")


def _runs(declared: list[Mix], users: int, consumers: int | None) -> bool:
    arrangement, missing = _split(declared, users, consumers)
    return arrangement.problem is None and missing is None


def mix_of(user_classes: Sequence[type], declared: dict[type, tuple[int, float]]) -> list[Mix]:
    """The classes as declared (their values before any test changed them, remembered in ``declared``)."""
    for user_class in user_classes:
        declared.setdefault(user_class, (getattr(user_class, "fixed_count", 0), getattr(user_class, "weight", 1)))
    return [Mix(c.__name__, role_of(c), *declared[c]) for c in user_classes]


def apply(user_classes: Sequence[Any], arrangement: Arrangement) -> None:
    """Set the classes' ``fixed_count`` and ``weight`` for this test (before Locust dispatches)."""
    by_name = {m.name: m for m in arrangement.mix}
    for user_class in user_classes:
        m = by_name[user_class.__name__]
        user_class.fixed_count, user_class.weight = m.fixed_count, m.weight


def produces(user_classes: Sequence[Any]) -> bool:
    """Whether this test's classes include producers that can run (not only consumers or other Users)."""
    return any(role_of(c) == PRODUCER and (c.fixed_count or c.weight) for c in user_classes)


def consumes(user_classes: Sequence[Any]) -> bool:
    """Whether this test's classes include consumers that can run."""
    return any(role_of(c) == CONSUMER and (c.fixed_count or c.weight) for c in user_classes)
