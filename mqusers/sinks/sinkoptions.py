"""The ``--influx-*`` and ``--prometheus-*`` options, each declared once (:data:`OPTIONS`,
:data:`PROMETHEUS_OPTIONS`), and the InfluxDB v2 HTTP sender.

Like ``--mq-*``, every value is a string in the parser and is validated once into a frozen
settings object; a bad value is one :class:`~mqusers.options.parsing.OptionError` line. None of them is in
the web UI: the listener starts with the process, so an edit there could not take effect, and
Locust would embed an env-supplied token in the page as the field's default.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mqusers.options.optionspec import Option, read, register, text_of
from mqusers.options.parsing import OptionError, decimal, parse_http_url, text, whole
from mqusers.options.paths import writable_file
from mqusers.sinks.writer import StoreRejected

#: The store's HTTP status codes that mean "this batch will never be accepted".
_RETRYABLE_STATUS = {408, 429}


@dataclass(frozen=True)
class InfluxSettings:
    url: str
    org: str = "mqusers"
    bucket: str = "mqusers"
    token: str = field(default="", repr=False)
    interval: float = 1.0
    buffer: int = 100_000
    batch: int = 5_000
    timeout: float = 5.0
    flush_timeout: float = 10.0
    line_file: str | None = None


_URL = Option(
    "influx-url",
    "url",
    parse_http_url,
    "stream live figures to this InfluxDB 2.x / 3.x (or VictoriaMetrics) URL (empty: off)",
    ui=False,
)
#: Every ``--influx-*`` option, in ``--help`` order; the URL first, as without it the rest is not read.
OPTIONS: tuple[Option, ...] = (
    _URL,
    Option("influx-org", "org", text, "InfluxDB organisation", default="mqusers", ui=False),
    Option(
        "influx-bucket",
        "bucket",
        text,
        "InfluxDB bucket (InfluxQL dashboards read it as database BUCKET, policy autogen)",
        default="mqusers",
        ui=False,
    ),
    Option(
        "influx-token",
        "token",
        text,
        "InfluxDB API token: set env LOCUST_INFLUX_TOKEN rather than the command line",
        ui=False,
        secret=True,
        file="influx-token-file",
        file_help="file holding the InfluxDB API token",
    ),
    Option(
        "influx-interval",
        "interval",
        decimal(3_600, minimum=0.1, unit="seconds"),
        "seconds per point: each interval's counts and latency percentiles (0.1 to 3,600)",
        default="1",
        ui=False,
    ),
    Option(
        "influx-buffer",
        "buffer",
        whole(10_000_000, minimum=1, unit="points"),
        "points held while the store is slow or down (at most 10,000,000); beyond, the oldest are dropped",
        default="100000",
        ui=False,
    ),
    Option(
        "influx-batch",
        "batch",
        whole(1_000_000, minimum=1, unit="points"),
        "points per write request (at most 1,000,000)",
        default="5000",
        ui=False,
    ),
    Option(
        "influx-timeout",
        "timeout",
        decimal(3_600, minimum=0.01, unit="seconds"),
        "seconds one write request may take (0.01 to 3,600)",
        default="5",
        ui=False,
    ),
    Option(
        "influx-flush-timeout",
        "flush_timeout",
        decimal(3_600, unit="seconds"),
        "seconds to keep trying to send what is buffered at exit (at most 3,600)",
        default="10",
        ui=False,
    ),
    Option(
        "influx-line-file",
        "line_file",
        writable_file,
        "also append every point, in line protocol, to this file (its folder must exist)",
        ui=False,
    ),
)


@dataclass(frozen=True)
class PrometheusSettings:
    port: int
    host: str = "127.0.0.1"
    linger: float = 15.0


PROMETHEUS_PORT = "prometheus-port"
_PORT = Option(
    PROMETHEUS_PORT,
    "port",
    whole(65_535, minimum=1, unit="port"),
    "serve the live figures on http://HOST:PORT/metrics for Prometheus (empty: off); taken from a process's "
    "own command line (a worker's serves its own figures), never from the master",
    ui=False,
)
#: Every ``--prometheus-*`` option; the port first, as without it the rest is not read.
PROMETHEUS_OPTIONS: tuple[Option, ...] = (
    _PORT,
    Option(
        "prometheus-host",
        "host",
        text,
        "address the /metrics endpoint binds (0.0.0.0: every interface)",
        default="127.0.0.1",
        ui=False,
    ),
    Option(
        "prometheus-linger",
        "linger",
        decimal(3_600, unit="seconds"),
        "at exit, keep /metrics up until one scrape has read the final figures, at most this long (0 to 3,600)",
        default="15",
        ui=False,
    ),
)


def add_influx_arguments(group: Any) -> None:
    """Register ``--influx-*`` and ``--prometheus-*`` on an argument group (or a parser) of Locust's parser."""
    register(group, OPTIONS)
    register(group, PROMETHEUS_OPTIONS)


def read_influx_settings(options: Any) -> InfluxSettings | None:
    """Validated ``--influx-*`` values, or None when ``--influx-url`` is empty (the listener is off)."""
    if not text_of(options, _URL.name):
        return None
    return InfluxSettings(**read(options, OPTIONS))


def read_prometheus_settings(options: Any) -> PrometheusSettings | None:
    """Validated ``--prometheus-*`` values, or None when ``--prometheus-port`` is empty (no endpoint)."""
    if not text_of(options, _PORT.name):
        return None
    return PrometheusSettings(**read(options, PROMETHEUS_OPTIONS))


def http_sender(settings: InfluxSettings) -> Callable[[str], None]:
    """``send(body)`` through influxdb-client's synchronous v2 write API (``/api/v2/write``).

    Synchronous on purpose: it runs in the writer's own greenlet, where gevent turns its socket
    waits into yields, and it leaves buffering and retries to the writer (``retries=False``), so
    there is one bound and one drop count. Imported here, lazily: influxdb-client must come after
    Locust's gevent patching (the other order recurses in ``ssl``), and users without the
    ``influx`` extra never import it.
    """
    try:
        from influxdb_client.client.influxdb_client import InfluxDBClient
        from influxdb_client.client.write_api import SYNCHRONOUS
        from influxdb_client.domain.write_precision import WritePrecision
        from influxdb_client.rest import ApiException
    except ImportError:
        raise OptionError("--influx-url: influxdb-client is not installed; pip install 'mqusers[influx]'") from None
    client = InfluxDBClient(
        url=settings.url,
        token=settings.token,  # empty: no Authorization header (VictoriaMetrics, an open 1.8+)
        org=settings.org,
        timeout=int(settings.timeout * 1000),
        retries=False,
    )
    api = client.write_api(write_options=SYNCHRONOUS)

    def send(body: str) -> None:
        try:
            api.write(bucket=settings.bucket, org=settings.org, record=body, write_precision=WritePrecision.MS)  # type: ignore[arg-type]
        except ApiException as error:
            status = int(error.status or 0)
            reason = f"HTTP {status} {error.reason or ''}".strip()
            if 400 <= status < 500 and status not in _RETRYABLE_STATUS:
                raise StoreRejected(f"{reason} from {settings.url}") from None
            raise ConnectionError(reason) from None

    return send
