"""Option values from text: a parser takes the text and its flag, and returns the value or raises.

Every refusal is one :class:`OptionError` line that names the flag and the accepted form. Nothing
here knows which options exist (but Locust's ``--host``, the default flag of :func:`parse_broker_url`); the tables in
:mod:`mqusers.options.table` and :mod:`mqusers.sinks.sinkoptions` declare them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from mqusers.errors import MqusersError
from mqusers.options.destpattern import PatternError, parse_pattern

ACK_MODES = ("auto", "client", "client-individual")
BROKERS = ("auto", "activemq", "rabbitmq", "artemis")
REPLY_MODES = ("temp", "queue")
OTHER_RUNS = ("apart", "fail", "receive")
REQUEST_EVENTS = ("bulk", "per-message")
#: Each broker URL scheme: (TLS, STOMP over WebSocket).
SCHEMES = {
    "stomp": (False, False),
    "stomp+ssl": (True, False),
    "stomp+tls": (True, False),
    "ws": (False, True),
    "wss": (True, True),
}

# Bounds: a value beyond them is a typo, and the arithmetic on it (1/rate, seconds as ns) overflows mid-run.
MIN_RATE, MAX_RATE = 0.001, 10_000_000  # msg/s; 0 (unpaced, off) is accepted too
MAX_SECONDS = 86_400  # --mq-drain-idle, --mq-warmup
MAX_TIMEOUT = 3_600
MAX_COUNT = 10**12  # messages
MAX_PREFETCH = MAX_CONSUMERS = 1_000_000
MAX_HEARTBEAT_MS = 3_600_000
MAX_DESTINATION = 255  # RabbitMQ's limit for a queue name
MAX_SIZE = 64 * 1024 * 1024  # --mq-size
MAX_IN_FLIGHT = 10_000  # --mq-in-flight
#: --mq-max-frame: the default is twice --mq-size's limit; a frame over 1 GiB is no broker's.
MAX_FRAME_DEFAULT, MIN_FRAME, MAX_FRAME = 2 * MAX_SIZE, 64 * 1024, 1024 * 1024 * 1024

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)(i?)[bB]?\s*$")
# Destinations are embedded in pre-encoded frames, so they must not need STOMP header escaping, and a
# control character would corrupt the frame.
_DESTINATION_RE = re.compile(r"/(queue|topic|temp-queue|temp-topic|exchange|amq/queue)/[^\s:\\\x00-\x1f\x7f-\x9f]+")
# The run id goes as it is into every SEND frame's headers and the InfluxDB tags.
_RUN_ID_RE = re.compile(r"[A-Za-z0-9._-]{1,64}")
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


class OptionError(MqusersError, ValueError):
    """A bad option value; the message is one line naming the option and the accepted form."""


@dataclass(frozen=True)
class BrokerAddress:
    """Where to connect: one or more (host, port) pairs, tried in order (failover)."""

    hosts: tuple[tuple[str, int], ...]
    ssl: bool = False
    #: STOMP over WebSocket (ws://, wss://): each host's HTTP path to upgrade; empty for plain STOMP.
    paths: tuple[str, ...] = ()

    @property
    def websocket(self) -> bool:
        return bool(self.paths)

    def __str__(self) -> str:
        if self.websocket:
            scheme = "wss" if self.ssl else "ws"
            return ",".join(f"{scheme}://{h}:{p}{path}" for (h, p), path in zip(self.hosts, self.paths, strict=True))
        scheme = "stomp+ssl" if self.ssl else "stomp"
        return ",".join(f"{scheme}://{host}:{port}" for host, port in self.hosts)


def text(value: str, option: str) -> str:
    """Free text (a login, a vhost, an organisation), taken as it is."""
    return value


def utf8(value: str, option: str) -> str:
    """``value``, refused unless it is UTF-8; the value is not quoted, as it may be a secret."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        # Bytes that are not UTF-8 (in an env var or argv) arrive as surrogate escapes, which
        # would fail only when the first frame is encoded.
        raise OptionError(f"{option}: the value is not valid UTF-8; use UTF-8 text") from None
    return value


def parse_size(value: str, option: str = "--mq-size") -> int:
    """``100``, ``646``, ``1KB``, ``10KB``, ``20KB``, ``1MiB`` -> bytes (K and KiB both mean 1024)."""
    size = _bytes(value, option)
    if not 1 <= size <= MAX_SIZE:
        raise OptionError(f"{option}: {value!r} is out of range; use 1 byte to 64MiB")
    return size


def parse_frame_size(value: str, option: str = "--mq-max-frame") -> int:
    """The largest frame a broker may send: 64KB to 1024MiB."""
    size = _bytes(value, option)
    if not MIN_FRAME <= size <= MAX_FRAME:
        raise OptionError(f"{option}: {value!r} is out of range; use 64KB to 1024MiB")
    return size


def _bytes(value: str, option: str) -> int:
    match = _SIZE_RE.match(value)
    if not match:
        raise OptionError(f"{option}: {value!r} is not a size; use bytes or a unit, e.g. 100, 646, 1KB, 20KB, 1MiB")
    number, unit = float(match.group(1)), match.group(2).upper()
    return int(number * {"": 1, "K": 1024, "M": 1024 * 1024}[unit])


def parse_bool(value: str, option: str) -> bool:
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise OptionError(f"{option}: {value!r} is not a boolean; use true or false")


def _figure(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) else f"{value:g}"


def parse_number(
    value: str,
    option: str,
    *,
    integer: bool,
    maximum: float,
    minimum: float = 0,
    zero: bool = False,
    unit: str = "",
) -> float:
    """``value`` as a number from ``minimum`` to ``maximum``; ``zero`` also lets 0 ("off") through."""
    try:
        number = int(value) if integer else float(value)
    except ValueError:
        kind = "a whole number" if integer else "a number"
        raise OptionError(f"{option}: {value!r} is not {kind}; use e.g. {'10' if integer else '2.5'}") from None
    if not (minimum <= number <= maximum or (zero and number == 0)):  # NaN fails both comparisons
        accepted = f"at least {_figure(minimum)} and at most {_figure(maximum)}{' ' + unit if unit else ''}"
        raise OptionError(f"{option}: {value!r} must be {'0, or ' if zero else ''}{accepted}")
    return number


def whole(maximum: int, *, minimum: int = 0, unit: str = "") -> Callable[[str, str], int]:
    """A parser of whole numbers from ``minimum`` to ``maximum``."""
    return lambda value, option: int(
        parse_number(value, option, integer=True, minimum=minimum, maximum=maximum, unit=unit)
    )


def decimal(maximum: float, *, minimum: float = 0, zero: bool = False, unit: str = "") -> Callable[[str, str], float]:
    """A parser of numbers from ``minimum`` to ``maximum`` (or 0 when ``zero``)."""
    return lambda value, option: parse_number(
        value, option, integer=False, minimum=minimum, maximum=maximum, zero=zero, unit=unit
    )


def choice(choices: tuple[str, ...]) -> Callable[[str, str], str]:
    """A parser that accepts one of ``choices``."""

    def parse(value: str, option: str) -> str:
        if value not in choices:
            raise OptionError(f"{option}: {value!r} is not one of {', '.join(choices)}")
        return value

    return parse


def parse_destination(value: str, option: str = "--mq-destination") -> str:
    """A destination, or a pattern of them (:mod:`mqusers.options.destpattern`) whose every name is one."""
    try:
        pattern = parse_pattern(value)
    except PatternError as error:
        raise OptionError(f"{option}: {error}") from None
    if pattern is not None:
        # The longest name and the first stand for all: the numbers are digits, which the form allows.
        longest = max((pattern.name(0), pattern.name(len(pattern) - 1)), key=len)
        _check_destination(longest, option, shown=value)
        return value
    return _check_destination(value, option)


def _check_destination(value: str, option: str, shown: str | None = None) -> str:
    if len(value) > MAX_DESTINATION:
        raise OptionError(
            f"{option}: {len(value):,} characters is too long; use at most {MAX_DESTINATION} (RabbitMQ's limit)"
        )
    if not _DESTINATION_RE.fullmatch(value):
        raise OptionError(
            f"{option}: {shown or value!r} is not a STOMP destination; use /queue/NAME or /topic/NAME "
            "(also /exchange/..., /amq/queue/...), no spaces, control characters, ':' or '\\'"
        )
    return value


_TTL_RE = re.compile(r"(\d+(?:\.\d*)?)\s*(ms|s|m)?", re.IGNORECASE)
#: The longest ``--mq-ttl``: a day, in ms (STOMP's unit for a message's expiry).
MAX_TTL_MS = 86_400_000


def parse_ttl(value: str, option: str = "--mq-ttl") -> int:
    """A message's time-to-live in whole ms: ``500ms``, ``2s``, ``1.5m``; a bare number is ms; 0 is none."""
    match = _TTL_RE.fullmatch(value.strip())
    if match is None:
        raise OptionError(f"{option}: {value!r} is not a time-to-live; use e.g. 500ms, 2s or 1m (0 = none)")
    ms = round(float(match.group(1)) * {"ms": 1, "s": 1000, "m": 60_000}[(match.group(2) or "ms").lower()])
    if not (ms == 0 or 1 <= ms <= MAX_TTL_MS) or (ms == 0 and float(match.group(1)) != 0):
        raise OptionError(f"{option}: {value!r} must be 0, or at least 1 ms and at most 1 day")
    return ms


def parse_run_id(value: str, option: str) -> str:
    if not _RUN_ID_RE.fullmatch(value):
        shown = repr(value) if len(value) <= 64 else f"{len(value):,} characters"
        raise OptionError(f"{option}: {shown} is not a run id; use 1 to 64 of A-Z a-z 0-9 . _ -")
    return value


def parse_heartbeats(value: str, option: str) -> tuple[int, int]:
    parts = value.split(",")
    if len(parts) != 2:
        raise OptionError(f"{option}: {value!r} is not SEND_MS,RECEIVE_MS; use e.g. 0,0 or 10000,10000")
    send, receive = (whole(MAX_HEARTBEAT_MS, unit="ms")(p.strip(), option) for p in parts)
    return send, receive


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


def parse_broker_url(value: str, option: str = "--host") -> BrokerAddress:
    """``stomp://h:61613``, ``stomp+ssl://h:61614``, ``ws://h:15674/ws``, ``wss://...``, or a comma-separated
    failover list of one kind of them (a part without a scheme takes the one before it)."""
    utf8(value, option)
    if "@" in value:
        # Checked on the whole text, before the split at ',' that a password may contain; past this
        # point nothing mask_userinfo would hide is left to quote.
        raise OptionError(
            f"{option}: {mask_userinfo(value)!r}: credentials do not belong in the URL; "
            "set LOCUST_MQ_USER and LOCUST_MQ_PASSWORD"
        )
    hosts: list[tuple[str, int]] = []
    paths: list[str] = []
    kinds: set[tuple[bool, bool]] = set()
    scheme = "stomp"
    form = (
        "use stomp://HOST:PORT, stomp+ssl://HOST:PORT, ws://HOST:PORT/PATH or wss://HOST:PORT/PATH, "
        "comma-separated for failover"
    )
    for part in (p.strip() for p in value.split(",")):
        try:
            url = urlsplit(part if "://" in part else f"{scheme}://{part}")
        except ValueError:  # e.g. an unclosed '[' of an IPv6 address
            raise OptionError(f"{option}: {part!r} is not a broker address; {form}") from None
        if url.scheme not in SCHEMES:
            raise OptionError(f"{option}: {part!r} has scheme {url.scheme!r}; {form}")
        scheme = url.scheme
        websocket = SCHEMES[scheme][1]
        # A WebSocket endpoint is an HTTP path (RabbitMQ's /ws, ActiveMQ's any); a STOMP one has none.
        if (url.path not in ("", "/") and not websocket) or url.query or url.fragment or not url.hostname:
            raise OptionError(f"{option}: {part!r} is not a broker address; {form}")
        try:
            port = url.port
        except ValueError:
            raise OptionError(f"{option}: {part!r} has a bad port; use 1-65535") from None
        if port is None:
            raise OptionError(f"{option}: {part!r} has no port; {form}")
        kinds.add(SCHEMES[scheme])
        hosts.append((url.hostname, port))
        paths.append(url.path or "/")
    if len(kinds) != 1:
        raise OptionError(f"{option}: mixes schemes (stomp, stomp+ssl, ws, wss); {form}")
    ssl, websocket = kinds.pop()
    return BrokerAddress(tuple(hosts), ssl=ssl, paths=tuple(paths) if websocket else ())


def parse_broker_urls(value: str, option: str = "--mq-consumer-host") -> tuple[BrokerAddress, ...]:
    """One address or several, space-separated (each in :func:`parse_broker_url`'s forms, a failover list too):
    a network's members, which the consumers take in turn."""
    return tuple(parse_broker_url(part, option) for part in value.split())


def brokers_text(addresses: tuple[BrokerAddress, ...]) -> str:
    """``A``, ``A and B``, ``A; B and C``: addresses as a sentence says them (a failover list keeps its commas)."""
    named = [str(address) for address in addresses]
    return named[0] if len(named) == 1 else f"{'; '.join(named[:-1])} and {named[-1]}"


def is_broker_url(value: str) -> bool:
    """``value`` starts with a STOMP scheme: a User class's ``host`` that names the broker."""
    scheme = _SCHEME_RE.match(value)
    return scheme is not None and value[: scheme.end() - 3].lower() in SCHEMES


def parse_http_url(value: str, option: str) -> str:
    """An http(s) base URL without credentials and without its trailing '/'."""
    if "@" in value:
        # Before the URL is parsed or quoted: a token may hold '/' or '#', which end urlsplit's userinfo early.
        raise OptionError(
            f"{option}: {mask_userinfo(value)!r}: credentials do not belong in the URL; set LOCUST_INFLUX_TOKEN"
        )
    form = "use e.g. http://127.0.0.1:8086"
    try:
        parts = urlsplit(value)
    except ValueError:  # e.g. an unclosed '[' of an IPv6 address
        raise OptionError(f"{option}: {value!r} is not an http(s) URL; {form}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise OptionError(f"{option}: {value!r} is not an http(s) URL; {form}")
    return value.rstrip("/")
