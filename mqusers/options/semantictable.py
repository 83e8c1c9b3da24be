"""The ``--mq-*`` options of STOMP's semantics under load: selectors, message groups, priorities, NACKs, expiry
and transactions (docs/semantics.md). Declared once here; :data:`mqusers.options.table.OPTIONS` includes them.
"""

from __future__ import annotations

from mqusers.options.groups import MAX_GROUPS
from mqusers.options.optionspec import Option
from mqusers.options.parsing import MAX_COUNT, decimal, parse_ttl, whole
from mqusers.options.priorities import parse_priorities
from mqusers.options.selectors import MAX_LABELS, parse_select

#: More NACKs of one message than any broker's maximum redeliveries.
MAX_NACK_TIMES = 1_000

SEMANTIC_OPTIONS: tuple[Option, ...] = (
    Option(
        "mq-labels",
        "labels",
        whole(MAX_LABELS),
        f"producer user i stamps its messages mqlabel: L<i mod N>, a property selectors can take (at most "
        f"{MAX_LABELS:,}; 0 = no label)",
    ),
    Option(
        "mq-groups",
        "groups",
        whole(MAX_GROUPS),
        f"message groups: producer user i sends all its messages in group mqusers.g<i mod N> (JMSXGroupID), "
        f"which the broker gives one consumer at a time (at most {MAX_GROUPS:,}; 0 = none); ActiveMQ and Artemis",
    ),
    Option(
        "mq-select",
        "select",
        parse_select,
        "consumers subscribe with a selector on the labels: all (every label: the selector's cost alone), own "
        "(consumer j takes L<j mod N>), a list such as L0,L2 (the rest are not selected) or none (no selector); "
        "ActiveMQ and Artemis",
    ),
    Option(
        "mq-priorities",
        "priorities",
        parse_priorities,
        "message priorities in a backlog run: message seq gets level seq mod K of K (2 to 10), sent as priority "
        "0 to 9; the report counts inversions and latency per priority (docs/semantics.md; 0 = none)",
    ),
    Option(
        "mq-nack-ratio",
        "nack_ratio",
        decimal(1),
        "consumers NACK this share of the messages, chosen by seq (0.1: seqs 10, 20, ...); needs --mq-ack "
        "client-individual; ActiveMQ dead-letters a NACKed message, RabbitMQ redelivers it (0 = none)",
    ),
    Option(
        "mq-nack-times",
        "nack_times",
        whole(MAX_NACK_TIMES, minimum=1),
        f"with --mq-nack-ratio: NACK each chosen message this many times, then accept it (at most {MAX_NACK_TIMES:,})",
    ),
    Option(
        "mq-ttl",
        "ttl_ms",
        parse_ttl,
        "messages expire this long after their send: 500ms, 2s, 1m (0 = never); those the broker drops unread "
        "are expired, not lost, and one delivered after its expiry fails the run (docs/semantics.md#expiry)",
    ),
    Option(
        "mq-tx-size",
        "tx_size",
        whole(MAX_COUNT),
        "transactions: messages a transaction producer sends in each transaction (BEGIN, SENDs, then COMMIT or "
        "ABORT with a receipt); 0 sends without transactions",
    ),
    Option(
        "mq-tx-abort-ratio",
        "tx_abort_ratio",
        decimal(1.0),
        "transactions: the share of each producer's transactions it aborts, 0 to 1, spread evenly (0.25: every 4th); "
        "their messages must never arrive",
    ),
    Option(
        "mq-tx-ack",
        "tx_ack",
        whole(MAX_COUNT),
        "transactions: consumers send their ACKs in transactions of this many, each committed with a receipt "
        "(auto acks become client-individual); 0 acknowledges without transactions",
    ),
)
