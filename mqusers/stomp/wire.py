"""What mqusers puts on the wire and how it reads it back, kept lean for the per-message path.

Every message carries a run id, a producer id, a per-producer sequence number, its send time in
nanoseconds since the epoch, its body size and a CRC-32 of the body. The constant part of each SEND
frame is encoded once per producer; a message costs one small ``%`` format and one join.

The receive side parses frames by content-length with ``bytes.find``/``split``: stomp.py's
regex-per-header parser spends about half of its receive CPU there (see ``benchmarks/``). Header
values are kept as they came, STOMP-escaped (:data:`Headers`): the per-message path reads only
mqusers' own headers, which never carry escapes, and hands ack ids and ``reply-to`` back to the
broker unchanged; :func:`unescape` gives the real value where one is shown (an ERROR's message).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Mapping

from mqusers.options.parsing import MAX_FRAME_DEFAULT

RUN = b"mq-run"
PRODUCER = b"mq-producer"
SEQ = b"mq-seq"
SENT_NS = b"mq-sent-ns"
SIZE = b"mq-size"
CRC = b"mq-crc32"
DUE_NS = b"mq-due-ns"
CORRELATION = b"correlation-id"

#: A frame's headers, values as on the wire (STOMP-escaped); the first of a repeated header wins.
Headers = dict[bytes, bytes]
#: ``handler(command, headers, body, received_ns)``: ``received_ns`` is when the bytes were read.
FrameHandler = Callable[[bytes, Headers, bytes, int], None]

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


def ack_frame(ack_id: bytes) -> bytes:
    """ACK for a delivery's raw ``ack`` header (cumulative in ``client`` mode)."""
    return b"ACK\nid:%s\n\n\x00" % ack_id


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
    sequence number, the send time and optionally a receipt and correlation id.
    """

    def __init__(self, destination: str, body: bytes, run_id: str, producer_id: str, headers: Mapping[str, str]):
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
        self._tail = b"\n" + body + b"\x00"
        self.body_size = len(body)
        self.producer_id = producer_id.encode()

    def frame(self, seq: int, sent_ns: int) -> bytes:
        return b"".join((self._head, b"mq-seq:%d\nmq-sent-ns:%d\n" % (seq, sent_ns), self._tail))

    def frames(self, first: int, count: int, sent_ns: int) -> bytes:
        """Messages ``first`` .. ``first + count - 1``, all stamped ``sent_ns``, as one buffer.

        What lies between two sequence numbers is the same for every message, so the lot is one
        C-level join of the numbers (latin-1 maps every byte to one character and back).
        """
        between = b"\nmq-sent-ns:%d\n%s%smq-seq:" % (sent_ns, self._tail, self._head)
        seqs = between.decode("latin-1").join(map(str, range(first, first + count))).encode("latin-1")
        return b"%smq-seq:%s\nmq-sent-ns:%d\n%s" % (self._head, seqs, sent_ns, self._tail)

    def whole(self, first: int, sent_ns: int, nbytes: int) -> int:
        """How many frames of ``frames(first, ..., sent_ns)`` lie wholly in its first ``nbytes`` bytes."""
        fixed = len(self._head) + len(b"mq-seq:\nmq-sent-ns:%d\n" % sent_ns) + len(self._tail)
        seq = first
        while nbytes >= fixed + len(str(seq)):
            nbytes -= fixed + len(str(seq))
            seq += 1
        return seq - first

    def frame_with(self, seq: int, sent_ns: int, extra: bytes) -> bytes:
        """``extra`` is pre-encoded header lines, e.g. ``b"receipt:r7\\n"``."""
        return b"".join((self._head, b"mq-seq:%d\nmq-sent-ns:%d\n" % (seq, sent_ns), extra, self._tail))


def receipt_line(receipt: bytes, extra: bytes = b"") -> bytes:
    """``extra`` header lines, then the request for a RECEIPT: one format on the per-message path."""
    return b"%sreceipt:%s\n" % (extra, receipt)


def request_lines(reply_to: bytes, correlation: bytes) -> bytes:
    """The header lines that make a SEND a request: where to reply, and the id the reply echoes."""
    return b"reply-to:%s\ncorrelation-id:%s\n" % (escape_bytes(reply_to), correlation)


def receipted_frame(command: str, headers: Mapping[str, str], receipt: bytes) -> bytes:
    """A control frame (SUBSCRIBE, UNSUBSCRIBE...) that asks for a RECEIPT."""
    return encode_frame(command, {**headers, "receipt": receipt.decode()})


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


def parse_headers(block: bytes) -> tuple[bytes, Headers]:
    """The command and raw headers of a frame's header block (no trailing blank line)."""
    if b"\r" not in block:
        # All in C: one split on both separators. Lines are "key:value" with escaped values
        # (STOMP 1.2), so there are exactly two parts per line; a raw ':' or a line without one
        # changes the count (only both in one frame would cancel out: no broker sends that).
        parts = block.replace(b"\n", b":").split(b":")
        if len(parts) == 2 * block.count(b"\n") + 1:
            # The first occurrence of a repeated header wins, so fill from the end.
            return parts[0], dict(zip(parts[-2:0:-2], parts[-1:0:-2], strict=False))
    lines = block.replace(b"\r\n", b"\n").split(b"\n")
    headers: Headers = {}
    for line in reversed(lines[1:]):  # a line without ':' or with a raw one: read as stomp.py does
        key, _, value = line.partition(b":")
        headers[key] = value
    return lines[0], headers


#: A header block this long is not a broker's: ActiveMQ and RabbitMQ refuse headers far shorter.
MAX_HEADER_BYTES = 1024 * 1024
#: Every STOMP 1.2 command (client frames too: the unit tests' broker reads the client's frames).
COMMANDS = frozenset(
    b"CONNECTED MESSAGE RECEIPT ERROR SEND SUBSCRIBE UNSUBSCRIBE ACK NACK BEGIN COMMIT ABORT DISCONNECT CONNECT"
    b" STOMP".split()
)
#: The longest command line, with its CR.
_COMMAND_LINE_MAX = max(map(len, COMMANDS)) + 1


class ProtocolError(ValueError):
    """What the broker sent is not STOMP; the message says what, in one line, the bytes escaped."""


def shown(data: bytes, limit: int = 40) -> str:
    """The first bytes of ``data``, escaped and bounded, for an error line."""
    text = repr(bytes(data[:limit]))[2:-1]
    return f"'{text}'" + (f"... ({len(data):,} bytes)" if len(data) > limit else "")


def _command(frame: bytes) -> str:
    """The command of a frame whose first line was checked to be one."""
    return frame[: frame.find(b"\n")].rstrip(b"\r").decode("ascii")


class FrameParser:
    """Splits a byte stream into frames and hands each to ``handler(command, headers, body, received_ns)``.

    Heart-beat EOLs between frames are skipped. Frames without content-length end at the first NUL.
    ``received_ns`` is the time the caller read the bytes that completed the frame: latency is
    measured to there, not to when mqusers got round to the frame.

    A frame's bytes are copied once however many reads bring them: an unfinished body waits as a
    list of reads, joined when its content-length (or a NUL) has arrived. What is not STOMP raises
    :class:`ProtocolError`: an unknown command, a header block over :data:`MAX_HEADER_BYTES`, a frame
    over ``max_frame`` (declared or streamed), a content-length that is not a number or not followed
    by its NUL. The parser is then spent: the caller drops the connection.
    """

    def __init__(self, handler: FrameHandler, max_frame: int = MAX_FRAME_DEFAULT):
        self._handler = handler
        self._max_frame = max_frame
        self._pending = b""
        #: An unfinished frame's reads (the first from the frame's start), while its body arrives.
        self._chunks: list[bytes] = []
        self._buffered = 0
        #: Bytes the unfinished frame needs in all; 0: it has no content-length, a NUL ends it.
        self._need = 0

    @property
    def pending(self) -> int:
        """Bytes of an unfinished frame held (heart-beat EOLs left out)."""
        return self._buffered if self._chunks else len(self._pending.lstrip(b"\r\n"))

    def feed(self, data: bytes, received_ns: int) -> None:
        if self._chunks:
            self._chunks.append(data)
            self._buffered += len(data)
            if self._need and self._buffered < self._need:
                return
            if not self._need and b"\x00" not in data:
                if self._buffered > self._max_frame:
                    raise self._no_nul(self._chunks[0])
                return
            buffer = b"".join(self._chunks)
            self._chunks, self._buffered = [], 0
        else:
            buffer = self._pending + data if self._pending else data
        handler, size, start = self._handler, len(buffer), 0
        while True:
            while start < size and buffer[start] in (10, 13):
                start += 1
            newline = buffer.find(b"\n", start)
            if newline < 0:
                if size - start > _COMMAND_LINE_MAX:
                    raise ProtocolError(f"not a STOMP command: {shown(buffer[start:])}")
                break
            if newline > start and buffer[newline - 1] == 13:
                blank = buffer.find(b"\r\n\r\n", start)
                body_start = blank + 4
            else:
                blank = buffer.find(b"\n\n", start)
                body_start = blank + 2
            if blank < 0:
                self._unfinished_head(buffer, start, newline)
                break
            command, headers = parse_headers(buffer[start:blank])
            if command not in COMMANDS:
                raise ProtocolError(f"not a STOMP command: {shown(buffer[start:])}")
            length = headers.get(b"content-length")
            if length is not None:
                body_end = body_start + self._length(command, length, body_start - start)
                if body_end >= size:
                    self._wait(buffer, start, body_end + 1 - start)
                    return
                if buffer[body_end] != 0:
                    raise ProtocolError(
                        f"{command.decode()} frame of content-length {int(length):,} is not followed by its NUL:"
                        f" {shown(buffer[body_end:], 24)} after its body"
                    )
            else:
                body_end = buffer.find(b"\x00", body_start)
                if body_end < 0:
                    self._wait(buffer, start, 0)
                    return
            handler(command, headers, buffer[body_start:body_end], received_ns)
            start = body_end + 1
        self._pending = buffer[start:]

    def _length(self, command: bytes, value: bytes, head: int) -> int:
        """The body length a frame declares, checked against the limit before any of it is kept."""
        try:
            length = int(value)
        except ValueError:
            length = -1
        if length < 0:
            raise ProtocolError(f"{command.decode()} frame with content-length {shown(value)}: not a length")
        if head + length + 1 > self._max_frame:
            raise ProtocolError(
                f"{command.decode()} frame declares content-length {length:,}, over the {self._max_frame:,}-byte"
                " limit (--mq-max-frame)"
            )
        return length

    def _unfinished_head(self, buffer: bytes, start: int, newline: int) -> None:
        """Headers not yet ended: their command must be one, and they stay under MAX_HEADER_BYTES."""
        if buffer[start:newline].rstrip(b"\r") not in COMMANDS:
            raise ProtocolError(f"not a STOMP command: {shown(buffer[start:])}")
        if len(buffer) - start > MAX_HEADER_BYTES:
            raise ProtocolError(
                f"{_command(buffer[start:])} frame's headers run past {MAX_HEADER_BYTES:,} bytes:"
                f" {shown(buffer[newline + 1 :])}"
            )

    def _no_nul(self, frame: bytes) -> ProtocolError:
        return ProtocolError(
            f"{_command(frame)} frame without content-length has no NUL within {self._max_frame:,} bytes"
            " (--mq-max-frame)"
        )

    def _wait(self, buffer: bytes, start: int, need: int) -> None:
        """Keep an unfinished frame's bytes until ``need`` of them (0: a NUL) have arrived."""
        rest = buffer[start:]
        if not need and len(rest) > self._max_frame:
            raise self._no_nul(rest)
        self._chunks, self._buffered, self._need, self._pending = [rest], len(rest), need, b""
