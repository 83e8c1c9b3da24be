"""Cutting the bytes read from a broker into frames, by content-length, without regexes.

``bytes.find``/``split`` in C: stomp.py's regex-per-header parser spends about half of its receive
CPU there (see ``benchmarks/``). Header values stay STOMP-escaped (:data:`mqusers.stomp.wire.Headers`).
"""

from __future__ import annotations

from collections.abc import Callable

from mqusers.errors import MqusersError
from mqusers.options.parsing import MAX_FRAME_DEFAULT
from mqusers.stomp.wire import Headers

#: ``handler(command, headers, body, received_ns)``: ``received_ns`` is when the bytes were read.
FrameHandler = Callable[[bytes, Headers, bytes, int], None]


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


class ProtocolError(MqusersError, ValueError):
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

    def unended(self, silent_s: float) -> ProtocolError:
        """The failure of a frame begun and left unfinished by a peer silent for ``silent_s``."""
        head = self._chunks[0] if self._chunks else self._pending.lstrip(b"\r\n")
        short = self._need - 1 - self._buffered  # _need counts the NUL after the body
        missing = f"{short:,} bytes short of its content-length" if self._need and short > 0 else "no NUL"
        return ProtocolError(
            f"{_command(head)} frame never ended: {self.pending:,} bytes of it, then nothing for {silent_s:g} s"
            f" ({missing})"
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
