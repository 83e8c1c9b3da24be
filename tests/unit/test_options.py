from locust.argument_parser import get_parser

import argparse
from pathlib import Path

import pytest

import mqusers  # noqa: F401  (registers the --mq-* arguments)
from mqusers.options.faultspec import Fault
from mqusers.options.parsing import (
    BrokerAddress,
    OptionError,
    brokers_text,
    parse_broker_url,
    parse_destination,
    parse_frame_size,
    parse_size,
)
from mqusers.options.settings import Settings, class_brokers, class_networks, read_settings
from mqusers.run.context import client_config
from mqusers.sinks.sinkoptions import read_influx_settings
from mqusers.stomp.wire import make_body
from mqusers.webui.webtab import broker_facts


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


def test_the_largest_frame_defaults_to_twice_the_largest_message_and_is_bounded() -> None:
    assert Settings().max_frame == parse_frame_size("128MiB") == 2 * parse_size("64MiB")
    assert parse_frame_size("64KB") == 65536 and parse_frame_size("1024MiB") == 1 << 30
    for text, fragment in [("10KB", "out of range; use 64KB to 1024MiB"), ("1025MiB", "out of range"),
                           ("2GB", "is not a size")]:  # fmt: skip
        with pytest.raises(OptionError, match=f"^--mq-max-frame: '{text}' .*{fragment}"):
            parse_frame_size(text)


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
        ("stomp://[::1:61613", "not a broker address"),
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


@pytest.mark.parametrize(
    "text",
    [
        *("queue/a", "/queue/", "/bogus/a", "/queue/a b", "/queue/a:b", "/topic/a\\b"),
        *("/queue/a\x01b", "/queue/a\x7f", "/queue/a\x9b", "/queue/\x00", "/queue/a\n"),  # control characters
    ],
)
def test_bad_destinations(text: str) -> None:
    with pytest.raises(OptionError, match=r"^--mq-destination: .* is not a STOMP destination; .*control characters"):
        parse_destination(text)


def test_destinations_end_at_rabbitmqs_255_characters() -> None:
    longest = "/queue/" + "x" * 248
    assert parse_destination(longest) == longest
    for text in (longest + "x", "/queue/" + "x" * 20_000):
        with pytest.raises(OptionError) as caught:
            parse_destination(text)
        assert str(caught.value) == (
            f"--mq-destination: {len(text):,} characters is too long; use at most 255 (RabbitMQ's limit)"
        )


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
    assert (settings.vhost, settings.dialect, settings.heartbeats) == ("/", "auto", (10000, 4000))


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--mq-rate", "fast"], "--mq-rate: 'fast' is not a number"),
        (["--mq-rate", "-5"], "--mq-rate: '-5' must be 0, or at least 0.001 and at most 10,000,000 msg/s"),
        (["--mq-rate", "1e-300"], "--mq-rate: '1e-300' must be 0, or at least 0.001 and at most 10,000,000 msg/s"),
        (["--mq-rate", "1e8"], "--mq-rate: '1e8' must be 0, or at least 0.001 and at most 10,000,000 msg/s"),
        (
            ["--mq-total-rate", "1e-300"],
            "--mq-total-rate: '1e-300' must be 0, or at least 0.001 and at most 10,000,000 msg/s",
        ),
        (["--mq-total-rate", "nan"], "--mq-total-rate: 'nan' must be 0, or at least 0.001"),
        (["--mq-total-rate", "inf"], "--mq-total-rate: 'inf' must be 0, or at least 0.001"),
        (["--mq-drain-idle", "1e308"], "--mq-drain-idle: '1e308' must be at least 0 and at most 86,400 seconds"),
        (["--mq-warmup", "1e308"], "--mq-warmup: '1e308' must be at least 0 and at most 86,400 seconds"),
        (["--mq-timeout", "1e308"], "--mq-timeout: '1e308' must be at least 0.001 and at most 3,600 seconds"),
        (
            ["--mq-prefetch", "99999999999999999999"],
            "--mq-prefetch: '99999999999999999999' must be at least 0 and at most 1,000,000",
        ),
        (
            ["--mq-messages", "1000000000001"],
            "--mq-messages: '1000000000001' must be at least 0 and at most 1,000,000,000,000",
        ),
        (
            ["--mq-total-messages", "1" + "0" * 30],
            "--mq-total-messages: '1" + "0" * 30 + "' must be at least 0 and at most 1,000,000,000,000",
        ),
        (["--mq-consumers", "1000001"], "--mq-consumers: '1000001' must be at least 0 and at most 1,000,000"),
        (
            ["--mq-heartbeats", "0,99999999999"],
            "--mq-heartbeats: '99999999999' must be at least 0 and at most 3,600,000 ms",
        ),
        (["--mq-max-p99-ms", "1e308"], "--mq-max-p99-ms: '1e308' must be at least 0 and at most 86,400,000 ms"),
        (["--mq-max-errors", "1e3"], "--mq-max-errors: '1e3' is not a whole number"),
        (["--mq-min-rate", "1e308"], "--mq-min-rate: '1e308' must be at least 0 and at most 10,000,000 msg/s"),
        (["--mq-run-id", "run 1"], "--mq-run-id: 'run 1' is not a run id; use 1 to 64 of A-Z a-z 0-9 . _ -"),
        (["--mq-run-id", "r" * 65], "--mq-run-id: 65 characters is not a run id; use 1 to 64 of A-Z a-z 0-9 . _ -"),
        (["--mq-prefetch", "1.5"], "--mq-prefetch: '1.5' is not a whole number"),
        (["--mq-ack", "sometimes"], "--mq-ack: 'sometimes' is not one of auto, client, client-individual"),
        (["--mq-persistent", "maybe"], "--mq-persistent: 'maybe' is not a boolean"),
        (["--mq-heartbeats", "100"], "--mq-heartbeats: '100' is not SEND_MS,RECEIVE_MS"),
        (["--mq-broker", "kafka"], "--mq-broker: 'kafka' is not one of"),
        (["--mq-timeout", "0"], "--mq-timeout: '0' must be at least 0.001"),
        (["--mq-password-file", "/nonexistent/pw"], "--mq-password-file: cannot read"),
        (["--mq-fault", "30s:true", "--mq-fault", "later:true"], "--mq-fault 'later:true': use TIME:COMMAND"),
    ],
)
def test_bad_option_values(args: list[str], fragment: str) -> None:
    with pytest.raises(OptionError) as caught:
        read_settings(parse(*args), None)
    assert str(caught.value).startswith(fragment)


def test_earlier_names_are_aliases_by_flag_and_env_var_and_never_in_the_web_ui(monkeypatch: pytest.MonkeyPatch) -> None:
    """--mq-broker (the dialect, beside --mq-host, the broker) is --mq-dialect; --mq-drain is --mq-drain-idle."""
    settings = read_settings(parse("--mq-broker", "rabbitmq", "--mq-drain", "2"), "stomp://127.0.0.1:61613")
    assert (settings.dialect, settings.drain) == ("rabbitmq", 2.0)
    settings = read_settings(parse("--mq-dialect", "artemis", "--mq-drain-idle", "3"), "stomp://127.0.0.1:61613")
    assert (settings.dialect, settings.drain) == ("artemis", 3.0)
    monkeypatch.setenv("LOCUST_MQ_BROKER", "activemq")
    assert read_settings(parse(), "stomp://127.0.0.1:61613").dialect == "activemq"
    with pytest.raises(OptionError, match=r"^--mq-dialect 'artemis' and its alias --mq-broker 'activemq' differ"):
        read_settings(parse("--mq-dialect", "artemis"), "stomp://127.0.0.1:61613")
    assert {"mq_dialect", "mq_drain_idle"} <= set(get_parser().args_included_in_web_ui)
    assert not {"mq_broker", "mq_drain"} & set(get_parser().args_included_in_web_ui)


def test_faults_repeat_and_a_worker_leaves_them_to_the_master() -> None:
    args = ("--mq-fault", "30s:kill -STOP 1", "--mq-fault", "1m:true")
    assert read_settings(parse(*args), None).faults == (Fault(30.0, ("kill", "-STOP", "1")), Fault(60.0, ("true",)))
    worker = parse(*args, "--mq-fault", "9s:only-on-the-master")
    worker.worker = True
    assert read_settings(worker, None).faults == ()


def test_password_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    secret = tmp_path / "pw"
    secret.write_text("from-file\n")
    assert read_settings(parse("--mq-password-file", str(secret)), None).password == "from-file"


def test_bounds_are_inclusive() -> None:
    settings = read_settings(
        parse(
            "--mq-rate", "0.001", "--mq-total-rate", "10000000", "--mq-drain-idle", "86400", "--mq-warmup", "0",
            "--mq-timeout", "3600", "--mq-prefetch", "1000000", "--mq-messages", "1000000000000",
            "--mq-heartbeats", "3600000,0", "--mq-run-id", "R" * 64,
        ),
        None,
    )  # fmt: skip
    assert (settings.rate, settings.total_rate, settings.drain, settings.timeout) == (0.001, 1e7, 86400, 3600)
    assert (settings.prefetch, settings.max_messages, settings.heartbeats) == (1_000_000, 10**12, (3_600_000, 0))
    assert settings.run_id == "R" * 64
    assert read_settings(parse("--mq-rate", "0", "--mq-run-id", "ci-42.run_7"), None).run_id == "ci-42.run_7"


@pytest.mark.parametrize(
    "name", ["LOCUST_MQ_RUN_ID", "LOCUST_MQ_DESTINATION", "LOCUST_MQ_USER", "LOCUST_MQ_PASSWORD", "LOCUST_MQ_VHOST"]
)
def test_text_that_is_not_utf8_is_one_line_without_the_value(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(name, "a\udcffb")  # how Python hands over the env bytes b"a\xffb"
    option = "--" + name[len("LOCUST_") :].lower().replace("_", "-")
    with pytest.raises(OptionError) as caught:
        read_settings(parse(), None)
    assert str(caught.value) == f"{option}: the value is not valid UTF-8; use UTF-8 text"


def test_a_host_that_is_not_utf8_is_refused() -> None:
    with pytest.raises(OptionError, match=r"^--host: the value is not valid UTF-8"):
        read_settings(parse(), "stomp://h\udcff:61613")


def test_a_secret_file_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_bytes(b"\xffpw\n")
    with pytest.raises(OptionError, match=r"^--mq-password-file: '.*pw' is not UTF-8 text"):
        read_settings(parse("--mq-password-file", str(secret)), None)


UNWRITABLE = [
    ("{tmp}/missing/report", "no such folder"),
    ("{tmp}", "it names a folder"),
    ("{tmp}/missing/", "it names a folder"),
    ("/proc/sys/mqusers-report", "the folder is not writable"),  # read-only, for root too
    ("/proc/sys/kernel/ostype", "not a writable regular file"),
    ("/dev/null", "not a writable regular file"),
]


@pytest.mark.parametrize(
    "option", ["--mq-report-json", "--mq-report-csv", "--mq-report-html", "--mq-hdr-log", "--influx-line-file"]
)
@pytest.mark.parametrize(("path", "problem"), UNWRITABLE)
def test_unwritable_files_are_refused_at_settings_time(option: str, path: str, problem: str, tmp_path: Path) -> None:
    path = path.format(tmp=tmp_path)
    options = parse(option, path, "--influx-url", "http://127.0.0.1:8086")
    with pytest.raises(OptionError) as caught:
        read_settings(options, None)
        read_influx_settings(options)
    assert str(caught.value) == f"{option}: cannot write {path!r}: {problem}; give a file in a writable folder"


def test_writable_reports_are_checked_without_creating_or_truncating_them(tmp_path: Path) -> None:
    new, old = tmp_path / "new.json", tmp_path / "old.csv"
    old.write_text("earlier run\n")
    settings = read_settings(parse("--mq-report-json", str(new), "--mq-report-csv", str(old)), None)
    assert (settings.report_json, settings.report_csv) == (str(new), str(old))
    assert not new.exists()
    assert old.read_text() == "earlier run\n"


def test_a_worker_leaves_the_reports_to_the_master(tmp_path: Path) -> None:
    path = str(tmp_path / "missing" / "report.json")
    options = parse("--mq-report-json", path)
    options.worker = True
    assert read_settings(options, None).report_json == path


@pytest.mark.parametrize("size", [1, 61, 62, 1000, 64 * 1024 * 1024])  # up to the largest --mq-size
def test_bodies_are_printable_at_every_size(size: int) -> None:
    body = make_body(size)
    assert len(body) == size and body.isalnum()
    if size >= 1000:
        assert len(set(body)) == 62  # every letter and digit is in use


class _Api:
    host = "http://127.0.0.1:8080"


class _Stomp:
    host = "stomp://class-broker:61613"


def test_the_broker_comes_from_mq_host_then_the_stomp_classes_then_a_stomp_host() -> None:
    brokers = class_brokers([_Api, _Stomp, _Stomp, object])
    assert brokers == ("stomp://class-broker:61613",)
    flag = parse("--mq-host", "stomp+ssl://flag-broker:61614")
    assert str(read_settings(flag, "stomp://host-broker:61613", brokers).broker) == "stomp+ssl://flag-broker:61614"
    assert str(read_settings(parse(), "http://127.0.0.1:8080", brokers).broker) == "stomp://class-broker:61613"
    assert str(read_settings(parse(), "stomp://host-broker:61613", ()).broker) == "stomp://host-broker:61613"
    # An http --host is the HttpUsers' when the broker comes from elsewhere, and refused when it does not.
    assert str(read_settings(flag, "http://127.0.0.1:8080", ()).broker) == "stomp+ssl://flag-broker:61614"
    with pytest.raises(OptionError, match=r"^--host: 'http://127.0.0.1:8080' has scheme 'http'"):
        read_settings(parse(), "http://127.0.0.1:8080", ())
    assert read_settings(parse(), None, ()).broker is None


def test_mq_host_is_read_and_masked_like_host() -> None:
    with pytest.raises(OptionError) as caught:
        read_settings(parse("--mq-host", "stomp://admin:hunter2@h:61613"), None)
    assert str(caught.value).startswith("--mq-host: 'stomp://***@h:61613': credentials do not belong in the URL")
    with pytest.raises(OptionError, match=r"^--mq-host: 'http://h:1' has scheme 'http'"):
        read_settings(parse("--mq-host", "http://h:1"), None)
    with pytest.raises(OptionError, match="name 2 brokers; give one with --mq-host"):
        read_settings(parse(), None, ("stomp://a:1", "stomp://b:2"))


def test_the_web_uis_run_table_names_the_producers_broker_and_the_consumers_brokers_apart() -> None:
    alone = read_settings(parse(), "stomp://a:61640")
    assert broker_facts(alone) == [("broker", "stomp://a:61640")]
    spread = read_settings(parse("--mq-consumer-host", "stomp://b:61642 stomp://c:61644"), "stomp://a:61640")
    assert broker_facts(spread) == [("producers' broker", "stomp://a:61640"),
                                    ("consumers at", "stomp://b:61642 and stomp://c:61644")]  # fmt: skip


def test_consumers_connect_to_mq_consumer_host_and_producers_to_the_broker() -> None:
    settings = read_settings(parse("--mq-consumer-host", "stomp://b:61642,stomp://c:61644"), "stomp://a:61640")
    assert str(client_config(settings, role="consumer").address) == "stomp://b:61642,stomp://c:61644"
    assert str(client_config(settings, role="producer").address) == "stomp://a:61640"
    alone = read_settings(parse(), "stomp://a:61640")
    assert alone.consumer_brokers == () and str(client_config(alone, role="consumer").address) == "stomp://a:61640"
    # Several, space-separated: the consumers take them in turn (a failover list is one of them).
    spread = read_settings(parse("--mq-consumer-host", " stomp://b:1,stomp://b2:1  stomp://c:2 "), "stomp://a:61640")
    turns = [str(client_config(spread, role="consumer", turn=turn).address) for turn in range(3)]
    assert turns == ["stomp://b:1,stomp://b2:1", "stomp://c:2", "stomp://b:1,stomp://b2:1"]
    assert str(client_config(spread, role="producer", turn=1).address) == "stomp://a:61640"
    assert brokers_text(spread.consumer_brokers) == "stomp://b:1,stomp://b2:1 and stomp://c:2"
    assert read_settings(parse("--mq-consumer-host", "  "), "stomp://a:61640").consumer_brokers == ()  # as not given
    with pytest.raises(OptionError, match=r"^--mq-consumer-host: 'http://c:2' has scheme 'http'"):
        read_settings(parse("--mq-consumer-host", "stomp://b:1 http://c:2"), "stomp://a:61640")
    with pytest.raises(OptionError, match=r"^--mq-consumer-host: 'stomp://\*\*\*@b:1': credentials do not belong"):
        read_settings(parse("--mq-consumer-host", "stomp://u:p@b:1"), "stomp://a:61640")


def test_mqusers_options_lists_every_option_with_its_env_var_and_never_a_secret_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mqusers.brokers.brokeroptions import OPTIONS as BROKER_OPTIONS
    from mqusers.commands.cli import main, options_help
    from mqusers.options.optionspec import env_var
    from mqusers.options.table import OPTIONS
    from mqusers.sinks.sinkoptions import OPTIONS as INFLUX_OPTIONS

    monkeypatch.setenv("LOCUST_MQ_PASSCODE", "s3cret-passcode")
    text = " ".join(options_help().split())  # argparse wraps long names and env vars across lines
    for option in (*OPTIONS, *BROKER_OPTIONS, *INFLUX_OPTIONS):
        assert option.flag in text
        assert env_var(option.name) in text.replace(" ", "")
    assert "s3cret-passcode" not in text
    assert main(["options"]) == 0


def test_consumer_classes_naming_their_own_broker_put_the_consumers_there() -> None:
    class Producer:
        role, host = "producer", "stomp://a:61640"

    class Consumer:
        role, host = "consumer", "stomp://b:61642"

    class Web:
        host = "https://shop.example"

    assert class_networks([Producer, Consumer, Web]) == (("stomp://a:61640",), ("stomp://b:61642",))
    brokers, consumer_hosts = class_networks([Producer, Consumer])
    settings = read_settings(parse(), None, brokers, consumer_hosts)
    assert (str(settings.broker), [str(b) for b in settings.consumer_brokers]) == (
        "stomp://a:61640", ["stomp://b:61642"])  # fmt: skip
    # --mq-consumer-host wins over the classes'; classes naming one broker name the run's broker, as before.
    given = read_settings(parse("--mq-consumer-host", "stomp://c:1"), None, brokers, consumer_hosts)
    assert [str(b) for b in given.consumer_brokers] == ["stomp://c:1"]
    Consumer.host = Producer.host
    assert class_networks([Producer, Consumer]) == (("stomp://a:61640",), ())
