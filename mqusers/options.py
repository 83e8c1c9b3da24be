"""The one mqusers argument group: registration, validation, and a frozen settings object.

Options reach Locust's own parser, so each works on the command line, in ``locust.conf``, as a
``LOCUST_MQ_*`` env var and in the web UI's custom parameters. Values stay strings in the parser
because the web UI re-types edits by the default's type; :func:`read_settings` validates them once
per test and hands plain values on. An empty value means "what the scenario (User class) says".
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

ACK_MODES = ("auto", "client", "client-individual")
BROKERS = ("auto", "activemq", "rabbitmq", "artemis")
REPLY_MODES = ("temp", "queue")
OTHER_RUNS = ("apart", "fail", "receive")
SCHEMES = {"stomp": False, "stomp+ssl": True, "stomp+tls": True}

# Bounds: a value beyond them is a typo, and the arithmetic on it (1/rate, seconds as ns) overflows mid-run.
MIN_RATE, MAX_RATE = 0.001, 10_000_000  # msg/s; 0 (unpaced, off) is accepted too
MAX_SECONDS = 86_400  # --mq-drain, --mq-warmup
MAX_TIMEOUT = 3_600
MAX_COUNT = 10**12  # messages
MAX_PREFETCH = MAX_CONSUMERS = 1_000_000
MAX_HEARTBEAT_MS = 3_600_000
MAX_DESTINATION = 255  # RabbitMQ's limit for a queue name

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)(i?)[bB]?\s*$")
# Destinations are embedded in pre-encoded frames, so they must not need STOMP header escaping, and a
# control character would corrupt the frame.
_DESTINATION_RE = re.compile(r"/(queue|topic|temp-queue|temp-topic|exchange|amq/queue)/[^\s:\\\x00-\x1f\x7f-\x9f]+")
# The run id goes as it is into every SEND frame's headers and the InfluxDB tags.
_RUN_ID_RE = re.compile(r"[A-Za-z0-9._-]{1,64}")
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


class OptionError(ValueError):
    """A bad option value; the message is one line naming the option and the accepted form."""


@dataclass(frozen=True)
class BrokerAddress:
    """Where to connect: one or more (host, port) pairs, tried in order (failover)."""

    hosts: tuple[tuple[str, int], ...]
    ssl: bool = False

    def __str__(self) -> str:
        scheme = "stomp+ssl" if self.ssl else "stomp"
        return ",".join(f"{scheme}://{host}:{port}" for host, port in self.hosts)


@dataclass(frozen=True)
class Settings:
    """Validated option values. ``None`` means the User class decides."""

    broker: BrokerAddress | None = None
    destination: str | None = None
    size: int | None = None
    persistent: bool | None = None
    durable: bool | None = None
    ack: str | None = None
    prefetch: int | None = None
    receipts: bool | None = None
    rate: float | None = None
    max_messages: int | None = None
    consumers: int | None = None
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    heartbeats: tuple[int, int] = (0, 0)
    vhost: str = "/"
    dialect: str = "auto"
    reply_to: str | None = None
    timeout: float = 10.0
    run_id: str = ""
    report_json: str | None = None
    report_csv: str | None = None
    warmup: float = 0.0
    max_p99_ms: float | None = None
    max_errors: int | None = None
    max_lost: int | None = None
    min_rate: float | None = None
    total_rate: float = 0.0
    drain: float = 5.0
    drain_max: float = 30.0
    total_messages: int = 0
    ca_file: str | None = None
    other_runs: str | None = None
    fail_on_saturation: bool = False


def parse_size(text: str, option: str = "--mq-size") -> int:
    """``100``, ``646``, ``1KB``, ``10KB``, ``20KB``, ``1MiB`` -> bytes (K and KiB both mean 1024)."""
    match = _SIZE_RE.match(text)
    if not match:
        raise OptionError(f"{option}: {text!r} is not a size; use bytes or a unit, e.g. 100, 646, 1KB, 20KB, 1MiB")
    number, unit = float(match.group(1)), match.group(2).upper()
    size = int(number * {"": 1, "K": 1024, "M": 1024 * 1024}[unit])
    if not 1 <= size <= 64 * 1024 * 1024:
        raise OptionError(f"{option}: {text!r} is out of range; use 1 byte to 64MiB")
    return size


def parse_bool(text: str, option: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise OptionError(f"{option}: {text!r} is not a boolean; use true or false")


def _figure(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) else f"{value:g}"


def parse_number(
    text: str,
    option: str,
    *,
    integer: bool,
    maximum: float,
    minimum: float = 0,
    zero: bool = False,
    unit: str = "",
) -> float:
    """``text`` as a number from ``minimum`` to ``maximum``; ``zero`` also lets 0 ("off") through."""
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        kind = "a whole number" if integer else "a number"
        raise OptionError(f"{option}: {text!r} is not {kind}; use e.g. {'10' if integer else '2.5'}") from None
    if not (minimum <= value <= maximum or (zero and value == 0)):  # NaN fails both comparisons
        accepted = f"at least {_figure(minimum)} and at most {_figure(maximum)}{' ' + unit if unit else ''}"
        raise OptionError(f"{option}: {text!r} must be {'0, or ' if zero else ''}{accepted}")
    return value


def parse_rate(text: str, option: str) -> float:
    return parse_number(text, option, integer=False, minimum=MIN_RATE, maximum=MAX_RATE, zero=True, unit="msg/s")


def parse_destination(text: str, option: str = "--mq-destination") -> str:
    if len(text) > MAX_DESTINATION:
        raise OptionError(
            f"{option}: {len(text):,} characters is too long; use at most {MAX_DESTINATION} (RabbitMQ's limit)"
        )
    if not _DESTINATION_RE.fullmatch(text):
        raise OptionError(
            f"{option}: {text!r} is not a STOMP destination; use /queue/NAME or /topic/NAME "
            "(also /exchange/..., /amq/queue/...), no spaces, control characters, ':' or '\\'"
        )
    return text


def parse_run_id(text: str) -> str:
    if not _RUN_ID_RE.fullmatch(text):
        shown = repr(text) if len(text) <= 64 else f"{len(text):,} characters"
        raise OptionError(f"--mq-run-id: {shown} is not a run id; use 1 to 64 of A-Z a-z 0-9 . _ -")
    return text


def mask_userinfo(url: str) -> str:
    """``url`` with its ``user:password@`` as ``***@``, to quote it in an error line or a log.

    Everything from after ``scheme://`` to the last ``@`` goes, since a password may itself hold
    ``@``, ``/``, ``,`` or ``://``: nothing of it may show.
    """
    at = url.rfind("@")
    if at < 0:
        return url
    scheme = _SCHEME_RE.match(url)
    return f"{url[: scheme.end() if scheme else 0]}***{url[at:]}"


def parse_broker_url(text: str) -> BrokerAddress:
    """``stomp://h:61613``, ``stomp+ssl://h:61614``, or a comma-separated failover list of them."""
    _utf8(text, "--host")
    if "@" in text:
        # Checked on the whole text, before the split at ',' that a password may contain; past this
        # point nothing mask_userinfo would hide is left to quote.
        raise OptionError(
            f"--host: {mask_userinfo(text)!r}: credentials do not belong in the URL; "
            "set LOCUST_MQ_USER and LOCUST_MQ_PASSWORD"
        )
    hosts: list[tuple[str, int]] = []
    schemes: set[bool] = set()
    form = "use stomp://HOST:PORT or stomp+ssl://HOST:PORT, comma-separated for failover"
    for part in (p.strip() for p in text.split(",")):
        try:
            url = urlsplit(part if "://" in part else f"{'stomp+ssl' if True in schemes else 'stomp'}://{part}")
        except ValueError:  # e.g. an unclosed '[' of an IPv6 address
            raise OptionError(f"--host: {part!r} is not a broker address; {form}") from None
        if url.scheme not in SCHEMES:
            raise OptionError(f"--host: {part!r} has scheme {url.scheme!r}; {form}")
        if url.path not in ("", "/") or url.query or not url.hostname:
            raise OptionError(f"--host: {part!r} is not a broker address; {form}")
        try:
            port = url.port
        except ValueError:
            raise OptionError(f"--host: {part!r} has a bad port; use 1-65535") from None
        if port is None:
            raise OptionError(f"--host: {part!r} has no port; {form}")
        schemes.add(SCHEMES[url.scheme])
        hosts.append((url.hostname, port))
    if len(schemes) != 1:
        raise OptionError(f"--host: mixes stomp and stomp+ssl; {form}")
    return BrokerAddress(tuple(hosts), ssl=schemes.pop())


def _choice(text: str, option: str, choices: tuple[str, ...]) -> str:
    if text not in choices:
        raise OptionError(f"{option}: {text!r} is not one of {', '.join(choices)}")
    return text


def _heartbeats(text: str) -> tuple[int, int]:
    parts = text.split(",")
    if len(parts) != 2:
        raise OptionError(f"--mq-heartbeats: {text!r} is not SEND_MS,RECEIVE_MS; use e.g. 0,0 or 10000,10000")
    send, receive = (
        int(parse_number(p.strip(), "--mq-heartbeats", integer=True, maximum=MAX_HEARTBEAT_MS, unit="ms"))
        for p in parts
    )
    return send, receive


def _readable_file(path: str) -> str:
    if not os.access(path, os.R_OK) or not os.path.isfile(path):
        raise OptionError(f"--mq-ca-file: cannot read {path!r}; give a PEM file of the CA that signed the broker")
    return path


def writable_file(path: str, option: str) -> str:
    """``path``, if a file can be written there later; checked without creating or truncating it."""
    folder = os.path.dirname(os.path.abspath(path))
    if path.endswith(os.sep) or os.path.isdir(path):
        problem = "it names a folder"
    elif os.path.exists(path):
        problem = "" if os.path.isfile(path) and os.access(path, os.W_OK) else "not a writable regular file"
    elif not os.path.isdir(folder):
        problem = "no such folder"
    else:
        problem = "" if os.access(folder, os.W_OK | os.X_OK) else "the folder is not writable"
    if problem:
        raise OptionError(f"{option}: cannot write {path!r}: {problem}; give a file in a writable folder")
    return path


def _utf8(text: str, option: str) -> str:
    """``text``, refused unless it is UTF-8; the value is not quoted, as it may be a secret."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Bytes that are not UTF-8 (in an env var or argv) arrive as surrogate escapes, which
        # would fail only when the first frame is encoded.
        raise OptionError(f"{option}: the value is not valid UTF-8; use UTF-8 text") from None
    return text


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def option_text(options: Any, name: str) -> str:
    """The value of option ``name`` (e.g. ``mq_run_id``), stripped and checked to be UTF-8; "" when unset."""
    return _utf8(str(getattr(options, name, "") or "").strip(), _flag(name))


def read_secret_file(path: str, option: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError as error:
        raise OptionError(f"{option}: cannot read {path!r}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise OptionError(f"{option}: {path!r} is not UTF-8 text; save the secret as UTF-8") from None


def _password(options: Any) -> str | None:
    path = option_text(options, "mq_password_file")
    if path:
        return read_secret_file(path, "--mq-password-file")
    return _utf8(getattr(options, "mq_password", "") or "", "--mq-password") or None


def read_settings(options: Any, host: str | None) -> Settings:
    """Validate every mqusers option once; raise :class:`OptionError` with one clear line."""

    def text(name: str) -> str:
        return option_text(options, name)

    def optional(name: str, parse: Any) -> Any:
        value = text(name)
        return parse(value) if value else None

    def whole(value: str, option: str, maximum: int) -> int:
        return int(parse_number(value, option, integer=True, maximum=maximum))

    def seconds(value: str, option: str, maximum: float, minimum: float = 0) -> float:
        return parse_number(value, option, integer=False, minimum=minimum, maximum=maximum, unit="seconds")

    def report(name: str) -> str | None:
        path = text(name) or None
        # Only the master (or a local runner) writes the reports: a worker's own disk does not matter.
        if path and not getattr(options, "worker", False):
            writable_file(path, _flag(name))
        return path

    return Settings(
        broker=parse_broker_url(host) if host else None,
        destination=optional("mq_destination", parse_destination),
        size=optional("mq_size", parse_size),
        persistent=optional("mq_persistent", lambda v: parse_bool(v, "--mq-persistent")),
        durable=optional("mq_durable", lambda v: parse_bool(v, "--mq-durable")),
        ack=optional("mq_ack", lambda v: _choice(v, "--mq-ack", ACK_MODES)),
        prefetch=optional("mq_prefetch", lambda v: whole(v, "--mq-prefetch", MAX_PREFETCH)),
        receipts=optional("mq_receipts", lambda v: parse_bool(v, "--mq-receipts")),
        rate=optional("mq_rate", lambda v: parse_rate(v, "--mq-rate")),
        max_messages=optional("mq_messages", lambda v: whole(v, "--mq-messages", MAX_COUNT)),
        consumers=optional("mq_consumers", lambda v: whole(v, "--mq-consumers", MAX_CONSUMERS)),
        user=text("mq_user") or None,
        password=_password(options),
        heartbeats=_heartbeats(text("mq_heartbeats") or "0,0"),
        vhost=text("mq_vhost") or "/",
        dialect=_choice(text("mq_broker") or "auto", "--mq-broker", BROKERS),
        reply_to=optional("mq_reply_to", lambda v: _choice(v, "--mq-reply-to", REPLY_MODES)),
        timeout=seconds(text("mq_timeout") or "10", "--mq-timeout", MAX_TIMEOUT, minimum=0.001),
        run_id=optional("mq_run_id", parse_run_id) or "",
        report_json=report("mq_report_json"),
        report_csv=report("mq_report_csv"),
        warmup=seconds(text("mq_warmup") or "0", "--mq-warmup", MAX_SECONDS),
        max_p99_ms=optional(
            "mq_max_p99_ms",
            lambda v: parse_number(v, "--mq-max-p99-ms", integer=False, maximum=MAX_SECONDS * 1000, unit="ms"),
        ),
        max_errors=optional("mq_max_errors", lambda v: whole(v, "--mq-max-errors", MAX_COUNT)),
        max_lost=optional("mq_max_lost", lambda v: whole(v, "--mq-max-lost", MAX_COUNT)),
        min_rate=optional(
            "mq_min_rate", lambda v: parse_number(v, "--mq-min-rate", integer=False, maximum=MAX_RATE, unit="msg/s")
        ),
        drain=seconds(text("mq_drain") or "5", "--mq-drain", MAX_SECONDS),
        drain_max=seconds(text("mq_drain_max") or "30", "--mq-drain-max", MAX_SECONDS),
        other_runs=optional("mq_other_runs", lambda v: _choice(v, "--mq-other-runs", OTHER_RUNS)),
        fail_on_saturation=parse_bool(text("mq_fail_on_saturation") or "false", "--mq-fail-on-saturation"),
        total_rate=parse_rate(text("mq_total_rate") or "0", "--mq-total-rate"),
        total_messages=whole(text("mq_total_messages") or "0", "--mq-total-messages", MAX_COUNT),
        ca_file=optional("mq_ca_file", _readable_file),
    )


def add_option(group: Any, name: str, help_text: str, *, default: str, secret: bool, ui: bool) -> None:
    """One string option on Locust's parser, with its ``LOCUST_*`` env var."""
    action = group.add_argument(
        f"--{name}", type=str, default=default, env_var=f"LOCUST_{name.upper().replace('-', '_')}", help=help_text
    )
    # Locust reads these attributes to build the web UI's custom parameters.
    action.include_in_web_ui = ui
    action.is_secret = secret
    action.is_required = False
    action.is_multiple = False


def add_arguments(parser: Any) -> None:
    """Register the mqusers argument group on Locust's parser."""
    group = parser.add_argument_group("mqusers", "STOMP messaging parameters (empty = the scenario's default)")

    def add(name: str, help_text: str, *, default: str = "", secret: bool = False, ui: bool = True) -> None:
        add_option(group, name, help_text, default=default, secret=secret, ui=ui)

    add("mq-destination", "destination, e.g. /queue/orders or /topic/prices (at most 255 characters)")
    add("mq-size", "message body size: 100, 646, 1KB, 10KB, 20KB, 1MiB (K = 1024)")
    add("mq-persistent", "send persistent messages (true/false)")
    add("mq-durable", "durable topic subscriptions (true/false)")
    add("mq-ack", f"consumer ack mode: {', '.join(ACK_MODES)}")
    add("mq-prefetch", "messages the broker may push ahead per consumer (0 = broker default; at most 1,000,000)")
    add("mq-receipts", "producers wait for the broker's RECEIPT on every message: sync send (true/false)")
    add("mq-rate", "messages/s per producer user: 0.001 to 10,000,000 (0 = as fast as possible)")
    add(
        "mq-total-rate",
        "messages/s shared by all producers on all workers, on one schedule (open model): 0.001 to 10,000,000",
    )
    add("mq-total-messages", "messages sent in total by all producers on all workers (at most 10^12)")
    add(
        "mq-drain",
        "idle timeout of the drain at the end: the run waits until every message arrived or none came for this "
        "many seconds (at most 86,400)",
        default="5",
    )
    add("mq-drain-max", "at most this many seconds of drain after -t, the web UI's stop or Ctrl-C", default="30")
    add(
        "mq-other-runs",
        f"messages of other runs or without mqusers headers: {', '.join(OTHER_RUNS)} (apart: counted apart; fail: "
        "also Locust failures; receive: other runs' messages count as received, e.g. draining a backlog)",
    )
    add("mq-messages", "messages each producer user sends, then idles (0 = until the run ends; at most 10^12)")
    add("mq-consumers", "consumer (or responder) users; the other users produce")
    add("mq-user", "broker login (or env LOCUST_MQ_USER)")
    # Not in the web UI: Locust would embed an env-supplied value in the page as the field's default.
    add(
        "mq-password", "broker passcode: set env LOCUST_MQ_PASSWORD rather than the command line", secret=True, ui=False
    )
    add("mq-password-file", "file holding the broker passcode", ui=False)
    add("mq-heartbeats", "STOMP heart-beats SEND_MS,RECEIVE_MS, each 0 to 3,600,000", default="0,0")
    add("mq-vhost", "virtual host sent in the CONNECT host header (RabbitMQ)", default="/")
    add("mq-broker", f"broker dialect: {', '.join(BROKERS)} (auto reads the CONNECTED server header)", default="auto")
    add("mq-reply-to", f"request/reply: reply to a {' or a per-requester '.join(REPLY_MODES)} queue")
    add("mq-timeout", "seconds to wait for CONNECTED, RECEIPT or a reply: 0.001 to 3,600", default="10")
    add(
        "mq-run-id",
        "run id put on every message: 1 to 64 of A-Z a-z 0-9 . _ - (default: generated at test start)",
        ui=False,
    )
    add("mq-ca-file", "PEM file of the CA (or self-signed certificate) to verify a stomp+ssl broker", ui=False)
    add("mq-report-json", "write the end-of-run summary to this JSON file (its folder must exist)", ui=False)
    add("mq-report-csv", "write the per-destination summary to this CSV file (its folder must exist)", ui=False)
    add(
        "mq-warmup", "seconds at the start left out of the exact summary (Locust's own stats keep them; at most 86,400)"
    )
    add("mq-max-p99-ms", "gate: exit 3 when any destination's send-to-receive p99 exceeds this (ms)")
    add("mq-max-errors", "gate: exit 3 when any destination has more errors than this")
    add("mq-max-lost", "gate: exit 3 when any destination lost more messages than this (the audit)")
    add("mq-min-rate", "gate: exit 3 when any destination receives fewer messages/s than this")
    add("mq-fail-on-saturation", "gate: exit 3 when the load generator was saturated (true/false)", default="false")
    from mqusers.sinks.settings import add_influx_arguments  # here: the sinks import this module

    add_influx_arguments(group)
