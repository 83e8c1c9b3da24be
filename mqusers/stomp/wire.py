"""Every frame byte mqusers writes, kept lean for the per-message path.

Every message carries a run id, a producer id, a per-producer sequence number, its send time in
nanoseconds since the epoch, its body size and a CRC-32 of the body. The constant part of each SEND
frame is encoded once per producer; a message costs one small ``%`` format and one join.

Header values read back are kept as they came, STOMP-escaped (:data:`Headers`): the per-message
path reads only mqusers' own headers, which never carry escapes, and hands ack ids and ``reply-to``
back to the broker unchanged; :func:`unescape` gives the real value where one is shown (an ERROR's
message). Cutting the bytes read into frames is :mod:`mqusers.stomp.framing`'s.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Mapping

RUN = b"mq-run"
PRODUCER = b"mq-producer"
SEQ = b"mq-seq"
SENT_NS = b"mq-sent-ns"
SIZE = b"mq-size"
CRC = b"mq-crc32"
DUE_NS = b"mq-due-ns"
CORRELATION = b"correlation-id"
#: A network-demand probe (mqusers/stomp/probe.py): no stamp; every receiver sets it apart, never audits it.
PROBE = b"mq-probe"

#: A frame's headers, values as on the wire (STOMP-escaped); the first of a repeated header wins.
Headers = dict[bytes, bytes]

_ESCAPES = {b"\\n": b"\n", b"\\r": b"\r", b"\\c": b":", b"\\\\": b"\\"}


_ALPHABET = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_TO_ALPHABET = bytes(_ALPHABET[b % len(_ALPHABET)] for b in range(256))


def make_body(size: int) -> bytes:
    """Printable random bytes, so a body survives brokers and tools that treat bodies as text."""
    # All in C: a 64 MiB body takes ~0.2 s, where a per-byte Python loop held the gevent loop for seconds.
    return os.urandom(size).translate(_TO_ALPHABET)


def checksum(body: bytes) -> int:
    return zlib.crc32(body)


def escape(value: str) -> str:
    """STOMP 1.2 header escaping, for the few values that are not known to be plain."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace(":", "\\c")


def escape_bytes(value: bytes) -> bytes:
    if b"\\" in value or b":" in value or b"\n" in value or b"\r" in value:
        return escape(value.decode()).encode()
    return value


def encode_frame(command: str, headers: Mapping[str, str], body: bytes = b"") -> bytes:
    lines = [command, *(f"{escape(k)}:{escape(v)}" for k, v in headers.items())]
    if body:
        lines.append(f"content-length:{len(body)}")
    return ("\n".join(lines) + "\n\n").encode() + body + b"\x00"


def probe_frame(destination: str, token: bytes) -> bytes:
    """A SEND of no body carrying only ``mq-probe: token`` (a network-demand probe)."""
    return b"SEND\ndestination:%s\nmq-probe:%s\ncontent-length:0\n\n\x00" % (escape(destination).encode(), token)


def ack_frame(ack_id: bytes) -> bytes:
    """ACK for a delivery's raw ``ack`` header (cumulative in ``client`` mode)."""
    return b"ACK\nid:%s\n\n\x00" % ack_id


def nack_frame(ack_id: bytes) -> bytes:
    """NACK for a delivery's raw ``ack`` header (``client-individual``: this message only)."""
    return b"NACK\nid:%s\n\n\x00" % ack_id


def reply_frame(reply_to: bytes, correlation: bytes, body: bytes) -> bytes:
    """A responder's answer: the request's body, to its raw ``reply-to``, with its raw correlation id."""
    return b"SEND\ndestination:%s\ncorrelation-id:%s\ncontent-length:%d\n\n%s\x00" % (
        reply_to,
        correlation,
        len(body),
        body,
    )


def due_line(due_ns: int) -> bytes:
    """The header line with a message's due time on the shared schedule (coordinated omission)."""
    return b"%s:%d\n" % (DUE_NS, due_ns)


class SendFrames:
    """Pre-encoded SEND frames from one producer to one destination.

    ``headers`` are extra constant headers (persistent, reply-to...). The per-message part is the
    sequence number, the send time and optionally a receipt and correlation id; with ``expiry``
    (header, ttl ms) also the epoch ms the message expires at, ``ttl`` after its send time (a relative
    time-to-live is constant: one of ``headers``).
    """

    def __init__(self, destination: str, body: bytes, run_id: str, producer_id: str, headers: Mapping[str, str],
                 expiry: tuple[str, int] | None = None):  # fmt: skip
        constant = {
            "destination": destination,
            "content-length": str(len(body)),
            RUN.decode(): run_id,
            PRODUCER.decode(): producer_id,
            SIZE.decode(): str(len(body)),
            CRC.decode(): str(checksum(body)),
            **headers,
        }
        self._head = ("SEND\n" + "".join(f"{k}:{escape(v)}\n" for k, v in constant.items())).encode()
        # The body by reference: a process's producers share their bodies (users/payloads.py).
        self._body = body
        self.body_size = len(body)
        self.producer_id = producer_id.encode()
        self._expiry_line, self._ttl_ms = (b"%s:%%d\n" % expiry[0].encode(), expiry[1]) if expiry else (b"", 0)
        if expiry:  # the plain path keeps its one join, without a test per message
            self.frame = self._expiring_frame  # type: ignore[method-assign]

    def _stamp(self, sent_ns: int) -> bytes:
        """The send time's line, and the expiry's when it is per message."""
        if self._ttl_ms:
            return b"mq-sent-ns:%d\n%s" % (sent_ns, self._expiry_line % (sent_ns // 1_000_000 + self._ttl_ms))
        return b"mq-sent-ns:%d\n" % sent_ns

    def _expiring_frame(self, seq: int, sent_ns: int) -> bytes:
        return self.frame_with(seq, sent_ns, b"")

    def frame(self, seq: int, sent_ns: int) -> bytes:
        return b"".join((self._head, b"mq-seq:%d\nmq-sent-ns:%d\n\n" % (seq, sent_ns), self._body, b"\x00"))

    def frames(self, first: int, count: int, sent_ns: int) -> bytes:
        """Messages ``first`` .. ``first + count - 1``, all stamped ``sent_ns``, as one buffer.

        What lies between two sequence numbers is the same for every message, so the lot is one
        C-level join of the numbers (latin-1 maps every byte to one character and back).
        """
        tail, stamp = b"\n%s\x00" % self._body, self._stamp(sent_ns)
        between = b"\n%s%s%smq-seq:" % (stamp, tail, self._head)
        seqs = between.decode("latin-1").join(map(str, range(first, first + count))).encode("latin-1")
        return b"%smq-seq:%s\n%s%s" % (self._head, seqs, stamp, tail)

    def whole(self, first: int, sent_ns: int, nbytes: int) -> int:
        """How many frames of ``frames(first, ..., sent_ns)`` lie wholly in its first ``nbytes`` bytes."""
        fixed = len(self._head) + len(b"mq-seq:\n") + len(self._stamp(sent_ns)) + len(self._body) + 2
        seq = first
        while nbytes >= fixed + len(str(seq)):
            nbytes -= fixed + len(str(seq))
            seq += 1
        return seq - first

    def frame_with(self, seq: int, sent_ns: int, extra: bytes) -> bytes:
        """``extra`` is pre-encoded header lines, e.g. ``b"receipt:r7\\n"``."""
        if self._ttl_ms:
            extra = self._expiry_line % (sent_ns // 1_000_000 + self._ttl_ms) + extra
        return b"".join((self._head, b"mq-seq:%d\nmq-sent-ns:%d\n" % (seq, sent_ns), extra, b"\n", self._body, b"\x00"))


def receipt_line(receipt: bytes, extra: bytes = b"") -> bytes:
    """``extra`` header lines, then the request for a RECEIPT: one format on the per-message path."""
    return b"%sreceipt:%s\n" % (extra, receipt)


def request_lines(reply_to: bytes, correlation: bytes) -> bytes:
    """The header lines that make a SEND a request: where to reply, and the id the reply echoes."""
    return b"reply-to:%s\ncorrelation-id:%s\n" % (escape_bytes(reply_to), correlation)


def receipted_frame(command: str, headers: Mapping[str, str], receipt: bytes) -> bytes:
    """A control frame (SUBSCRIBE, UNSUBSCRIBE...) that asks for a RECEIPT."""
    return encode_frame(command, {**headers, "receipt": receipt.decode()})


def transaction_line(transaction: bytes) -> bytes:
    """The header line that puts a SEND in a transaction."""
    return b"transaction:%s\n" % transaction


def transaction_frame(command: bytes, transaction: bytes, receipt: bytes = b"") -> bytes:
    """BEGIN, COMMIT or ABORT of ``transaction`` (ids are mqusers' own: nothing to escape), with a RECEIPT asked."""
    asked = b"receipt:%s\n" % receipt if receipt else b""
    return b"%s\ntransaction:%s\n%s\n\x00" % (command, transaction, asked)


def transaction_ack_frame(ack_id: bytes, transaction: bytes) -> bytes:
    """ACK for a delivery's raw ``ack`` header, in ``transaction``: it counts once that commits."""
    return b"ACK\nid:%s\ntransaction:%s\n\n\x00" % (ack_id, transaction)


def disconnect_frame(receipt: bytes) -> bytes:
    """DISCONNECT asking for a RECEIPT: the broker sends it once it has processed every earlier frame."""
    return b"DISCONNECT\nreceipt:%s\n\n\x00" % receipt


def unescape(value: bytes) -> bytes:
    """The real value of a STOMP-escaped header value."""
    if b"\\" not in value:
        return value
    if b"\\\\" not in value:
        # No escaped backslash, so plain replacements cannot misread one escape as another.
        return value.replace(b"\\c", b":").replace(b"\\n", b"\n").replace(b"\\r", b"\r")
    out, index = bytearray(), 0
    while index < len(value):
        pair = value[index : index + 2]
        if pair in _ESCAPES:
            out += _ESCAPES[pair]
            index += 2
        else:
            out += value[index : index + 1]
            index += 1
    return bytes(out)


def connect_frame(host: str, heartbeats: tuple[int, int], login: str | None, passcode: str | None,
                  extra: Mapping[str, str]) -> bytes:  # fmt: skip
    """STOMP 1.2's opening frame, with the ``STOMP`` command as stomp.py sends it.

    Its values are not escaped (STOMP 1.2 exempts CONNECT and CONNECTED, for 1.0 brokers): a line
    break in one would end it early, so it is refused (ValueError, naming the header, not its value).
    """
    headers = {"accept-version": "1.2", "host": host}
    if heartbeats != (0, 0):
        headers["heart-beat"] = f"{heartbeats[0]},{heartbeats[1]}"
    if login is not None:
        headers["login"] = login
    if passcode is not None:
        headers["passcode"] = passcode
    headers.update(extra)
    for key, value in headers.items():
        if "\n" in key + value or "\r" in key + value or ":" in key:
            raise ValueError(f"the CONNECT header {key.splitlines()[0]!r} holds a line break or its name a ':'")
    return ("STOMP\n" + "".join(f"{k}:{v}\n" for k, v in headers.items()) + "\n\x00").encode()
