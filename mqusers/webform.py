"""The ``--mq-*`` fields of the web UI's *Custom parameters*: readable labels, help, the scenario's defaults.

Locust's page labels a field by its argument name, camel-cased and split again before each capital
or digit ("Mq Max P9 9Ms"), and posts the field under that name snake-cased back, which for a name
with digits is not the argument's ("mq_max_p9_9ms": Locust ignores it). So mqusers names each
field by its label, which the page neither splits nor renames, and maps posted labels back to
options (:func:`posted_values`). Pure: no Flask, no Locust runner.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mqusers.options import OPTIONS
from mqusers.optionspec import Option

#: Option name -> (label, the User class attribute an empty value leaves in charge, or "").
#: A label starts with a capital and puts no capital or digit right after a lower-case letter or
#: digit, nor a letter or digit after "_": the page shows and posts such a name unchanged.
FIELDS: dict[str, tuple[str, str]] = {
    "mq-host": ("Broker address", "host"),
    "mq-destination": ("Destination", "destination"),
    "mq-size": ("Message size", "message_size"),
    "mq-persistent": ("Persistent messages", "persistent"),
    "mq-durable": ("Durable subscriptions", "durable"),
    "mq-ack": ("Ack mode", "ack"),
    "mq-prefetch": ("Prefetch per consumer", "prefetch"),
    "mq-receipts": ("Receipts: sync send", "receipts"),
    "mq-rate": ("Rate per producer, msg/s", "rate"),
    "mq-total-rate": ("Total rate, msg/s (shared schedule)", ""),
    "mq-total-messages": ("Total messages", ""),
    "mq-drain": ("Drain idle timeout, s", ""),
    "mq-drain-max": ("Drain at most, s", ""),
    "mq-other-runs": ("Messages of other runs", "other_runs"),
    "mq-messages": ("Messages per producer", "max_messages"),
    "mq-consumers": ("Consumer users", "fixed_count"),
    "mq-user": ("Broker login", ""),
    "mq-heartbeats": ("STOMP heart-beats, ms", ""),
    "mq-vhost": ("Virtual host", ""),
    "mq-broker": ("Broker dialect", ""),
    "mq-reply-to": ("Reply queue", "reply_to"),
    "mq-timeout": ("Timeout, s", ""),
    "mq-request-events": ("Successes to Locust's statistics", ""),
    "mq-warmup": ("Warm-up, s", ""),
    "mq-max-p99-ms": ("Gate: highest receive latency, ms", ""),
    "mq-max-errors": ("Gate: most errors", ""),
    "mq-max-lost": ("Gate: most messages lost", ""),
    "mq-min-rate": ("Gate: lowest receive rate, msg/s", ""),
    "mq-fail-on-saturation": ("Gate: fail on a saturated or contended generator", ""),
}

_BY_DEST = {option.dest: option for option in OPTIONS}
_BY_LABEL = {label: _BY_DEST[name.replace("-", "_")] for name, (label, _) in FIELDS.items()}


def label_of(option: Option) -> str:
    return FIELDS[option.name][0]


def scenario_defaults(user_classes: Iterable[type], attribute: str) -> str:
    """What the User classes set ``attribute`` to, e.g. ``500 (Publisher)`` or ``/topic/x (Subscriber, Publisher)``.

    Read before the first test: Locust overwrites ``host`` and mqusers ``fixed_count`` when one starts.
    """
    classes = [c for c in user_classes if hasattr(c, attribute)]
    if attribute == "fixed_count":
        # Only consumers' counts say how many consumers there are; 0 means "by weight".
        classes = [c for c in classes if getattr(c, "role", "") == "consumer" and getattr(c, "fixed_count", 0)]
    by_value: dict[str, list[str]] = {}
    for user_class in classes:
        by_value.setdefault(_shown(getattr(user_class, attribute)), []).append(user_class.__name__)
    return "; ".join(f"{value} ({', '.join(names)})" for value, names in by_value.items())


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value) if value not in (None, "") else "(none)"


def custom_parameters(extra_options: Mapping[str, Any], user_classes: Iterable[type], host: str) -> dict[str, Any]:
    """Locust's ``extra_options`` with each ``--mq-*`` field keyed by its label and its help completed.

    The help says the flag (as on the command line and in ``locust.conf``), for a field the
    scenario decides what it decides when the field stays empty, then the option's help.
    """
    classes = list(user_classes)
    fields: dict[str, Any] = {}
    for key, field in extra_options.items():
        option = _BY_DEST.get(key)
        if option is None:
            fields[key] = field  # another extension's parameter: as Locust shows it
            continue
        attribute = FIELDS[option.name][1]
        if attribute == "host":
            decided = f"{host} (the Users' host or --host)" if host else ""
        else:
            decided = scenario_defaults(classes, attribute) if attribute else ""
        # The page cuts a long label short: the scenario's value goes before the option's help.
        scenario = f"empty = the scenario's {decided}; " if decided else ""
        fields[label_of(option)] = {**field, "help_text": f"{option.flag}; {scenario}{option.help}"}
    return fields


def posted_values(form: Mapping[str, str]) -> dict[str, str]:
    """``{dest: text}`` of the ``--mq-*`` values in a posted start form, by label or by argument name."""
    values = {key: text for key, text in form.items() if key in _BY_DEST}
    values.update({_BY_LABEL[key].dest: text for key, text in form.items() if key in _BY_LABEL})
    return values
