"""Each refusal before load, its whole line, from the validator the plugin calls (no locust process).

These lines were checked by spawning locust once per bad value; tests/integration/test_errors.py now
proves once per kind that such a line stops locust before load with exit status 2.
"""

from locust.argument_parser import get_parser

import argparse

import pytest

import mqusers  # noqa: F401  (registers the --mq-* arguments)
from mqusers.options.parsing import OptionError
from mqusers.options.settings import read_settings
from mqusers.sinks.sinkoptions import read_influx_settings
from mqusers.wiring import brokerwatch

SECRET = "hunter2-swordfish"
NO_PID = "4194304"  # above Linux's largest pid (4,194,304 is pid_max's ceiling, never given out)


def parse(*args: str) -> argparse.Namespace:
    return get_parser().parse_args(["-f", "x.py", *args])


def refusal(args: list[str], host: str | None = None) -> str:
    """The line the plugin prints after ``mqusers: `` for these options and host."""
    options = parse(*args)
    with pytest.raises(OptionError) as caught:
        read_settings(options, host)
        read_influx_settings(options)
        brokerwatch.check(options)
    line = str(caught.value)
    assert "\n" not in line and SECRET not in line
    return line


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--mq-size", "1XB"], "--mq-size: '1XB' is not a size; use bytes or a unit, e.g. 100, 646, 1KB, 20KB, 1MiB"),
        (["--mq-drain-max", "1e308"], "--mq-drain-max: '1e308' must be at least 0 and at most 86,400 seconds"),
        (["--mq-other-runs", "keep"], "--mq-other-runs: 'keep' is not one of apart, fail, receive"),
        (["--mq-rate", "-3"], "--mq-rate: '-3' must be 0, or at least 0.001 and at most 10,000,000 msg/s"),
        (["--mq-ack", "never"], "--mq-ack: 'never' is not one of auto, client, client-individual"),
        (["--mq-heartbeats", "1e9,0"], "--mq-heartbeats: '1e9' is not a whole number; use e.g. 10"),
        (["--mq-destination", "orders"], "--mq-destination: 'orders' is not a STOMP destination"),
        # A control character is shown escaped, never written to the terminal as it is.
        (["--mq-destination", "/queue/a\x01b"], "--mq-destination: '/queue/a\\x01b' is not a STOMP destination"),
        (
            ["--mq-destination", "/queue/orders.{9..0}"],
            "--mq-destination: '/queue/orders.{9..0}': the range {9..0} ends before it starts",
        ),
        (
            ["--mq-destination", "/queue/orders.{0..9}.{0..9}"],
            "--mq-destination: '/queue/orders.{0..9}.{0..9}' is not a destination pattern; use one range of whole "
            "numbers, e.g. /queue/orders.{0..9999}",
        ),
        (
            ["--mq-destination", "/queue/orders.{1..1000000}"],
            "--mq-destination: '/queue/orders.{1..1000000}' names 1,000,000 destinations; use at most 100,000",
        ),
        (["--mq-destination", "orders.{0..9}"], "--mq-destination: 'orders.{0..9}' is not a STOMP destination"),
        (
            ["--mq-fault", "5s:true", "--mq-fault", "9s:stop-the-broker"],
            "--mq-fault '9s:stop-the-broker': stop-the-broker: no such executable command (no shell is used)",
        ),
        (["--mq-broker-metrics", "jmx"], "--mq-broker-metrics: 'jmx' is not one of auto, off, activemq, rabbitmq"),
        (
            ["--mq-broker-pid", NO_PID],
            f"--mq-broker-pid {NO_PID}: no such process on this host (the JVM is read locally)",
        ),
        (
            ["--influx-url", f"ftp://u:{SECRET}@127.0.0.1:8086"],
            "--influx-url: 'ftp://***@127.0.0.1:8086': credentials do not belong in the URL; set LOCUST_INFLUX_TOKEN",
        ),
    ],
)
def test_a_bad_value_is_refused_in_one_line(args: list[str], line: str) -> None:
    assert refusal(args).startswith(line)


@pytest.mark.parametrize(
    ("host", "line"),
    [
        ("http://127.0.0.1:61613", "--host: 'http://127.0.0.1:61613' has scheme 'http'; "),
        ("stomp://127.0.0.1:99999", "--host: 'stomp://127.0.0.1:99999' has a bad port; use 1-65535"),
        (f"stomp://guest:{SECRET}@127.0.0.1:61613", "--host: 'stomp://***@127.0.0.1:61613': credentials do not"),
        (f"http://user:{SECRET}@127.0.0.1:61613", "--host: 'http://***@127.0.0.1:61613': credentials do not"),
        (f"stomp://127.0.0.1:61613,http://u:{SECRET}@127.0.0.1:1", "--host: 'stomp://***@127.0.0.1:1': credentials"),
    ],
)
def test_a_bad_broker_address_is_refused_in_one_line_without_its_secret(host: str, line: str) -> None:
    assert refusal([], host).startswith(line)


def test_web_login_is_refused_until_the_locustfile_sets_a_login_up() -> None:
    from flask import Flask
    from flask_login import LoginManager

    from mqusers.wiring.admission import login_problem

    class WebUI:
        def __init__(self, web_login: bool) -> None:
            self.web_login, self.app, self._login_manager = web_login, Flask("x"), LoginManager()

    bare = WebUI(web_login=True)
    assert (login_problem(bare) or "").startswith("--web-login: no login is set up")
    assert login_problem(WebUI(web_login=False)) is None  # no login asked: nothing to set up
    bare.app.secret_key = "s"
    assert login_problem(bare) is not None  # a key without a user loader still fails every login
    bare._login_manager.user_loader(lambda user_id: None)
    assert login_problem(bare) is None
