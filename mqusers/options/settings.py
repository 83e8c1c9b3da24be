"""The frozen settings a test runs with: every ``--mq-*`` option's value, validated once per test.

:data:`~mqusers.options.table.OPTIONS` declares the options; :func:`read_settings` reads them into
:class:`Settings` and picks the broker (``--mq-host``, the User classes' ``host``, or ``--host``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mqusers.options.faultspec import Fault
from mqusers.options.optionspec import read
from mqusers.options.parsing import MAX_FRAME_DEFAULT, BrokerAddress, OptionError, is_broker_url, parse_broker_url
from mqusers.options.paths import check_client_certificate
from mqusers.options.payloadspec import PayloadSpec
from mqusers.options.profile import RateProfile
from mqusers.options.selectors import check as check_selection
from mqusers.options.sizedist import SizeDist
from mqusers.options.table import OPTIONS


@dataclass(frozen=True)
class Settings:
    """Validated option values. ``None`` means the User class decides."""

    broker: BrokerAddress | None = None
    #: Where consumer Users connect (``--mq-consumer-host``), in turn when several; empty: ``broker``.
    consumer_brokers: tuple[BrokerAddress, ...] = ()
    destination: str | None = None
    size: int | None = None
    size_dist: SizeDist | None = None
    payload: PayloadSpec | None = None
    persistent: bool | None = None
    durable: bool | None = None
    labels: int | None = None
    groups: int | None = None
    select: str | None = None
    priorities: int | None = None
    ack: str | None = None
    nack_ratio: float | None = None
    nack_times: int | None = None
    prefetch: int | None = None
    receipts: bool | None = None
    in_flight: int | None = None
    random_start: bool | None = None
    rate: float | None = None
    max_messages: int | None = None
    per_connection: int | None = None
    churn_pause: float | None = None
    tx_size: int | None = None
    tx_abort_ratio: float | None = None
    tx_ack: int | None = None
    consumers: int | None = None
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    heartbeats: tuple[int, int] = (10000, 4000)
    vhost: str = "/"
    dialect: str = "auto"
    reply_to: str | None = None
    timeout: float = 10.0
    max_frame: int = MAX_FRAME_DEFAULT
    run_id: str = ""
    report_json: str | None = None
    report_csv: str | None = None
    report_html: str | None = None
    results: str | None = None
    hdr_log: str | None = None
    warmup: float = 0.0
    max_p99_ms: float | None = None
    max_errors: int | None = None
    #: A lost message fails the run unless this is raised: a lossy run never looks like a good one.
    max_lost: int | None = 0
    min_rate: float | None = None
    total_rate: float = 0.0
    profile: RateProfile | None = None
    drain: float = 5.0
    drain_max: float = 30.0
    total_messages: int = 0
    backlog_messages: int = 0
    backlog_seconds: float = 0.0
    backlog_drain_rate: float = 0.0
    ttl_ms: int | None = None
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    other_runs: str | None = None
    fail_on_saturation: bool = False
    baseline: str | None = None
    baseline_unfit: bool = False
    gate_regression: tuple[tuple[str, float], ...] = ()
    gate_confidence: float = 95.0
    request_events: str = "bulk"
    #: Commands may carry secrets: never in a repr (reports show them masked, from the fault records).
    faults: tuple[Fault, ...] = field(default=(), repr=False)


def class_brokers(user_classes: Iterable[type]) -> tuple[str, ...]:
    """The distinct stomp(+ssl) URLs the User classes set as ``host``: the STOMP Users' broker.

    Read before the first spawn: Locust then overwrites every class's ``host`` with ``--host``.
    """
    hosts = (getattr(user_class, "host", None) for user_class in user_classes)
    return tuple(dict.fromkeys(host for host in hosts if isinstance(host, str) and is_broker_url(host)))


def class_networks(user_classes: Iterable[type]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The User classes' brokers (:func:`class_brokers`), and the consumers' when the consumer classes name other
    brokers than the producer classes do: a locustfile of a network names each side's own host."""
    classes = list(user_classes)
    consumers = class_brokers(c for c in classes if getattr(c, "role", None) == "consumer")
    producers = class_brokers(c for c in classes if getattr(c, "role", None) != "consumer")
    if consumers and producers and not set(consumers) & set(producers):
        return producers, consumers
    return class_brokers(classes), ()


def read_settings(
    options: Any, host: str | None, brokers: tuple[str, ...] = (), consumer_hosts: tuple[str, ...] = ()
) -> Settings:
    """Validate every mqusers option once; raise :class:`~mqusers.options.parsing.OptionError` with one clear line.

    The broker is ``--mq-host``, else the STOMP User classes' ``host`` (``brokers``, from
    :func:`class_networks`), else ``host`` (``--host``), which then has to be a broker URL: an http(s)
    ``--host`` belongs to the HttpUsers of a mixed locustfile once the broker comes from elsewhere. The
    consumers' brokers are ``--mq-consumer-host``, else the consumer classes' own ``host`` (``consumer_hosts``).
    """
    values = read(options, OPTIONS)
    if "consumer_brokers" not in values and consumer_hosts:
        values["consumer_brokers"] = tuple(parse_broker_url(url, "host") for url in consumer_hosts)
    if "broker" not in values:
        if len(brokers) > 1:
            raise OptionError(f"the User classes' host name {len(brokers)} brokers; give one with --mq-host")
        if brokers:
            values["broker"] = parse_broker_url(brokers[0], "host")
        elif host:
            values["broker"] = parse_broker_url(host)
    check_client_certificate(values.get("cert_file"), values.get("key_file"))
    if values.get("profile") is not None and (values.get("total_rate") or values.get("rate") is not None):
        given = "--mq-total-rate" if values.get("total_rate") else "--mq-rate"
        raise OptionError(f"--mq-profile sets the run-wide rate over time: drop {given}")
    if values.get("backlog_drain_rate"):
        if not (values.get("backlog_messages") or values.get("backlog_seconds")):
            raise OptionError("--mq-backlog-drain-rate paces a backlog's drain: give --mq-backlog-messages or "
                              "--mq-backlog-seconds too")  # fmt: skip
        if values.get("ack") == "auto":
            raise OptionError("--mq-backlog-drain-rate paces the consumers by holding their ACKs: use --mq-ack "
                              "client or client-individual (or leave it out)")  # fmt: skip
    if values.get("tx_ack") and values.get("ack") == "auto":
        raise OptionError("--mq-tx-ack sends ACKs in transactions: --mq-ack auto sends none; drop one of them")
    if values.get("tx_ack") and values.get("backlog_drain_rate"):
        # A paced drain holds each ACK for its turn: a transaction's COMMIT could pass its own ACKs.
        raise OptionError("--mq-tx-ack and --mq-backlog-drain-rate both decide when ACKs go: drop one of them")
    if values.get("profile") is not None and values["profile"].sizes:
        if values.get("size_dist") is not None:
            raise OptionError("--mq-profile's CSV sets the sizes over time (its size column): drop --mq-size-dist")
        payload = values.get("payload")
        if payload is not None and not payload.sized:
            raise OptionError(f"--mq-profile's CSV has a size column, but --mq-payload {payload.kind} bodies "
                              "have their own sizes")  # fmt: skip
    if values.get("priorities") and not (values.get("backlog_messages") or values.get("backlog_seconds")):
        raise OptionError("--mq-priorities is measured on a backlog drained: give --mq-backlog-messages or "
                          "--mq-backlog-seconds too")  # fmt: skip
    if values.get("select") is not None and values.get("labels") is not None:
        check_selection(values["labels"], values["select"])
    if values.get("nack_ratio") and values.get("ack") not in (None, "client-individual"):
        raise OptionError(f"--mq-nack-ratio: NACK needs --mq-ack client-individual, not {values['ack']}")
    if values.get("baseline") and not values.get("gate_regression"):
        raise OptionError("--mq-baseline is the regression gate's: give --mq-gate-regression (e.g. p99:10%) too")
    if values.get("gate_regression") and not values.get("baseline"):
        raise OptionError("--mq-gate-regression compares the run with a baseline: give --mq-baseline too")
    return Settings(**values)
