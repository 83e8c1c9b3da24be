"""The role split: at least one user of each role from -u 2 on, --mq-consumers exact (0 = none), refusals."""

import pytest

from mqusers.wiring.roles import CONSUMER, PRODUCER, Mix, arrange, produces


def consumer(name: str = "Subscriber", fixed: int = 2, weight: float = 1) -> Mix:
    return Mix(name, CONSUMER, fixed, weight)


def producer(name: str = "Publisher", fixed: int = 0, weight: float = 1) -> Mix:
    return Mix(name, PRODUCER, fixed, weight)


@pytest.mark.parametrize(
    ("fixed", "users", "spawned"),
    [
        (2, 2, {"Subscriber": 1, "Publisher": 1}),  # pubsub.py: Locust alone spawns 2 subscribers
        (2, 4, {"Subscriber": 2, "Publisher": 2}),  # the fixed count as declared once there is room
        (3, 2, {"Subscriber": 1, "Publisher": 1}),  # queue_balance.py below -u 4
        (3, 3, {"Subscriber": 2, "Publisher": 1}),
        (3, 4, {"Subscriber": 3, "Publisher": 1}),  # Locust alone: 4 workers, 0 producers
    ],
)
def test_fixed_consumers_give_way_so_that_one_user_produces(fixed: int, users: int, spawned: dict[str, int]) -> None:
    arrangement = arrange([consumer(fixed=fixed), producer()], users, None)
    assert arrangement.problem is None and arrangement.spawned == spawned


def test_one_user_cannot_be_both_roles_and_is_refused_with_the_count_that_works() -> None:
    assert arrange([consumer(), producer()], 1, None).problem == (
        "-u 1 runs 1 Subscriber, 0 Publisher: no producer would run; use -u 2 or more"
    )


def test_weights_that_leave_no_consumer_are_refused() -> None:
    problem = arrange([consumer("Reader", fixed=0, weight=1), producer(weight=5)], 2, None).problem
    assert problem is not None and problem.startswith("-u 2 runs 0 Reader, 2 Publisher: no consumer would run; use -u ")
    assert problem.endswith(", or --mq-consumers 0 to only produce")


def test_mq_consumers_is_exact_and_zero_means_none() -> None:
    none = arrange([consumer("Responder"), producer("Requester")], 4, 0)
    assert none.problem is None and none.spawned == {"Responder": 0, "Requester": 4}
    # Locust would weigh a fixed_count of 0: the class needs weight 0 as well.
    assert [(m.fixed_count, m.weight) for m in none.mix] == [(0, 0), (0, 1)]
    assert arrange([consumer("Responder"), producer("Requester")], 4, 3).spawned == {"Responder": 3, "Requester": 1}
    shared = arrange([consumer("A"), consumer("B"), producer()], 6, 3)
    assert shared.spawned == {"A": 2, "B": 1, "Publisher": 3}


@pytest.mark.parametrize(
    ("consumers", "problem"),
    [
        (2, "--mq-consumers 2 takes all 2 users (-u); no producer would run"),
        (3, "--mq-consumers 3 is more than the 2 users (-u); no producer would run"),
    ],
)
def test_mq_consumers_not_below_the_users_is_refused(consumers: int, problem: str) -> None:
    assert arrange([consumer(), producer()], 2, consumers).problem == problem


def test_one_role_scenarios_need_nothing_else() -> None:
    assert arrange([consumer("Drainer", fixed=0)], 2, None).spawned == {"Drainer": 2}  # get_only.py
    assert arrange([consumer("Drainer", fixed=0)], 2, 2).problem is None
    assert arrange([consumer("Drainer", fixed=0)], 2, 3).problem == "--mq-consumers 3 is more than the 2 users (-u)"
    assert arrange([producer("Filler")], 1, None).spawned == {"Filler": 1}  # put_only.py
    assert arrange([consumer(), producer()], 1, 0).spawned == {"Subscriber": 0, "Publisher": 1}  # only produce


def test_other_users_take_their_share_and_a_load_shape_decides_the_count() -> None:
    mix = [consumer(), Mix("Browser", None, 0, 1), producer()]
    assert arrange(mix, 3, None).spawned == {"Subscriber": 1, "Browser": 1, "Publisher": 1}
    shaped = arrange(mix, None, 0)
    assert shaped.problem is None and shaped.mix[0].weight == 0


def test_produces_reads_the_classes_this_test_runs() -> None:
    class Publisher:
        role, fixed_count, weight = PRODUCER, 0, 1

    class Subscriber:
        role, fixed_count, weight = CONSUMER, 2, 1

    class Browser:
        fixed_count, weight = 0, 1

    assert produces([Subscriber, Publisher]) and not produces([Subscriber, Browser])
    Publisher.weight = 0
    assert not produces([Subscriber, Publisher])
