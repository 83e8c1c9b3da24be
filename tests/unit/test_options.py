from locust.argument_parser import get_parser

import argparse

import pytest

import mqusers  # noqa: F401  (registers the --mq-* arguments)
from mqusers.options import BrokerAddress, OptionError, parse_broker_url, parse_destination, parse_size, read_settings
from mqusers.wire import make_body


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("100", 100),
        ("646", 646),
        ("1KB", 1024),
        ("10KB", 10240),
        ("20KB", 20480),
        ("1k", 1024),
        ("1KiB", 1024),
        ("1MiB", 1048576),
        ("2MB", 2097152),
        (" 64 ", 64),
        ("1.5KB", 1536),
    ],
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "abc", "1XB", "-1", "0", "1GB", "65MiB", "1KBB"])
def test_bad_sizes_name_the_option_and_the_form(text: str) -> None:
    with pytest.raises(OptionError) as caught:
        parse_size(text)
    message = str(caught.value)
    assert message.startswith("--mq-size: ")
    assert "\n" not in message
    assert "1KB" in message or "range" in message


def test_broker_urls() -> None:
    assert parse_broker_url("stomp://127.0.0.1:61613") == BrokerAddress((("127.0.0.1", 61613),), ssl=False)
    assert parse_broker_url("stomp+ssl://mq.example:61614").ssl
    failover = parse_broker_url("stomp://a:1,stomp://b:2, c:3")
    assert failover.hosts == (("a", 1), ("b", 2), ("c", 3))
    assert str(failover) == "stomp://a:1,stomp://b:2,stomp://c:3"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("http://h:1", "scheme 'http'"),
        ("stomp://h", "no port"),
        ("stomp://h:99999", "bad port"),
        ("stomp://h:abc", "bad port"),
        ("stomp://user:pw@h:1", "credentials do not belong"),
        ("stomp://h:1/path", "not a broker address"),
        ("stomp://h:1,stomp+ssl://g:2", "mixes"),
    ],
)
def test_bad_broker_urls(text: str, fragment: str) -> None:
    with pytest.raises(OptionError, match=fragment):
        parse_broker_url(text)


def test_credentials_never_echoed() -> None:
    with pytest.raises(OptionError) as caught:
        parse_broker_url("stomp://admin:hunter2@h:1")
    assert "hunter2" not in str(caught.value)


@pytest.mark.parametrize("text", ["/queue/a", "/topic/a.b", "/exchange/amq.topic/k.*", "/amq/queue/q", "/temp-queue/x"])
def test_destinations(text: str) -> None:
    assert parse_destination(text) == text


@pytest.mark.parametrize("text", ["queue/a", "/queue/", "/bogus/a", "/queue/a b", "/queue/a:b", "/topic/a\\b"])
def test_bad_destinations(text: str) -> None:
    with pytest.raises(OptionError, match=r"^--mq-destination: "):
        parse_destination(text)


def parse(*args: str) -> argparse.Namespace:
    return get_parser().parse_args(["-f", "x.py", *args])


def test_options_reach_locusts_parser_with_env_vars_and_a_secret_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCUST_MQ_PASSWORD", "s3cret")
    monkeypatch.setenv("LOCUST_MQ_SIZE", "20KB")
    options = parse("--mq-rate", "250", "--mq-ack", "client", "--mq-durable", "yes")
    settings = read_settings(options, "stomp://127.0.0.1:61613")
    assert (settings.size, settings.rate, settings.ack, settings.durable) == (20480, 250.0, "client", True)
    assert settings.password == "s3cret"
    assert "s3cret" not in repr(settings)
    parser = get_parser()
    password = next(a for a in parser._actions if a.dest == "mq_password")
    assert password.is_secret and not password.include_in_web_ui
    assert "mq_size" in parser.args_included_in_web_ui


def test_empty_options_leave_the_scenario_in_charge() -> None:
    settings = read_settings(parse(), None)
    assert (settings.destination, settings.size, settings.persistent, settings.rate) == (None, None, None, None)
    assert (settings.vhost, settings.dialect, settings.heartbeats) == ("/", "auto", (0, 0))


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--mq-rate", "fast"], "--mq-rate: 'fast' is not a number"),
        (["--mq-rate", "-5"], "--mq-rate: '-5' must be at least 0"),
        (["--mq-prefetch", "1.5"], "--mq-prefetch: '1.5' is not a whole number"),
        (["--mq-ack", "sometimes"], "--mq-ack: 'sometimes' is not one of auto, client, client-individual"),
        (["--mq-persistent", "maybe"], "--mq-persistent: 'maybe' is not a boolean"),
        (["--mq-heartbeats", "100"], "--mq-heartbeats: '100' is not SEND_MS,RECEIVE_MS"),
        (["--mq-broker", "kafka"], "--mq-broker: 'kafka' is not one of"),
        (["--mq-timeout", "0"], "--mq-timeout: '0' must be at least"),
        (["--mq-password-file", "/nonexistent/pw"], "--mq-password-file: cannot read"),
    ],
)
def test_bad_option_values(args: list[str], fragment: str) -> None:
    with pytest.raises(OptionError) as caught:
        read_settings(parse(*args), None)
    assert str(caught.value).startswith(fragment)


def test_password_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    secret = tmp_path / "pw"
    secret.write_text("from-file\n")
    assert read_settings(parse("--mq-password-file", str(secret)), None).password == "from-file"


@pytest.mark.parametrize("size", [1, 61, 62, 1000, 64 * 1024 * 1024])  # up to the largest --mq-size
def test_bodies_are_printable_at_every_size(size: int) -> None:
    body = make_body(size)
    assert len(body) == size and body.isalnum()
    if size >= 1000:
        assert len(set(body)) == 62  # every letter and digit is in use
