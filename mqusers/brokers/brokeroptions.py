"""The ``--mq-broker-metrics*`` and ``--mq-broker-pid`` options, declared once in :data:`OPTIONS`.

Like every ``--mq-*`` option a value is validated once into a frozen settings object; a bad value
is one :class:`~mqusers.options.parsing.OptionError` line. Not in the web UI: the sampler starts with the
test on the master, and the management password must never be embedded in a page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mqusers.options.optionspec import Option, read
from mqusers.options.parsing import choice, decimal, parse_http_url, text, whole

MODES = ("auto", "off", "activemq", "rabbitmq", "artemis")


@dataclass(frozen=True)
class BrokerMetricsSettings:
    mode: str = "auto"
    #: RabbitMQ's management API or Artemis's console; None: looked for
    #: (:func:`mqusers.brokers.rabbitmq.management_urls`, :func:`mqusers.brokers.artemis.console_urls`).
    url: str | None = None
    #: The management API's (Artemis: the console's) login; None: the STOMP login (--mq-user / --mq-password).
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    #: A local broker JVM to read heap, GC, threads and CPU of (None: no JVM figures).
    pid: int | None = None
    interval: float = 2.0


OPTIONS: tuple[Option, ...] = (
    Option(
        "mq-broker-metrics",
        "mode",
        choice(MODES),
        "the broker's own figures beside the client's: auto (ActiveMQ's statistics plugin over STOMP, "
        "RabbitMQ's management API or Artemis's Jolokia, by the broker's CONNECTED header), activemq, rabbitmq, "
        "artemis or off",
        default="auto",
        ui=False,
    ),
    Option(
        "mq-broker-metrics-url",
        "url",
        parse_http_url,
        "RabbitMQ management API URL, or Artemis console URL (default: port 15672, Artemis 8161, on the broker's "
        "host, or shifted as the STOMP port is; kept only if that broker listens on the STOMP port)",
        ui=False,
    ),
    Option(
        "mq-broker-metrics-user", "user", text, "management API (Artemis: console) login (default: --mq-user)", ui=False
    ),
    Option(
        "mq-broker-metrics-password",
        "password",
        text,
        "management API password (default: --mq-password); prefer env LOCUST_MQ_BROKER_METRICS_PASSWORD",
        ui=False,
        secret=True,
        file="mq-broker-metrics-password-file",
        file_help="file holding the management API password",
        strip=False,
    ),
    Option(
        "mq-broker-pid",
        "pid",
        whole(4_194_304, minimum=1),
        "PID of a broker JVM on this host: heap, GC, threads and CPU from the JDK's jstat and /proc",
        ui=False,
    ),
    Option(
        "mq-broker-metrics-interval",
        "interval",
        decimal(3_600, minimum=0.1, unit="seconds"),
        "seconds between two readings of the broker's figures (default 2)",
        default="2",
        ui=False,
    ),
)


def read_broker_metrics_settings(options: Any) -> BrokerMetricsSettings:
    """Validated values; raises :class:`~mqusers.options.parsing.OptionError` with one line."""
    return BrokerMetricsSettings(**read(options, OPTIONS))
