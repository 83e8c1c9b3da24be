"""Each option is declared once: its Option fills one settings field and is what Locust's parser holds."""

from __future__ import annotations

from locust.argument_parser import LocustArgumentParser, get_parser

import dataclasses
from collections import Counter
from typing import Any

import pytest

import mqusers  # noqa: F401  (its init_command_line_parser listener registers the options)
from mqusers.brokers.brokeroptions import OPTIONS as BROKER_OPTIONS
from mqusers.brokers.brokeroptions import BrokerMetricsSettings, read_broker_metrics_settings
from mqusers.options.optionspec import Option, alias_help, env_var
from mqusers.options.settings import Settings, read_settings
from mqusers.options.table import OPTIONS as MQ_OPTIONS
from mqusers.sinks.sinkoptions import OPTIONS as INFLUX_OPTIONS
from mqusers.sinks.sinkoptions import (
    PROMETHEUS_OPTIONS,
    InfluxSettings,
    PrometheusSettings,
    read_influx_settings,
    read_prometheus_settings,
)

DECLARED = [*MQ_OPTIONS, *BROKER_OPTIONS, *INFLUX_OPTIONS, *PROMETHEUS_OPTIONS]
# Every name on the parser that a declaration puts there: the options, their secrets' file options, their aliases.
NAMES = [
    *(option.name for option in DECLARED),
    *(option.file for option in DECLARED if option.file),
    *(option.alias for option in DECLARED if option.alias),
]


@pytest.fixture
def parser(monkeypatch: pytest.MonkeyPatch) -> LocustArgumentParser:
    """Locust's parser as the CLI builds it (the init_command_line_parser hook fired), with no option in env."""
    for name in NAMES:
        monkeypatch.delenv(env_var(name), raising=False)
    return get_parser(default_config_files=[])


def parse(parser: LocustArgumentParser, *args: str) -> Any:
    return parser.parse_args(["-f", "x.py", *args])


@pytest.mark.parametrize(
    ("options", "settings"),
    [
        (MQ_OPTIONS, Settings),
        (BROKER_OPTIONS, BrokerMetricsSettings),
        (INFLUX_OPTIONS, InfluxSettings),
        (PROMETHEUS_OPTIONS, PrometheusSettings),
    ],
    ids=["mq", "broker", "influx", "prometheus"],
)
def test_every_settings_field_is_filled_by_exactly_one_option(options: tuple[Option, ...], settings: type[Any]) -> None:
    filled = Counter(option.field for option in options)
    assert {name for name, count in filled.items() if count > 1} == set()
    assert set(filled) == {f.name for f in dataclasses.fields(settings)}


def test_names_are_unique_and_in_their_own_families() -> None:
    assert len(NAMES) == len(set(NAMES))
    assert all(option.name.startswith("mq-") for option in [*MQ_OPTIONS, *BROKER_OPTIONS])
    assert all(option.name.startswith("influx-") for option in INFLUX_OPTIONS)
    assert all(option.name.startswith("prometheus-") for option in PROMETHEUS_OPTIONS)


@pytest.mark.parametrize("option", DECLARED, ids=lambda option: option.name)
def test_every_option_is_on_locusts_parser_as_declared(parser: LocustArgumentParser, option: Option) -> None:
    action: Any = parser._option_string_actions[option.flag]
    default = None if option.repeat else option.default  # a repeatable option's absence: no list
    assert (action.dest, action.type, action.default, action.help) == (option.dest, str, default, option.help)
    assert action.env_var == "LOCUST_" + option.name.upper().replace("-", "_")
    assert (action.include_in_web_ui, action.is_secret) == (option.ui, option.secret)
    assert (option.dest in parser.args_included_in_web_ui) is option.ui
    if option.file:
        file: Any = parser._option_string_actions["--" + option.file]
        assert (file.help, file.default, file.env_var) == (option.file_help, "", env_var(option.file))
        assert (file.include_in_web_ui, file.is_secret) == (False, False)
    if option.alias:
        alias: Any = parser._option_string_actions["--" + option.alias]
        assert (alias.help, alias.default, alias.env_var) == (alias_help(option), "", env_var(option.alias))
        assert (alias.include_in_web_ui, alias.is_secret) == (False, option.secret)


def test_the_parser_holds_no_option_that_is_not_declared(parser: LocustArgumentParser) -> None:
    ours = {action.dest for action in parser._actions if action.dest.startswith(("mq_", "influx_", "prometheus_"))}
    assert ours == {name.replace("-", "_") for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_every_env_var_reaches_its_option_as_a_string(
    name: str, parser: LocustArgumentParser, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(env_var(name), "from-env")
    repeat = any(option.repeat for option in DECLARED if option.name == name)
    assert getattr(parse(parser), name.replace("-", "_")) == (["from-env"] if repeat else "from-env")


def test_the_declared_defaults_read_as_the_settings_defaults(parser: LocustArgumentParser) -> None:
    assert read_settings(parse(parser), None) == Settings()
    assert read_broker_metrics_settings(parse(parser)) == BrokerMetricsSettings()
    url = "http://127.0.0.1:8086"
    assert read_influx_settings(parse(parser, "--influx-url", url)) == InfluxSettings(url=url)
    assert read_prometheus_settings(parse(parser)) is None
    assert read_prometheus_settings(parse(parser, "--prometheus-port", "9646")) == PrometheusSettings(port=9646)


@pytest.mark.parametrize(
    ("options", "settings"),
    [(MQ_OPTIONS, Settings), (BROKER_OPTIONS, BrokerMetricsSettings), (INFLUX_OPTIONS, InfluxSettings)],
)
def test_secret_fields_stay_out_of_repr(options: tuple[Option, ...], settings: type[Any]) -> None:
    shown = {f.name for f in dataclasses.fields(settings) if f.repr}
    assert {option.field for option in options if option.secret} & shown == set()
