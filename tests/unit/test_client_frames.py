"""The client's own frame bytes (receipts, requests, control frames, DISCONNECT) read back as a broker would."""

from mqusers.stomp.framing import FrameParser
from mqusers.stomp.wire import (
    Headers,
    SendFrames,
    disconnect_frame,
    receipt_line,
    receipted_frame,
    request_lines,
    unescape,
)


def read(data: bytes) -> list[tuple[bytes, Headers, bytes]]:
    frames: list[tuple[bytes, Headers, bytes]] = []
    FrameParser(lambda c, h, b, _: frames.append((c, h, b))).feed(data, 0)
    return frames


def test_a_sync_send_asks_for_its_receipt_after_the_extra_lines() -> None:
    frames = SendFrames("/queue/a", b"body", "r", "p", {})
    [(command, headers, body)] = read(frames.frame_with(3, 4, receipt_line(b"mq-7", b"mq-due-ns:5\n")))
    assert (command, body) == (b"SEND", b"body")
    assert (headers[b"receipt"], headers[b"mq-due-ns"], headers[b"mq-seq"]) == (b"mq-7", b"5", b"3")


def test_a_request_names_its_reply_destination_escaped_and_its_correlation_id() -> None:
    lines = request_lines(b"/queue/odd:name", b"p-1")
    assert lines == b"reply-to:/queue/odd\\cname\ncorrelation-id:p-1\n"
    [(_, headers, _)] = read(SendFrames("/queue/a", b"body", "r", "p", {}).frame_with(1, 2, lines))
    assert (unescape(headers[b"reply-to"]), headers[b"correlation-id"]) == (b"/queue/odd:name", b"p-1")


def test_control_frames_ask_for_a_receipt() -> None:
    [(command, headers, _)] = read(receipted_frame("SUBSCRIBE", {"destination": "/queue/a", "id": "s1"}, b"mq-2"))
    assert command == b"SUBSCRIBE"
    assert headers == {b"destination": b"/queue/a", b"id": b"s1", b"receipt": b"mq-2"}
    assert read(disconnect_frame(b"mq-bye-3")) == [(b"DISCONNECT", {b"receipt": b"mq-bye-3"}, b"")]
