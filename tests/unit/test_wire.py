import itertools
import zlib

import pytest

from mqusers.stomp.framing import FrameParser, ProtocolError, parse_headers
from mqusers.stomp.wire import (
    SendFrames,
    ack_frame,
    due_line,
    encode_frame,
    escape_bytes,
    make_body,
    reply_frame,
    unescape,
)


def collect() -> tuple[list[tuple[bytes, dict[bytes, bytes], bytes]], FrameParser]:
    frames: list[tuple[bytes, dict[bytes, bytes], bytes]] = []
    return frames, FrameParser(lambda c, h, b, _: frames.append((c, h, b)))


def test_send_frame_carries_every_stamp_header() -> None:
    body = make_body(100)
    frames = SendFrames("/queue/a", body, "run1", "p.1", {"persistent": "true"})
    got, parser = collect()
    parser.feed(frames.frame(7, 1_700_000_000_123_456_789).replace(b"SEND", b"MESSAGE", 1), 0)
    [(command, headers, received)] = got
    assert command == b"MESSAGE" and received == body
    stamp = [headers[k] for k in (b"mq-run", b"mq-producer", b"mq-seq", b"mq-sent-ns", b"mq-size", b"mq-crc32")]
    assert stamp == [b"run1", b"p.1", b"7", b"1700000000123456789", b"100", str(zlib.crc32(body)).encode()]
    assert headers[b"persistent"] == b"true" and headers[b"destination"] == b"/queue/a"


def test_extra_header_lines() -> None:
    frames = SendFrames("/queue/a", b"x", "r", "p", {})
    got, parser = collect()
    parser.feed(frames.frame_with(1, 2, b"receipt:r-9\n"), 0)
    assert got[0][1][b"receipt"] == b"r-9"


def test_body_is_printable() -> None:
    body = make_body(5000)
    assert len(body) == 5000 and body.isalnum()


def test_stream_split_at_every_byte_with_heartbeats_nul_bodies_and_crlf() -> None:
    stream = (
        b"\n\n"
        + encode_frame("MESSAGE", {"destination": "/queue/a"}, b"a\x00b")
        + b"\n"
        + b"RECEIPT\r\nreceipt-id:7\r\n\r\n\x00"
        + b"ERROR\nmessage:no\\cway\n\nbody without length\x00"
    )
    whole, parser = collect()
    parser.feed(stream, 0)
    pieces, piecewise = collect()
    for index in range(len(stream)):
        piecewise.feed(stream[index : index + 1], 0)
    assert whole == pieces
    assert [c for c, _, _ in whole] == [b"MESSAGE", b"RECEIPT", b"ERROR"]
    assert whole[0][2] == b"a\x00b"
    assert whole[1][1] == {b"receipt-id": b"7"}
    assert whole[2][1][b"message"] == b"no\\cway" and whole[2][2] == b"body without length"  # raw
    assert unescape(whole[2][1][b"message"]) == b"no:way"


def test_first_repeated_header_wins() -> None:
    assert parse_headers(b"MESSAGE\nk:first\nk:second")[1] == {b"k": b"first"}


def test_unescaping_and_escaping_round_trip() -> None:
    raw = b"a:b\\c\nd"
    escaped = escape_bytes(raw)
    assert b":" not in escaped and b"\n" not in escaped
    assert parse_headers(b"MESSAGE\nk:" + escaped)[1][b"k"] == escaped  # values stay as on the wire
    assert unescape(escaped) == raw and unescape(b"x\\cy\\nz") == b"x:y\nz"
    assert escape_bytes(b"plain") == b"plain" and unescape(b"plain") == b"plain"


def test_malformed_lines_and_crlf_take_the_careful_path() -> None:
    assert parse_headers(b"MESSAGE\nk:v:w\nz:1")[1] == {b"k": b"v:w", b"z": b"1"}  # a raw ':' (STOMP 1.0 style)
    assert parse_headers(b"MESSAGE\nbare\nz:1")[1] == {b"bare": b"", b"z": b"1"}
    assert parse_headers(b"MESSAGE\r\nk:v\r\nk:later")[1] == {b"k": b"v"}


def test_many_frames_in_one_buffer_equal_the_frames_one_by_one() -> None:
    frames = SendFrames("/queue/a", make_body(100) + bytes(range(256)), "r", "p", {"persistent": "true"})
    assert frames.frames(5, 3, 99) == b"".join(frames.frame(seq, 99) for seq in (5, 6, 7))
    assert frames.frames(9, 1, 42) == frames.frame(9, 42)


def test_whole_frames_in_a_cut_buffer_are_counted_exactly() -> None:
    # Sequence numbers crossing a digit boundary make the frames unequal in length.
    frames = SendFrames("/queue/a", make_body(20) + b"\x00", "r", "p", {})
    data = frames.frames(95, 10, 123)
    ends = list(itertools.accumulate(len(frames.frame(seq, 123)) for seq in range(95, 105)))
    assert ends[-1] == len(data)
    for cut in range(len(data) + 1):
        assert frames.whole(95, 123, cut) == sum(end <= cut for end in ends), cut


def test_content_length_without_nul_is_an_error() -> None:
    _, parser = collect()
    with pytest.raises(ProtocolError, match=r"^MESSAGE frame of content-length 2 is not followed by its NUL: 'c\\x00'"):
        parser.feed(b"MESSAGE\ncontent-length:2\n\nabc\x00", 0)


def test_a_declared_length_over_the_limit_fails_before_any_body_is_kept() -> None:
    _, parser = collect()
    declared = r"^MESSAGE frame declares content-length 2,000,000,000, over the 134,217,728-byte limit"
    with pytest.raises(ProtocolError, match=declared):
        parser.feed(b"MESSAGE\nsubscription:1\ncontent-length:2000000000\n\n" + b"x" * 100, 0)
    frame = encode_frame("MESSAGE", {}, b"y" * 900)
    FrameParser(lambda *_: None, max_frame=len(frame)).feed(frame, 0)  # the limit itself is allowed
    with pytest.raises(ProtocolError, match="over the"):
        FrameParser(lambda *_: None, max_frame=len(frame) - 1).feed(frame, 0)


def test_a_frame_without_length_or_nul_fails_at_the_limit() -> None:
    parser = FrameParser(lambda *_: None, max_frame=1000)
    parser.feed(b"MESSAGE\n\n" + b"z" * 500, 0)
    with pytest.raises(ProtocolError, match=r"^MESSAGE frame without content-length has no NUL within 1,000"):
        parser.feed(b"z" * 600, 0)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x16\x03\x01\x02\x00garbage from a TLS port", r"^not a STOMP command: '\\x16\\x03\\x01\\x02\\x00garbage"),
        (b"HTTP/1.1 400 Bad Request\r\n\r\n", r"^not a STOMP command: 'HTTP/1.1 400 Bad Request\\r\\n\\r\\n'$"),
        (b"MESSAGE\n\n\x00HELLO\nworld", r"^not a STOMP command: 'HELLO\\nworld'$"),
        (b"MESSAGE\ncontent-length:ten\n\n", r"^MESSAGE frame with content-length 'ten': not a length$"),
        (b"MESSAGE\ncontent-length:-1\n\n", r"^MESSAGE frame with content-length '-1': not a length$"),
        (b"MESSAGE\nk:" + b"v" * 1_100_000, r"^MESSAGE frame's headers run past 1,048,576 bytes: 'k:vvv"),
        (b"x" * 5_000_000, r"^not a STOMP command: 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'... \(262,144 bytes\)$"),
    ],
)
def test_what_is_not_stomp_is_named_escaped_and_bounded(data: bytes, message: str) -> None:
    got, parser = collect()
    with pytest.raises(ProtocolError, match=message) as caught:
        for index in range(0, len(data), 256 * 1024):  # as a socket's reads bring it
            parser.feed(data[index : index + 256 * 1024], 0)
    assert len(str(caught.value)) < 200
    assert len(got) == (1 if data.startswith(b"MESSAGE\n\n\x00") else 0)


def test_a_large_frame_in_many_reads_is_held_and_handed_on_once_whole() -> None:
    body = make_body(8 * 1024 * 1024)
    frame = encode_frame("MESSAGE", {"subscription": "1"}, body)
    held = []
    got, parser = collect()
    for index in range(0, len(frame), 64 * 1024):
        parser.feed(frame[index : index + 64 * 1024], 0)
        held.append(parser.pending)
    assert [g[2] for g in got] == [body]
    assert held == [*range(64 * 1024, len(frame), 64 * 1024), 0]  # every byte held until the NUL came


def test_control_frames_hand_back_what_the_broker_sent() -> None:
    assert ack_frame(b"ID\\chost-1\\c2") == b"ACK\nid:ID\\chost-1\\c2\n\n\x00"
    reply = reply_frame(b"/temp-queue/r", b"p-7", b"body")
    assert reply == b"SEND\ndestination:/temp-queue/r\ncorrelation-id:p-7\ncontent-length:4\n\nbody\x00"
    assert due_line(123) == b"mq-due-ns:123\n"
