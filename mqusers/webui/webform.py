"""The ``--mq-*`` fields of the web UI's *Custom parameters*: full labels in groups, help, the scenario's defaults.

Locust's page labels a field by its argument name, camel-cased and split again before each capital
or digit ("Mq Max P9 9Ms"), and posts the field under that name snake-cased back, which for a name
with digits is not the argument's ("mq_max_p9_9ms": Locust ignores it). So mqusers names each
field by its label, which the page neither splits nor renames, and maps posted labels back to
options (:func:`posted_values`). Pure: no Flask, no Locust runner.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mqusers.brokers.brokeroptions import OPTIONS as BROKER_OPTIONS
from mqusers.options.optionspec import Option
from mqusers.options.table import OPTIONS

#: The form's groups, in order; fields are shown group by group.
GROUPS = ("Broker and destination", "Load", "Messages", "Measurement", "Report gates (exit code 3)")
#: Option name -> (label, the User class attribute an empty value leaves in charge, or "", group).
#: A label starts with a capital and puts no capital or digit right after a lower-case letter or
#: digit, nor a letter or digit after "_": the page shows and posts such a name unchanged.
FIELDS: dict[str, tuple[str, str, str]] = {
    "mq-host": ("Broker address", "host", GROUPS[0]),
    "mq-consumer-host": ("Consumers' brokers (a network; several space-separated)", "", GROUPS[0]),
    "mq-destination": ("Destination", "destination", GROUPS[0]),
    "mq-user": ("Broker login", "", GROUPS[0]),
    "mq-vhost": ("Virtual host", "", GROUPS[0]),
    "mq-dialect": ("Broker dialect", "", GROUPS[0]),
    "mq-heartbeats": ("STOMP heart-beats, ms", "", GROUPS[0]),
    "mq-timeout": ("Timeout, s", "", GROUPS[0]),
    "mq-reply-to": ("Reply queue", "reply_to", GROUPS[0]),
    "mq-consumers": ("Consumer users", "fixed_count", GROUPS[1]),
    "mq-rate": ("Rate per producer, msg/s", "rate", GROUPS[1]),
    "mq-random-start": ("Random start within the interval", "random_start", GROUPS[1]),
    "mq-total-rate": ("Total rate, msg/s (shared schedule)", "", GROUPS[1]),
    "mq-profile": ("Rate profile (shared schedule)", "", GROUPS[1]),
    "mq-messages": ("Messages per producer", "max_messages", GROUPS[1]),
    "mq-total-messages": ("Total messages", "", GROUPS[1]),
    "mq-backlog-messages": ("Backlog: build until messages sent", "", GROUPS[1]),
    "mq-backlog-seconds": ("Backlog: build for, s", "", GROUPS[1]),
    "mq-backlog-drain-rate": ("Backlog: drain at most, msg/s", "", GROUPS[1]),
    "mq-per-connection": ("Messages per connection (churn)", "per_connection", GROUPS[1]),
    "mq-churn-pause": ("Pause between connections, s (churn)", "churn_pause", GROUPS[1]),
    "mq-tx-size": ("Messages per transaction", "tx_size", GROUPS[1]),
    "mq-tx-abort-ratio": ("Transactions aborted, share", "tx_abort_ratio", GROUPS[1]),
    "mq-tx-ack": ("Consumer ACKs per transaction", "tx_ack", GROUPS[2]),
    "mq-size": ("Message size", "message_size", GROUPS[2]),
    "mq-size-dist": ("Message sizes drawn from", "", GROUPS[2]),
    "mq-payload": ("Payload", "payload", GROUPS[2]),
    "mq-persistent": ("Persistent messages", "persistent", GROUPS[2]),
    "mq-durable": ("Durable subscriptions", "durable", GROUPS[2]),
    "mq-labels": ("Labels producers stamp (mqlabel)", "labels", GROUPS[2]),
    "mq-select": ("Labels consumers' selectors take", "select", GROUPS[2]),
    "mq-groups": ("Message groups, one per producer up to N", "groups", GROUPS[2]),
    "mq-priorities": ("Priority levels (in a backlog run)", "priorities", GROUPS[2]),
    "mq-ack": ("Ack mode", "ack", GROUPS[2]),
    "mq-nack-ratio": ("Share of messages consumers NACK", "nack_ratio", GROUPS[2]),
    "mq-nack-times": ("NACKs of each chosen message", "nack_times", GROUPS[2]),
    "mq-prefetch": ("Prefetch per consumer", "prefetch", GROUPS[2]),
    "mq-receipts": ("Receipts: sync send", "receipts", GROUPS[2]),
    "mq-in-flight": ("Sends awaiting a receipt, at most", "in_flight", GROUPS[2]),
    "mq-ttl": ("Time-to-live (expiry)", "ttl_ms", GROUPS[2]),
    "mq-warmup": ("Warm-up, s", "", GROUPS[3]),
    "mq-drain-idle": ("Drain idle timeout, s", "", GROUPS[3]),
    "mq-drain-max": ("Drain at most, s", "", GROUPS[3]),
    "mq-other-runs": ("Messages of other runs", "other_runs", GROUPS[3]),
    "mq-request-events": ("Successes to Locust's statistics", "", GROUPS[3]),
    "mq-max-p99-ms": ("Gate: highest receive latency, ms", "", GROUPS[4]),
    "mq-max-errors": ("Gate: most errors", "", GROUPS[4]),
    "mq-max-lost": ("Gate: most messages lost", "", GROUPS[4]),
    "mq-min-rate": ("Gate: lowest receive rate, msg/s", "", GROUPS[4]),
    "mq-fail-on-saturation": ("Gate: fail on a saturated or contended generator", "", GROUPS[4]),
}

_BY_DEST = {option.dest: option for option in OPTIONS}
_BY_LABEL = {label: _BY_DEST[name.replace("-", "_")] for name, (label, _, _) in FIELDS.items()}


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


def _default(option: Option, user_classes: list[type], host: str) -> str:
    """What the field means when left as it is: the option's default, or what the scenario decides."""
    if option.default:
        return f"default {option.default}"
    attribute = FIELDS[option.name][1]
    if attribute == "host":
        decided = f"{host} (the Users' host or --host)" if host else ""
    else:
        decided = scenario_defaults(user_classes, attribute) if attribute else ""
    return f"empty = the scenario's {decided}" if decided else "empty = not set"


def custom_parameters(extra_options: Mapping[str, Any], in_effect: Any) -> dict[str, Any]:
    """Locust's ``extra_options`` with each ``--mq-*`` field keyed by its full label, group by group.

    Each field holds the value in effect (``in_effect``: the parsed options, which a start from the
    page updates), as Locust's own fields show the last test's users and host. The label is shown as
    it is (no help squeezed into it, where the page cut it short): a field's help line, flag and
    default are :func:`field_notes`, shown under it by the page's added script. Other extensions'
    fields follow, as Locust shows them.
    """
    ours = {_BY_DEST[key]: field for key, field in extra_options.items() if key in _BY_DEST}
    fields = {}
    for option, field in sorted(ours.items(), key=lambda item: list(FIELDS).index(item[0].name)):
        value = getattr(in_effect, option.dest, None)
        shown = field["default_value"] if value is None else str(value)
        fields[FIELDS[option.name][0]] = {**field, "default_value": shown, "help_text": ""}
    fields.update({key: field for key, field in extra_options.items() if key not in _BY_DEST})
    return fields


def changed_during_a_run(form: Mapping[str, str], in_effect: Any) -> list[str]:
    """Each posted ``--mq-*`` value a running test does not use, as ``label (in use: value)``.

    An empty field changes nothing (the page's edit form may hold no value where the test has one).
    """
    changed = []
    for dest, text in posted_values(form).items():
        used = str(getattr(in_effect, dest, None) or "")
        if text.strip() and text.strip() != used.strip():
            label = FIELDS[_BY_DEST[dest].name][0]
            changed.append(f"{label} (in use: {used})" if used else f"{label} (in use: the scenario's)")
    return changed


def field_notes(user_classes: Iterable[type], host: str) -> dict[str, dict[str, str]]:
    """Per label: its group, flag, help and default, for the page's help line under each field."""
    classes = list(user_classes)
    options = {name: _BY_DEST[name.replace("-", "_")] for name in FIELDS}
    return {label: {"group": group, "flag": options[name].flag, "help": options[name].help,
                    "default": _default(options[name], classes, host)}
            for name, (label, _, group) in FIELDS.items()}  # fmt: skip


def posted_values(form: Mapping[str, str]) -> dict[str, str]:
    """``{dest: text}`` of the ``--mq-*`` values in a posted start form, by label or by argument name."""
    values = {key: text for key, text in form.items() if key in _BY_DEST}
    values.update({_BY_LABEL[key].dest: text for key, text in form.items() if key in _BY_LABEL})
    return values


def command_line_only(parsed: Any) -> list[tuple[str, str]]:
    """The options the form cannot change (broker metrics, reports, faults...) and their values, never a secret."""
    shown = []
    for option in (*OPTIONS, *BROKER_OPTIONS):
        if option.ui or option.secret:
            continue
        value = getattr(parsed, option.dest, None)
        # A fault's command may hold a secret the report masks: only how many.
        text = f"{len(value)} given" if isinstance(value, list) else str(value or "")
        shown.append((option.flag, text or "not set"))
    return shown
