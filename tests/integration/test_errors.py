"""Bad input stops the run before load with one clear line; broker ERROR frames become failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.conftest import BROKERS, Broker, run_locust, started


def last_line(output: str) -> str:
    return output.strip().splitlines()[-1]


def assert_refused_before_load(run, fragment: str) -> None:  # type: ignore[no-untyped-def]
    assert run.code == 2, run.output[-2000:]
    assert fragment in last_line(run.output), run.output[-2000:]
    assert last_line(run.output).startswith("mqusers: ")
    assert "Traceback" not in run.output
    assert "Ramping to" not in run.output  # no User was started
    assert run.report == {}


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--mq-size", "1XB"], "--mq-size: '1XB' is not a size"),
        (["--mq-rate", "-3"], "--mq-rate: '-3' must be at least 0"),
        (["--mq-destination", "orders"], "--mq-destination: 'orders' is not a STOMP destination"),
        (["--mq-ack", "never"], "--mq-ack: 'never' is not one of auto, client, client-individual"),
    ],
)
def test_bad_option_values_stop_before_load(args: list[str], fragment: str, tmp_path: Path) -> None:
    run = run_locust("pubsub.py", "stomp://127.0.0.1:61613", *args, tmp_path=tmp_path)
    assert_refused_before_load(run, fragment)


@pytest.mark.parametrize(
    ("host", "fragment"),
    [
        ("http://127.0.0.1:61613", "--host: 'http://127.0.0.1:61613' has scheme 'http'"),
        ("stomp://127.0.0.1:99999", "bad port"),
        ("stomp://guest:guest@127.0.0.1:61613", "credentials do not belong in the URL"),
    ],
)
def test_bad_urls_stop_before_load(host: str, fragment: str, tmp_path: Path) -> None:
    assert_refused_before_load(run_locust("pubsub.py", host, tmp_path=tmp_path), fragment)
    assert "guest:guest" not in run_locust("pubsub.py", host, tmp_path=tmp_path).output or "@" not in host


def test_unreachable_broker_stops_before_load(tmp_path: Path) -> None:
    run = run_locust("pubsub.py", "stomp://127.0.0.1:1", tmp_path=tmp_path)
    assert_refused_before_load(run, "cannot reach the broker at stomp://127.0.0.1:1")


def test_failover_list_skips_a_dead_host(broker: Broker, destination, tmp_path: Path) -> None:
    queue = destination("queue")
    run = run_locust(
        "put_get.py", f"stomp://127.0.0.1:1,{broker.url}", "--mq-destination", queue, "--mq-messages", "50",
        users=3, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-2000:]
    assert run.row(queue)["received"] == 50
    assert run.operation("connect stomp://127.0.0.1:1," + broker.url)["errors"] == 0


@pytest.fixture(params=["activemq", "rabbitmq"])
def secured(request: pytest.FixtureRequest) -> tuple[Broker, str]:
    """A broker with a known account: (broker, its user)."""
    request.applymarker(getattr(pytest.mark, request.param))
    return started(request.param), {"activemq": "mqusers", "rabbitmq": "guest"}[request.param]


def test_wrong_password_is_one_line_and_never_echoed(secured: tuple[Broker, str], tmp_path: Path) -> None:
    broker, user = secured
    env = {"LOCUST_MQ_USER": user, "LOCUST_MQ_PASSWORD": "wrong-horse-battery"}
    run = run_locust("pubsub.py", broker.url, env=env, tmp_path=tmp_path)
    assert_refused_before_load(run, f"broker at {broker.url} refused the connection")
    assert "wrong-horse-battery" not in run.output


def test_error_frame_during_the_run_is_a_failure_with_the_brokers_message(destination, tmp_path: Path) -> None:
    broker = started("rabbitmq")
    missing = "/exchange/mqusers-no-such-exchange/key"
    run = run_locust("get_only.py", broker.url, "--mq-destination", missing, users=1, seconds=2, tmp_path=tmp_path)
    assert run.code == 1, run.output[-2000:]
    # RabbitMQ confirms the SUBSCRIBE, then reports the missing exchange in an ERROR of its own.
    errors = run.operation(f"error {broker.url}")
    assert errors["errors"] == errors["count"] >= 1
    assert "broker ERROR: not_found: NOT_FOUND - no exchange 'mqusers-no-such-exchange'" in run.output
    assert "Traceback" not in run.output


assert set(BROKERS) >= {"activemq", "rabbitmq"}
