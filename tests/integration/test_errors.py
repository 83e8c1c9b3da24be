"""Bad input stops the run before load with one clear line; broker ERROR frames become failures."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.brokers import Broker, started
from tests.integration.locust_runs import (
    LOCUSTFILES,
    ROOT,
    assert_refused_before_load,
    free_port,
    last_line,
    run_locust,
)

# Each kind of refusal once, through a real locust: a bad value, a secret in a value, a broker out of
# reach. Every line itself is checked in tests/unit/test_refusals.py (and test_options.py,
# test_roles.py); a combination (-u 1 for two roles) in test_roles.py; the web UI's form in test_webui.py.

SECRET = "hunter2-swordfish"


def test_a_bad_value_stops_before_load_with_one_line_and_exit_2(tmp_path: Path) -> None:
    run = run_locust("pubsub.py", "stomp://127.0.0.1:61613", "--mq-size", "1XB", tmp_path=tmp_path)
    assert_refused_before_load(run, "--mq-size: '1XB' is not a size")


def test_a_secret_in_a_refused_value_is_in_no_line_locust_prints(tmp_path: Path) -> None:
    run = run_locust("pubsub.py", f"stomp://guest:{SECRET}@127.0.0.1:61613", tmp_path=tmp_path)
    assert_refused_before_load(run, "--host: 'stomp://***@127.0.0.1:61613': credentials do not")
    assert SECRET not in run.output


def test_a_negative_user_count_stops_before_load(tmp_path: Path) -> None:
    """Locust alone takes -u -1: its traceback twice, its whole -t, exit 3 with nothing sent."""
    run = run_locust("pubsub.py", "stomp://127.0.0.1:61613", "-u", "-1", users=1, seconds=20, tmp_path=tmp_path)
    assert_refused_before_load(run, "-u -1: the number of users is 0 or more")


@pytest.mark.activemq
def test_a_tls_url_to_a_plaintext_port_says_so_within_seconds(tmp_path: Path) -> None:
    """ActiveMQ's plaintext port waits for a CONNECT that never comes: the handshake's silence is named, not a
    bare "handshake operation timed out" after 12.8 s."""
    plain = started("activemq").port
    began = time.monotonic()
    run = run_locust("pubsub.py", f"stomp+ssl://127.0.0.1:{plain}", users=2, tmp_path=tmp_path)
    assert time.monotonic() - began < 15, run.output[-2000:]  # Locust's start, then at most 5 s of silence
    assert_refused_before_load(run, f"TLS: no answer to the handshake within 5 s: is 127.0.0.1:{plain} a plaintext")


def test_web_login_without_a_login_set_up_is_refused_before_the_ui_serves(tmp_path: Path) -> None:
    """Locust alone answers every page with "no secret key was set" and a traceback, then exits 0 on Ctrl-C."""
    command = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILES / "pubsub.py"), "--host",
               "stomp://127.0.0.1:61613", "--web-login", "--web-port", str(free_port())]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output[-2000:]
    assert last_line(output).startswith("mqusers: --web-login: no login is set up"), output[-2000:]
    assert "Traceback" not in output


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


@pytest.mark.parametrize(
    ("missing", "message"),
    [
        ("/exchange/mqusers-no-such-exchange/key", "NOT_FOUND - no exchange 'mqusers-no-such-exchange'"),
        ("/amq/queue/mqusers-no-such-queue", "NOT_FOUND - no queue 'mqusers-no-such-queue'"),
    ],
)
def test_a_refused_subscription_is_a_failure_and_reconnects_back_off(
    missing: str, message: str, tmp_path: Path
) -> None:
    broker = started("rabbitmq")
    run = run_locust("get_only.py", broker.url, "--mq-destination", missing, users=2, seconds=4, tmp_path=tmp_path)
    # Failures (1); a queue's drain of nothing fails a gate too, whose 3 wins (docs/results.md, exit codes). An
    # exchange fans out, as a topic does: subscribers alone there may get nothing by design.
    drained_a_queue = missing.startswith("/amq/queue/")
    assert run.code == (3 if drained_a_queue else 1), run.output[-2000:]
    assert ("gate failed: nothing was received" in run.output) == drained_a_queue, run.output[-2000:]
    # RabbitMQ confirms the SUBSCRIBE, then refuses it in an ERROR of its own and closes the connection.
    subscribes = run.operation(f"subscribe {missing}")
    assert subscribes["errors"] >= 2  # one per user at least
    assert f"broker ERROR: not_found: {message}" in run.output
    # Back-off grows (0.25, 0.5, then 1 s, jittered 0.5-1x) because no connection lasted: at most ~10
    # attempts a user in 4 s, where it was ~95 connects a second before there was a back-off.
    connects = run.operation(f"connect {broker.url}")["count"]
    assert 2 <= connects <= 2 * 12, connects
    assert "Traceback" not in run.output


def test_get_only_on_an_empty_queue_fails_and_says_why(broker: Broker, destination, tmp_path: Path) -> None:
    """A drain of nothing measured nothing: exit 3 naming it, the destination's row with its zeros."""
    queue = destination("queue")
    run = run_locust("get_only.py", broker.url, "--mq-destination", queue, users=2, tmp_path=tmp_path)
    assert run.code == 3, run.output[-2000:]
    assert "gate failed: nothing was received: the run has consumers only" in " ".join(run.output.split())
    assert run.row(queue)["received"] == 0
