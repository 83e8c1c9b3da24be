"""The ``--influx-*`` options: registration, validation, and the InfluxDB v2 HTTP sender.

Like ``--mq-*``, every value is a string in the parser and is validated once into a frozen
settings object; a bad value is one :class:`~mqusers.options.OptionError` line. None of them is in
the web UI: the listener starts with the process, so an edit there could not take effect, and
Locust would embed an env-supplied token in the page as the field's default.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from mqusers.options import (
    OptionError,
    add_option,
    mask_userinfo,
    option_text,
    parse_number,
    read_secret_file,
    writable_file,
)
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


def add_influx_arguments(group: Any) -> None:
    """Register ``--influx-*`` on an argument group (or a parser) of Locust's configargparse parser."""

    def add(name: str, help_text: str, *, default: str = "", secret: bool = False) -> None:
        # Never in the web UI: Locust would embed an env-supplied token in the page.
        add_option(group, name, help_text, default=default, secret=secret, ui=False)

    add("influx-url", "stream live figures to this InfluxDB 2.x / 3.x (or VictoriaMetrics) URL (empty: off)")
    add("influx-org", "InfluxDB organisation", default="mqusers")
    add(
        "influx-bucket",
        "InfluxDB bucket (InfluxQL dashboards read it as database BUCKET, policy autogen)",
        default="mqusers",
    )
    add("influx-token", "InfluxDB API token: set env LOCUST_INFLUX_TOKEN rather than the command line", secret=True)
    add("influx-token-file", "file holding the InfluxDB API token")
    add(
        "influx-interval",
        "seconds per point: each interval's counts and latency percentiles (0.1 to 3,600)",
        default="1",
    )
    add(
        "influx-buffer",
        "points held while the store is slow or down (at most 10,000,000); beyond, the oldest are dropped",
        default="100000",
    )
    add("influx-batch", "points per write request (at most 1,000,000)", default="5000")
    add("influx-timeout", "seconds one write request may take (0.01 to 3,600)", default="5")
    add("influx-flush-timeout", "seconds to keep trying to send what is buffered at exit (at most 3,600)", default="10")
    add("influx-line-file", "also append every point, in line protocol, to this file (its folder must exist)")


def _token(options: Any) -> str:
    path = option_text(options, "influx_token_file")
    return read_secret_file(path, "--influx-token-file") if path else option_text(options, "influx_token")


def read_influx_settings(options: Any) -> InfluxSettings | None:
    """Validated ``--influx-*`` values, or None when ``--influx-url`` is empty (the listener is off)."""

    def text(name: str, default: str = "") -> str:
        return option_text(options, name) or default

    url = text("influx_url")
    if not url:
        return None
    if "@" in url:
        # Before the URL is parsed or quoted: a token may hold '/' or '#', which end urlsplit's userinfo early.
        raise OptionError(
            f"--influx-url: {mask_userinfo(url)!r}: credentials do not belong in the URL; set LOCUST_INFLUX_TOKEN"
        )
    form = "use e.g. http://127.0.0.1:8086"
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unclosed '[' of an IPv6 address
        raise OptionError(f"--influx-url: {url!r} is not an http(s) URL; {form}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise OptionError(f"--influx-url: {url!r} is not an http(s) URL; {form}")

    def number(name: str, default: str, *, integer: bool, minimum: float, maximum: float, unit: str) -> float:
        flag = "--" + name.replace("_", "-")
        return parse_number(text(name, default), flag, integer=integer, minimum=minimum, maximum=maximum, unit=unit)

    line_file = text("influx_line_file") or None
    return InfluxSettings(
        url=url.rstrip("/"),
        org=text("influx_org", "mqusers"),
        bucket=text("influx_bucket", "mqusers"),
        token=_token(options),
        interval=number("influx_interval", "1", integer=False, minimum=0.1, maximum=3_600, unit="seconds"),
        buffer=int(number("influx_buffer", "100000", integer=True, minimum=1, maximum=10_000_000, unit="points")),
        batch=int(number("influx_batch", "5000", integer=True, minimum=1, maximum=1_000_000, unit="points")),
        timeout=number("influx_timeout", "5", integer=False, minimum=0.01, maximum=3_600, unit="seconds"),
        flush_timeout=number("influx_flush_timeout", "10", integer=False, minimum=0, maximum=3_600, unit="seconds"),
        line_file=line_file and writable_file(line_file, "--influx-line-file"),
    )


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
