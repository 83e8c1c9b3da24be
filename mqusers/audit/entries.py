"""The shapes of what the ledgers ship and the audit merges: named fields, JSON- and msgpack-able.

:mod:`mqusers.audit.ledgers` says what each field records; :mod:`mqusers.audit.audit` merges them.
Optional fields are left out when empty, so a run without transactions, selectors, groups, expiry or
NACKs ships what it always did.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NotRequired, TypedDict

from mqusers.audit.intervals import Encoded

#: A multiset of seqs as :meth:`~mqusers.audit.intervals.IntervalBag.encode` or ``pack`` writes it.
EncodedBag = Sequence[Encoded | bytes]


class ProducerEntry(TypedDict):
    """One producer's sends to one destination since the last drain."""

    destination: str
    producer: str
    process: str
    seqs: EncodedBag
    #: ``[seq, sent_ns]`` pairs (up to ten a second: pairs keep the payload small).
    checkpoints: list[list[int]]
    last_ns: int
    unconfirmed: Encoded
    #: Seqs of transactions aborted or rolled back: sent, never to be delivered.
    aborted: Encoded
    #: The ``mqlabel`` it stamps (:mod:`mqusers.options.selectors`); absent or empty: none.
    label: NotRequired[str]
    #: Each message's time-to-live (``--mq-ttl``), when it has one.
    ttl_ns: NotRequired[int]
    #: The message group (``JMSXGroupID``) of all its messages (:mod:`mqusers.options.groups`); absent: none.
    group: NotRequired[str]


class StreamEntry(TypedDict):
    """What one subscription received from one producer."""

    producer: str
    seqs: EncodedBag
    reordered: int
    redelivered: int
    #: Seqs of the ``redelivered`` deliveries, which ``seqs`` leaves out.
    flagged: Encoded
    #: Deliveries (an Audit snapshot's queue subscriptions keep their seqs in the group's QueueEntry).
    deliveries: NotRequired[int]
    #: Deliveries after the message's expiry (:data:`EXPIRY_GRACE_NS`), when there were some.
    late: NotRequired[int]
    #: With message groups: the first and last receive time of these deliveries (the receiver's clock).
    span: NotRequired[list[int]]
    #: NACKed deliveries and their seqs (absent: none).
    nacks: NotRequired[int]
    nacked: NotRequired[Encoded]


class Session(TypedDict):
    joined_ns: int
    left_ns: int | None


class SubscriptionEntry(TypedDict):
    destination: str
    key: str
    kind: str
    durable: bool
    process: str
    sessions: list[Session]
    streams: list[StreamEntry]
    #: Deliveries in ``streams``, from any producer (a queue's share of its group's).
    deliveries: int
    foreign: int
    other_run: int
    drops: int
    #: The labels its selector takes; absent or None: it has no selector.
    selects: NotRequired[list[str] | None]
    #: The broker it was subscribed at, when consumers were not where the producers are; absent: theirs.
    broker: NotRequired[str]
    #: Network-demand probes it was delivered, and sent (absent: none).
    probes: NotRequired[int]
    probes_sent: NotRequired[int]


class QueueEntry(TypedDict):
    """What a destination's queue group received from one producer (in an Audit snapshot)."""

    destination: str
    producer: str
    seqs: EncodedBag
    flagged: Encoded
    nacked: NotRequired[Encoded]


class ShareEntry(TypedDict):
    """What one process's consumers of a queue received, per producer (a worker's packed drain)."""

    destination: str
    producers: list[str]
    #: Each producer's seqs, in ``producers``' order.
    seqs: list[EncodedBag]


class Delta(TypedDict, total=False):
    """What :meth:`Audit.merge` takes: a ledger's drain, both ledgers' drains, or an Audit snapshot."""

    producers: list[ProducerEntry]
    subscriptions: list[SubscriptionEntry]
    queues: list[QueueEntry]
    shares: list[ShareEntry]
