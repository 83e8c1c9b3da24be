"""A User whose on_start raised never runs its tasks: the summary and the JSON name it (Locust only logs it),
and a consumer among them does not hold the producers at the start barrier."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.brokers import started
from tests.integration.locust_runs import run_locust

pytestmark = pytest.mark.activemq

LOCUSTFILE = Path(__file__).parent / "locustfiles" / "broken_start.py"


def test_a_user_whose_on_start_raised_is_named_in_the_summary(
    destination: Callable[[str], str], tmp_path: Path
) -> None:
    queue = destination("queue")
    run = run_locust(str(LOCUSTFILE), started("activemq").url, "--mq-destination", queue, "--mq-messages", "50",
                     users=3, seconds=3, tmp_path=tmp_path)  # fmt: skip
    failures = run.report.get("start_failures")
    assert failures == [
        {"user": "BrokenConsumer", "error": "RuntimeError: planted: this consumer cannot start", "users": 1}
    ], run.output[-3000:]
    said = "1 BrokenConsumer user(s) never ran: on_start raised RuntimeError: planted: this consumer cannot start"
    assert said in " ".join(run.report["notes"]) and "1 BrokenConsumer user(s) never ran" in run.output
    # The dead consumer does not hold the producer at the start barrier; the working one gets everything.
    row = run.row(queue)
    assert (row["sent"], row["received"], row["lost"]) == (50, 50, 0)
