"""The web UI's custom parameters and live rates, against the page's own key transforms and plain sums."""

from __future__ import annotations

import argparse
import re
from collections import Counter
from typing import ClassVar

from mqusers import (
    StompChurnConsumerUser,
    StompChurnProducerUser,
    StompConsumerUser,
    StompProducerUser,
    StompRequesterUser,
    StompTransactionProducerUser,
)
from mqusers.measure.recorder import Batch
from mqusers.measure.series import Series
from mqusers.options.table import OPTIONS
from mqusers.webui.webform import (
    FIELDS,
    GROUPS,
    changed_during_a_run,
    command_line_only,
    custom_parameters,
    field_notes,
    posted_values,
    scenario_defaults,
)
from mqusers.webui.webtab import RATE_WINDOW, recent_rates

T0 = 1_700_000_000


# Locust 2.47's bundled page (webui/dist/assets/src-*.js): templateArgs keys are camel-cased on load,
# a field is labelled by its key spaced before each capital or digit, and posted snake-cased back.
def page_camel(name: str) -> str:
    return re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), name)


def page_label(name: str) -> str:
    spaced = re.sub(r"([a-z0-9])([A-Z0-9])", r"\1 \2", name)
    return spaced[:1].upper() + spaced[1:]


def page_snake(name: str) -> str:
    if name[0] == name[0].upper():
        return name
    return re.sub(r"([a-z0-9])([A-Z0-9])", r"\1_\2", name).lower()


def test_an_argument_name_with_digits_is_garbled_and_posted_under_another_name() -> None:
    # Why mqusers keys its fields by label: the page's own reading of --mq-max-p99-ms.
    assert page_label(page_camel("mq_max_p99_ms")) == "Mq Max P9 9Ms"
    assert page_snake(page_camel("mq_max_p99_ms")) == "mq_max_p9_9ms"


def test_every_web_ui_option_has_a_label_the_page_shows_and_posts_unchanged() -> None:
    assert set(FIELDS) == {option.name for option in OPTIONS if option.ui}
    labels = [label for label, _, _ in FIELDS.values()]
    assert len(set(labels)) == len(labels)
    for label in labels:
        key = page_camel(label)
        assert key == label and page_label(key) == label and page_snake(key) == label, label


def test_the_scenario_attributes_named_exist_on_the_users() -> None:
    classes = (
        StompProducerUser,
        StompConsumerUser,
        StompRequesterUser,
        StompChurnProducerUser,
        StompChurnConsumerUser,
        StompTransactionProducerUser,
    )
    for name, (_, attribute, _) in FIELDS.items():
        if attribute and attribute != "host":
            assert any(hasattr(c, attribute) for c in classes), name


class Subscriber(StompConsumerUser):
    destination = "/topic/t"
    fixed_count = 2


class Publisher(StompProducerUser):
    destination = "/topic/t"
    rate = 500.0
    headers: ClassVar[dict[str, str]] = {}


def test_the_scenario_defaults_name_each_value_and_its_classes() -> None:
    assert scenario_defaults([Subscriber, Publisher], "destination") == "/topic/t (Subscriber, Publisher)"
    assert scenario_defaults([Subscriber, Publisher], "rate") == "500 (Publisher)"
    assert scenario_defaults([Subscriber, Publisher], "persistent") == "false (Publisher)"
    assert scenario_defaults([Subscriber, Publisher], "fixed_count") == "2 (Subscriber)"
    assert scenario_defaults([Publisher], "fixed_count") == ""


def test_custom_parameters_are_keyed_by_full_label_in_group_order_with_the_values_in_effect() -> None:
    locust_fields = {
        "mq_max_p99_ms": {"default_value": "", "help_text": "y", "is_secret": False},
        "mq_rate": {"default_value": "", "help_text": "x", "is_secret": False},
        "mq_destination": {"default_value": "", "help_text": "z", "is_secret": False},
        "other_extension": {"default_value": "1", "help_text": "z"},
    }
    in_effect = argparse.Namespace(mq_rate="250", mq_destination=None, mq_max_p99_ms=None)
    shown = custom_parameters(locust_fields, in_effect)
    # Groups in GROUPS' order (destination, load, ..., gates), then other extensions' fields as they are.
    assert list(shown) == ["Destination", "Rate per producer, msg/s", "Gate: highest receive latency, ms",
                           "other_extension"]  # fmt: skip
    assert shown["Rate per producer, msg/s"]["default_value"] == "250"  # what the last start used
    assert shown["Destination"]["default_value"] == ""
    # Nothing squeezed into the label (the page cut "label (help)" short): the help is a line of its own.
    assert all(shown[label]["help_text"] == "" for label in list(shown)[:3])
    assert shown["other_extension"] == locust_fields["other_extension"]


def test_every_field_has_a_group_a_help_line_and_says_its_default() -> None:
    notes = field_notes([Subscriber, Publisher], "stomp://h:1")
    assert list(dict.fromkeys(note["group"] for note in notes.values())) == list(GROUPS)
    assert len(notes) == 50
    for option in OPTIONS:
        if option.ui:
            note = notes[FIELDS[option.name][0]]
            assert note["flag"] == option.flag and note["help"] == option.help
    assert notes["Rate per producer, msg/s"]["default"] == "empty = the scenario's 500 (Publisher)"
    assert notes["Broker address"]["default"] == "empty = the scenario's stomp://h:1 (the Users' host or --host)"
    assert notes["Drain idle timeout, s"]["default"] == "default 5"
    assert notes["Gate: most errors"]["default"] == "empty = not set"


def test_a_running_test_is_told_which_posted_values_it_does_not_use() -> None:
    in_effect = argparse.Namespace(mq_destination="/topic/a", mq_rate=None, mq_size="1KB")
    form = {"user_count": "4", "Destination": "/topic/b", "Rate per producer, msg/s": "", "Message size": "1KB"}
    assert changed_during_a_run(form, in_effect) == ["Destination (in use: /topic/a)"]
    assert changed_during_a_run({"Rate per producer, msg/s": "9"}, in_effect) == [
        "Rate per producer, msg/s (in use: the scenario's)"
    ]


def test_the_options_only_the_command_line_sets_are_listed_without_secrets() -> None:
    parsed = argparse.Namespace(mq_report_json="/r.json", mq_fault=["5:kill -9 1 --password=x"],
                                mq_broker_metrics="auto", mq_broker_metrics_password="secret")  # fmt: skip
    shown = dict(command_line_only(parsed))
    assert shown["--mq-report-json"] == "/r.json" and shown["--mq-broker-metrics"] == "auto"
    assert shown["--mq-fault"] == "1 given" and shown["--mq-report-html"] == "not set"
    assert "--mq-password" not in shown and "--mq-broker-metrics-password" not in shown
    assert "secret" not in str(shown) and "password=x" not in str(shown)


def test_posted_values_by_label_or_argument_name() -> None:
    form = {"user_count": "3", "Message size": "2KB", "mq_rate": "10", "Gate: highest receive latency, ms": "5"}
    assert posted_values(form) == {"mq_size": "2KB", "mq_rate": "10", "mq_max_p99_ms": "5"}


def sends(series: Series, second: int, count: int) -> None:
    ns = second * 1_000_000_000
    series.add_batches([Batch("send /queue/q", second, Counter({0: count}), count, count, ns, ns)])
    series.add_batches([Batch("receive /queue/q", second, Counter({100: count}), count, count, ns, ns)])


def test_recent_rates_skip_the_first_partial_second_and_the_incomplete_ones() -> None:
    series = Series()
    sends(series, T0, 7)  # the run started late in this second
    for second in range(T0 + 1, T0 + 10):
        sends(series, second, 100 + second - T0)
    # Counts are complete up to one second before now: at T0 + 2.5 only the partial T0 is.
    assert recent_rates(series, "/queue/q", T0 + 2.5, 1.0) is None
    assert recent_rates(series, "/queue/q", T0 + 3.5, 1.0) == (101.0, 101.0)
    # At T0 + 9.5: the last RATE_WINDOW complete seconds before T0 + 8.5, i.e. T0+3 ... T0+7.
    expected = sum(100 + s for s in range(3, 3 + RATE_WINDOW)) / RATE_WINDOW
    assert recent_rates(series, "/queue/q", T0 + 9.5, 1.0) == (expected, expected)
    assert recent_rates(series, "/queue/other", T0 + 9.5, 1.0) is None
