"""The ``--mq-*`` options, each declared once in :data:`OPTIONS` (they fill :mod:`mqusers.options.settings`).

Options reach Locust's own parser, so each works on the command line, in ``locust.conf``, as a
``LOCUST_MQ_*`` env var and in the web UI's custom parameters. Values stay strings in the parser
because the web UI re-types edits by the default's type; :func:`~mqusers.options.settings.read_settings`
validates them once per test and hands plain values on. An empty value means "what the scenario (User class) says".
"""

from __future__ import annotations

from typing import Any

from mqusers.options.faultspec import parse_fault
from mqusers.options.optionspec import Option, register
from mqusers.options.parsing import (
    ACK_MODES,
    BROKERS,
    MAX_CONSUMERS,
    MAX_COUNT,
    MAX_HEARTBEAT_MS,
    MAX_IN_FLIGHT,
    MAX_PREFETCH,
    MAX_RATE,
    MAX_SECONDS,
    MAX_TIMEOUT,
    MIN_RATE,
    OTHER_RUNS,
    REPLY_MODES,
    REQUEST_EVENTS,
    choice,
    decimal,
    parse_bool,
    parse_broker_url,
    parse_broker_urls,
    parse_destination,
    parse_frame_size,
    parse_heartbeats,
    parse_run_id,
    parse_size,
    text,
    whole,
)
from mqusers.options.paths import parse_ca_file, parse_cert_file, parse_key_file
from mqusers.options.payloadspec import parse_payload
from mqusers.options.profile import parse_profile
from mqusers.options.reporttable import REPORT_OPTIONS
from mqusers.options.semantictable import SEMANTIC_OPTIONS
from mqusers.options.sizedist import parse_size_dist

_RATE = decimal(MAX_RATE, minimum=MIN_RATE, zero=True, unit="msg/s")
_SECONDS = decimal(MAX_SECONDS, unit="seconds")

#: Every ``--mq-*`` option, in ``--help`` order. Without ``--mq-host``, ``Settings.broker`` comes from
#: the STOMP User classes' ``host`` or Locust's ``--host`` (:func:`~mqusers.options.settings.read_settings`).
OPTIONS: tuple[Option, ...] = (
    Option(
        "mq-host",
        "broker",
        parse_broker_url,
        "the broker, as for --host (stomp://H:P, stomp+ssl://H:P, ws://H:P/PATH, wss://H:P/PATH, comma-separated "
        "for failover); leaves --host to the HttpUsers of a mixed locustfile",
    ),
    Option(
        "mq-consumer-host",
        "consumer_brokers",
        parse_broker_urls,
        "where consumers connect, when not to --mq-host (a network of brokers: produce on one, consume on another); "
        "the same forms; several, space-separated: the consumers take them in turn",
    ),
    Option(
        "mq-destination",
        "destination",
        parse_destination,
        "destination, e.g. /queue/orders or /topic/prices (at most 255 characters), or a pattern of many: "
        "/queue/orders.{0..9999} (docs/destinations.md)",
    ),
    Option("mq-size", "size", parse_size, "message body size: 100, 646, 1KB, 10KB, 20KB, 1MiB (K = 1024)"),
    Option(
        "mq-size-dist",
        "size_dist",
        parse_size_dist,
        "body sizes drawn from a distribution instead of --mq-size: uniform:MIN,MAX; lognormal:MEDIAN,SIGMA; "
        "choice:SIZE,SIZE,... (64 bodies drawn per process, at most about 16 MiB of them)",
    ),
    Option(
        "mq-payload",
        "payload",
        parse_payload,
        "what bodies are made of: printable (default), random (incompressible bytes), text (compressible words), "
        "json (records), each at --mq-size; template:FILE ({{uuid}} {{int}} {{float}} {{word}} {{variant}} filled); "
        "files:PATH (a file's or a folder's files' bytes)",
    ),
    Option("mq-persistent", "persistent", parse_bool, "send persistent messages (true/false)"),
    Option("mq-durable", "durable", parse_bool, "durable topic subscriptions (true/false)"),
    Option("mq-ack", "ack", choice(ACK_MODES), f"consumer ack mode: {', '.join(ACK_MODES)}"),
    Option(
        "mq-prefetch",
        "prefetch",
        whole(MAX_PREFETCH),
        f"messages the broker may push ahead per consumer (0 = broker default; at most {MAX_PREFETCH:,})",
    ),
    Option(
        "mq-receipts",
        "receipts",
        parse_bool,
        "producers wait for the broker's RECEIPT on every message: sync send (true/false)",
    ),
    Option(
        "mq-in-flight",
        "in_flight",
        whole(MAX_IN_FLIGHT, minimum=1),
        f"with receipts: sends a producer may have awaiting their RECEIPT (1 = each waits for its own, a sync "
        f"send; at most {MAX_IN_FLIGHT:,})",
    ),
    Option(
        "mq-random-start",
        "random_start",
        parse_bool,
        "paced producers wait a random part of their interval before the first message, so many slow ones "
        "spread out instead of sending together (true/false)",
    ),
    Option(
        "mq-rate", "rate", _RATE, f"messages/s per producer user: {MIN_RATE} to {MAX_RATE:,} (0 = as fast as possible)"
    ),
    Option(
        "mq-profile",
        "profile",
        parse_profile,
        "the run-wide rate over time, on the shared schedule: steps:1000/30s,2000/30s; ramp:100,5000,60s; "
        "sine:2000,1000,60s (mean, amplitude, period); csv:FILE (lines seconds,rate[,size]: a size holds from "
        "its line on); the last rate and size hold after",
    ),
    Option(
        "mq-total-rate",
        "total_rate",
        _RATE,
        f"messages/s shared by all producers on all workers, on one schedule (open model): {MIN_RATE} to {MAX_RATE:,}",
    ),
    Option(
        "mq-total-messages",
        "total_messages",
        whole(MAX_COUNT),
        "messages sent in total by all producers on all workers (at most 10^12)",
    ),
    Option(
        "mq-backlog-messages",
        "backlog_messages",
        whole(MAX_COUNT),
        "a backlog run: consumers subscribe only once producers sent this many messages (the build), then drain "
        "it; the report has a section per phase (docs/backlog.md; 0 = not by count)",
    ),
    Option(
        "mq-backlog-seconds",
        "backlog_seconds",
        _SECONDS,
        "a backlog run: consumers subscribe only after this many seconds of build (with --mq-backlog-messages: "
        "whichever comes first; 0 = not by time)",
    ),
    Option(
        "mq-backlog-drain-rate",
        "backlog_drain_rate",
        _RATE,
        "a backlog run: the consumers take at most this many messages/s in all (each ACK held until its turn, a "
        "small prefetch; docs/backlog.md); 0 = as fast as they can",
    ),
    Option(
        "mq-drain-idle",
        "drain",
        _SECONDS,
        "idle timeout of the drain at the end: the run waits until every message arrived or none came for this "
        f"many seconds (at most {MAX_SECONDS:,})",
        default="5",
        alias="mq-drain",
    ),
    Option(
        "mq-drain-max",
        "drain_max",
        _SECONDS,
        "at most this many seconds of drain after -t, the web UI's stop or Ctrl-C",
        default="30",
    ),
    Option(
        "mq-other-runs",
        "other_runs",
        choice(OTHER_RUNS),
        f"messages of other runs or without mqusers headers: {', '.join(OTHER_RUNS)} (apart: counted apart; fail: "
        "also Locust failures; receive: other runs' messages count as received, e.g. draining a backlog)",
    ),
    # The field keeps the User class attribute's name, which locustfiles set (and the JSON report shows).
    Option(
        "mq-messages",
        "max_messages",
        whole(MAX_COUNT),
        "messages each producer user sends, then idles (0 = until the run ends; at most 10^12)",
    ),
    Option(
        "mq-per-connection",
        "per_connection",
        whole(MAX_COUNT, minimum=1),
        "connection churn: messages each churning user sends (or receives) on one connection, then it "
        "disconnects and connects again (at least 1)",
    ),
    Option(
        "mq-churn-pause",
        "churn_pause",
        _SECONDS,
        f"connection churn: seconds a churning user waits between a disconnect and its next connect (at most "
        f"{MAX_SECONDS:,})",
    ),
    Option("mq-consumers", "consumers", whole(MAX_CONSUMERS), "consumer (or responder) users; the other users produce"),
    Option("mq-user", "user", text, "broker login (or env LOCUST_MQ_USER)"),
    # Not in the web UI: Locust would embed an env-supplied value in the page as the field's default.
    Option(
        "mq-password",
        "password",
        text,
        "broker passcode: set env LOCUST_MQ_PASSWORD rather than the command line",
        ui=False,
        secret=True,
        file="mq-password-file",
        file_help="file holding the broker passcode",
        strip=False,
    ),
    Option(
        "mq-heartbeats",
        "heartbeats",
        parse_heartbeats,
        f"STOMP heart-beats SEND_MS,RECEIVE_MS, each 0 to {MAX_HEARTBEAT_MS:,} (0,0: none); a broker silent "
        "for 2.5 receive periods is dropped, so the default notices a partition within 10 s",
        default="10000,4000",
    ),
    Option("mq-vhost", "vhost", text, "virtual host sent in the CONNECT host header (RabbitMQ)", default="/"),
    # "broker" is the address (--mq-host); this option picks the dialect spoken to it.
    Option(
        "mq-dialect",
        "dialect",
        choice(BROKERS),
        f"broker dialect: {', '.join(BROKERS)} (auto reads the CONNECTED server header)",
        default="auto",
        alias="mq-broker",
    ),
    Option(
        "mq-reply-to",
        "reply_to",
        choice(REPLY_MODES),
        f"request/reply: replies to a temporary queue or to a queue per requester ({', '.join(REPLY_MODES)})",
    ),
    Option(
        "mq-timeout",
        "timeout",
        decimal(MAX_TIMEOUT, minimum=0.001, unit="seconds"),
        f"seconds to wait for CONNECTED, RECEIPT or a reply: 0.001 to {MAX_TIMEOUT:,}",
        default="10",
    ),
    Option(
        "mq-max-frame",
        "max_frame",
        parse_frame_size,
        "largest frame read from the broker, 64KB to 1024MiB: a larger one is a failure and drops the connection",
        default="128MiB",
        ui=False,
    ),
    Option(
        "mq-run-id",
        "run_id",
        parse_run_id,
        "run id put on every message: 1 to 64 of A-Z a-z 0-9 . _ - (default: generated at test start)",
        ui=False,
    ),
    Option(
        "mq-ca-file",
        "ca_file",
        parse_ca_file,
        "PEM file of the CA (or self-signed certificate) to verify a stomp+ssl or wss broker",
        ui=False,
    ),
    Option(
        "mq-cert-file",
        "cert_file",
        parse_cert_file,
        "PEM client certificate for a stomp+ssl or wss broker that asks for one (its key in it or in --mq-key-file)",
        ui=False,
    ),
    Option(
        "mq-key-file",
        "key_file",
        parse_key_file,
        "PEM private key (unencrypted) of --mq-cert-file, when not in that file",
        ui=False,
    ),
    Option(
        "mq-request-events",
        "request_events",
        choice(REQUEST_EVENTS),
        "per-message successes to Locust: bulk (its stats updated from mqusers' exact aggregates every"
        " 0.2 s; request listeners see failures only) or per-message (an event each; more CPU per message)",
        default="bulk",
    ),
    Option(
        "mq-warmup",
        "warmup",
        _SECONDS,
        f"seconds at the start left out of every figure, Locust's stats too (the audit counts them; at most "
        f"{MAX_SECONDS:,})",
    ),
    Option(
        "mq-fault",
        "faults",
        parse_fault,
        "TIME:COMMAND, repeatable: run COMMAND (no shell; its output captured, secrets masked) TIME into the "
        "test (30s, 1m30s), e.g. 20s:kill -STOP 1234; marked in every report. Master or local runner only",
        ui=False,
        master_writes=True,
        repeat=True,
    ),
    *SEMANTIC_OPTIONS,
    *REPORT_OPTIONS,
)

#: Settings fields that are never shown: not in a log, not in the JSON report.
SECRET_FIELDS = frozenset(option.field for option in OPTIONS if option.secret)


def add_arguments(parser: Any) -> Any:
    """Register the ``--mq-*`` options on Locust's parser; returns their argument group."""
    group = parser.add_argument_group("mqusers", "STOMP messaging parameters (empty = the scenario's default)")
    register(group, OPTIONS)
    return group
