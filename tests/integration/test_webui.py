"""The web UI: custom parameters, a refused bad value, a real run, and no secret in the page."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.integration.broker_stats import wait_for
from tests.integration.web_ui import serve

pytestmark = pytest.mark.activemq


@pytest.fixture
def web_ui(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    with serve("pubsub.py", tmp_path) as served:
        yield served


def stats(base: str) -> dict[str, int]:
    data = requests.get(base + "/stats/requests", timeout=5).json()
    return {entry["name"]: entry["num_requests"] for entry in data["stats"] if entry["name"] != "Aggregated"}


def test_web_ui_runs_with_its_custom_parameters_and_keeps_secrets(web_ui, destination) -> None:  # type: ignore[no-untyped-def]
    base, log = web_ui
    page = requests.get(base + "/", timeout=5).text
    # Keyed by label (mqusers/webui/webform.py); the browser test reads them as shown.
    assert '"Message size"' in page and '"Destination"' in page and '"Rate per producer, msg/s"' in page
    assert "mqusers-local" not in page

    form = {"user_count": "3", "spawn_rate": "3", "host": "stomp://127.0.0.1:61613"}
    refused = requests.post(base + "/swarm", data={**form, "mq_size": "1XB"}, timeout=5)
    assert refused.ok and not refused.json()["success"] and "'1XB' is not a size" in refused.json()["message"]
    assert wait_for(lambda: "--mq-size: '1XB' is not a size" in Path(log.name).read_text(), timeout=10)
    assert stats(base) == {}

    topic = destination("topic")
    requests.post(base + "/swarm", data={**form, "mq_size": "2KB", "mq_destination": topic}, timeout=5)
    assert wait_for(lambda: stats(base).get(f"receive {topic}", 0) >= 200, timeout=20), stats(base)
    requests.post(base + "/stop", timeout=5)
    data = requests.get(base + "/stats/requests", timeout=5).json()
    receive = next(e for e in data["stats"] if e["name"] == f"receive {topic}")
    assert receive["avg_content_length"] == 2048 and receive["num_failures"] == 0
    assert wait_for(lambda: "mqusers summary" in Path(log.name).read_text(), timeout=10)
    assert "mqusers-local" not in Path(log.name).read_text()


def test_the_web_ui_refuses_a_user_mix_that_cannot_run_the_scenario(web_ui) -> None:  # type: ignore[no-untyped-def]
    base, _ = web_ui
    form = {"spawn_rate": "2", "host": "stomp://127.0.0.1:61613"}
    for users, extra, line in (
        ("1", {}, "-u 1 runs 1 Subscriber, 0 Publisher: no producer would run; use -u 2 or more"),
        ("2", {"mq_consumers": "2"}, "--mq-consumers 2 takes all 2 users (-u); no producer would run"),
    ):
        refused = requests.post(base + "/swarm", data={**form, "user_count": users, **extra}, timeout=5).json()
        assert (refused["success"], refused["message"]) == (False, f"mqusers: {line}")
    assert stats(base) == {}


@pytest.mark.alone  # it burns a core and waits for the word saturated
def test_the_web_ui_says_when_the_generator_is_saturated(tmp_path: Path, destination) -> None:  # type: ignore[no-untyped-def]
    busy = str(Path(__file__).parent / "locustfiles" / "busy.py")
    with serve(busy, tmp_path) as (base, _):
        form = {"user_count": "3", "spawn_rate": "3", "host": "stomp://127.0.0.1:61613"}
        requests.post(base + "/swarm", data={**form, "mq_destination": destination("topic")}, timeout=5)

        def said() -> bool:
            logs = requests.get(base + "/logs", timeout=5).json()["master"]
            return any("latency figures of this period are the generator's" in line for line in logs)

        assert wait_for(said, timeout=20)
        requests.post(base + "/stop", timeout=30)
