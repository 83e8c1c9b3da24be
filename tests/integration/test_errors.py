"""Bad input stops the run before load with one clear line; broker ERROR frames become failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.brokers import Broker, started
from tests.integration.locust_runs import assert_refused_before_load, run_locust


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--mq-size", "1XB"], "--mq-size: '1XB' is not a size"),
        (["--mq-consumers", "3"], "--mq-consumers 3 is more than the 2 users (-u); no producer would run"),
        (["--mq-consumers", "2"], "--mq-consumers 2 takes all 2 users (-u); no producer would run"),
        (["--mq-drain-max", "1e308"], "--mq-drain-max: '1e308' must be at least 0 and at most 86,400"),
        (["--mq-other-runs", "keep"], "--mq-other-runs: 'keep' is not one of apart, fail, receive"),
        (["--mq-rate", "-3"], "--mq-rate: '-3' must be 0, or at least 0.001 and at most 10,000,000 msg/s"),
        (["--mq-destination", "orders"], "--mq-destination: 'orders' is not a STOMP destination"),
        (["--mq-ack", "never"], "--mq-ack: 'never' is not one of auto, client, client-individual"),
        (["--mq-total-rate", "1e-300"], "--mq-total-rate: '1e-300' must be 0, or at least 0.001 and at most 10,000,"),
        (["--mq-rate", "1e-300"], "--mq-rate: '1e-300' must be 0, or at least 0.001 and at most 10,000,000 msg/s"),
        (["--mq-drain", "1e308"], "--mq-drain: '1e308' must be at least 0 and at most 86,400 seconds"),
        (["--mq-warmup", "1e308"], "--mq-warmup: '1e308' must be at least 0 and at most 86,400 seconds"),
        (["--mq-timeout", "1e308"], "--mq-timeout: '1e308' must be at least 0.001 and at most 3,600 seconds"),
        (["--mq-prefetch", "99999999999999999999"], "--mq-prefetch: '99999999999999999999' must be at least 0 and"),
        (["--mq-heartbeats", "1e9,0"], "--mq-heartbeats: '1e9' is not a whole number"),
        (["--mq-heartbeats", "0,99999999999"], "--mq-heartbeats: '99999999999' must be at least 0 and at most 3,600,"),
        (["--mq-destination", "/queue/a\x01b"], "--mq-destination: '/queue/a\\x01b' is not a STOMP destination"),
        (["--mq-destination", "/queue/" + "x" * 20_000], "--mq-destination: 20,007 characters is too long"),
        (["--mq-run-id", "run 1"], "--mq-run-id: 'run 1' is not a run id; use 1 to 64 of A-Z a-z 0-9 . _ -"),
        (["--mq-fault", "5s:true", "--mq-fault", "9s:stop-the-broker"], "--mq-fault '9s:stop-the-broker': "),
        (["--mq-broker-pid", "4194304"], "--mq-broker-pid 4194304: no such process on this host"),
        (["--mq-broker-metrics", "jmx"], "--mq-broker-metrics: 'jmx' is not one of auto, off, activemq, rabbitmq"),
    ],
)
def test_bad_option_values_stop_before_load(args: list[str], fragment: str, tmp_path: Path) -> None:
    run = run_locust("pubsub.py", "stomp://127.0.0.1:61613", *args, tmp_path=tmp_path)
    assert_refused_before_load(run, fragment)


@pytest.mark.parametrize("name", ["LOCUST_MQ_RUN_ID", "LOCUST_MQ_DESTINATION"])
def test_bad_env_bytes_stop_before_load(name: str, tmp_path: Path) -> None:
    env = {name: "mq\udcff"}  # the env bytes b"mq\xff", as Python hands them over
    run = run_locust("pubsub.py", "stomp://127.0.0.1:61613", env=env, tmp_path=tmp_path)
    option = "--" + name[len("LOCUST_") :].lower().replace("_", "-")
    assert_refused_before_load(run, f"{option}: the value is not valid UTF-8; use UTF-8 text")


IN_A_MISSING_FOLDER = "{tmp}/missing/report.json"


@pytest.mark.activemq  # the --influx-* options are read once the broker answered
@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (
            ["--mq-report-json", IN_A_MISSING_FOLDER],
            f"--mq-report-json: cannot write '{IN_A_MISSING_FOLDER}': no such folder",
        ),
        (["--mq-report-json", "{tmp}"], "--mq-report-json: cannot write '{tmp}': it names a folder"),
        (["--mq-report-csv", "/proc/sys/r.csv"], "--mq-report-csv: cannot write '/proc/sys/r.csv': the folder is not"),
        (
            ["--influx-url", "http://127.0.0.1:9", "--influx-line-file", IN_A_MISSING_FOLDER],
            f"--influx-line-file: cannot write '{IN_A_MISSING_FOLDER}': no such folder",
        ),
    ],
)
def test_unwritable_files_stop_before_load(args: list[str], fragment: str, tmp_path: Path) -> None:
    started("activemq")
    run = run_locust("pubsub.py", "stomp://127.0.0.1:61613", *(a.format(tmp=tmp_path) for a in args), tmp_path=tmp_path)
    assert_refused_before_load(run, fragment.format(tmp=tmp_path))


@pytest.mark.parametrize(
    ("host", "fragment"),
    [
        ("http://127.0.0.1:61613", "--host: 'http://127.0.0.1:61613' has scheme 'http'"),
        ("stomp://127.0.0.1:99999", "bad port"),
    ],
)
def test_bad_urls_stop_before_load(host: str, fragment: str, tmp_path: Path) -> None:
    assert_refused_before_load(run_locust("pubsub.py", host, tmp_path=tmp_path), fragment)


SECRET = "hunter2-swordfish"


@pytest.mark.activemq  # the --influx-* options are read once the broker answered
@pytest.mark.parametrize(
    ("host", "args", "fragment"),
    [
        (f"stomp://guest:{SECRET}@127.0.0.1:61613", [], "--host: 'stomp://***@127.0.0.1:61613': credentials do not"),
        (f"http://user:{SECRET}@127.0.0.1:61613", [], "--host: 'http://***@127.0.0.1:61613': credentials do not"),
        (
            f"stomp://127.0.0.1:61613,http://u:{SECRET}@127.0.0.1:1",
            [],
            "--host: 'stomp://***@127.0.0.1:1': credentials",
        ),
        (
            "stomp://127.0.0.1:61613",
            ["--influx-url", f"ftp://u:{SECRET}@127.0.0.1:8086"],
            "--influx-url: 'ftp://***@127.0.0.1:8086': credentials do not belong in the URL; set LOCUST_INFLUX_TOKEN",
        ),
    ],
)
def test_secrets_in_urls_are_masked_and_stop_before_load(
    host: str, args: list[str], fragment: str, tmp_path: Path
) -> None:
    started("activemq")
    run = run_locust("pubsub.py", host, *args, tmp_path=tmp_path)
    assert_refused_before_load(run, fragment)
    assert SECRET not in run.output


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
    assert run.code == 1, run.output[-2000:]
    # RabbitMQ confirms the SUBSCRIBE, then refuses it in an ERROR of its own and closes the connection.
    subscribes = run.operation(f"subscribe {missing}")
    assert subscribes["errors"] >= 2  # one per user at least
    assert f"broker ERROR: not_found: {message}" in run.output
    # Back-off grows (0.25, 0.5, then 1 s, jittered 0.5-1x) because no connection lasted: at most ~10
    # attempts a user in 4 s, where it was ~95 connects a second before there was a back-off.
    connects = run.operation(f"connect {broker.url}")["count"]
    assert 2 <= connects <= 2 * 12, connects
    assert "Traceback" not in run.output
