"""STOMP over WebSocket against a real local peer: the upgrade (path, v12.stomp), STOMP frames spanning and
sharing WebSocket messages both ways, heart-beats, pings, refusals in words, wss verified by default, a
bounded upgrade, a clean close both ways, the URL forms."""

from __future__ import annotations

import shutil
import socket
import time
from pathlib import Path

import gevent
import pytest
from gevent.event import AsyncResult
from wsproto import ConnectionType
from wsproto.connection import Connection

from mqusers.options.parsing import BrokerAddress, OptionError, parse_broker_url
from mqusers.stomp.client import StompClient
from mqusers.stomp.heartbeats import GRACE
from mqusers.stomp.link import Link
from mqusers.stomp.seam import ClientConfig, Listener, Unreachable
from mqusers.stomp.transport import StompTransport
from mqusers.stomp.websocket import WebSocketStream, split_frames
from mqusers.stomp.wire import Headers, SendFrames, ack_frame
from tests.unit.socket_peer import Peer, certificate, closed_port
from tests.unit.ws_peer import WsPeer

needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make a certificate")
CONNECTED = b"CONNECTED\nversion:1.2\n\n\x00"


class Events:
    def __init__(self) -> None:
        self.frames: list[tuple[bytes, Headers, bytes]] = []
        self.connected: AsyncResult = AsyncResult()
        self.disconnected: AsyncResult = AsyncResult()
        self.protocol_error: AsyncResult = AsyncResult()
        self._wanted: tuple[int, AsyncResult] | None = None
        self.listener = Listener(self._frame, self.connected.set, lambda: self.disconnected.set(time.monotonic()),
                                 lambda: 0.0, self.protocol_error.set)  # fmt: skip

    def _frame(self, command: bytes, headers: Headers, body: bytes, received_ns: int) -> bool:
        self.frames.append((command, headers, body))
        if self._wanted is not None and len(self.frames) >= self._wanted[0]:
            self._wanted[1].set()
        return False

    def wait_frames(self, count: int) -> list[tuple[bytes, Headers, bytes]]:
        arrived: AsyncResult = AsyncResult()
        self._wanted = (count, arrived)
        if len(self.frames) < count:
            arrived.get(timeout=5)
        return self.frames


def opened(
    peer: WsPeer, config: ClientConfig, connected: tuple[bytes | str, ...] = (CONNECTED,)
) -> tuple[Link, Events]:
    events = Events()
    opening = gevent.spawn(StompTransport().open, config, {}, events.listener)
    peer.accept()
    link = opening.get(timeout=5)
    peer.read_until(b"\x00")
    peer.send(*connected)
    events.connected.get(timeout=5)
    return link, events


def test_the_upgrade_asks_the_path_and_v12_stomp_and_connect_goes_in_a_text_message() -> None:
    peer = WsPeer(path="/ws")
    link, _ = opened(peer, peer.config(user="u", password="p"))
    request = peer.requested()
    assert (request.target, request.subprotocols, request.host) == ("/ws", ["v12.stomp"], f"127.0.0.1:{peer.port}")
    assert len(peer.messages) == 1 and peer.texts == [peer.messages[0].decode()]
    assert peer.messages[0].startswith(b"STOMP\naccept-version:1.2\nhost:/\n")
    assert peer.messages[0].endswith(b"\x00")
    link.close()
    peer.close()


def test_stomp_frames_may_span_or_share_websocket_messages_and_text_messages_are_their_bytes() -> None:
    peer = WsPeer()
    body = "é€ body".encode()
    message = b"MESSAGE\ndestination:/queue/a\nmessage-id:1\nsubscription:0\ncontent-length:%d\n\n%s\x00" % (
        len(body), body)  # fmt: skip
    # CONNECTED cut in three messages (one cut inside a header), then two frames in one text message
    # (RabbitMQ's default frame type), then a frame whose body spans binary and text messages.
    link, events = opened(peer, peer.config(), (CONNECTED[:4], CONNECTED[4:13], CONNECTED[13:]))
    peer.send((message + b"RECEIPT\nreceipt-id:7\n\n\x00").decode())
    peer.send(message[:-10], message[-10:-9], message[-9:].decode())  # the first cut inside "é"
    assert [(c, h.get(b"receipt-id"), b) for c, h, b in events.wait_frames(4)] == [
        (b"CONNECTED", None, b""),
        (b"MESSAGE", None, body),
        (b"RECEIPT", b"7", b""),
        (b"MESSAGE", None, body),
    ]
    # Each frame of a write is one message (ActiveMQ Classic reads only a message's first frame), in
    # text (it drops binary messages), but bytes that are not UTF-8 can only go binary.
    link.send(b"SEND\ndestination:/queue/a\n\nx\x00SEND\ndestination:/queue/a\n\ny\x00")
    link.send(b"SEND\ndestination:/queue/a\ncontent-length:2\n\n\xff\xfe\x00")
    peer.read_until(b"\x00", count=4)
    assert peer.messages[1:] == [
        b"SEND\ndestination:/queue/a\n\nx\x00",
        b"SEND\ndestination:/queue/a\n\ny\x00",
        b"SEND\ndestination:/queue/a\ncontent-length:2\n\n\xff\xfe\x00",
    ]
    assert peer.texts[1:] == [peer.messages[1].decode(), peer.messages[2].decode()]
    link.close()
    peer.close()


def test_heart_beats_go_both_ways_as_messages_and_a_silent_broker_is_dropped() -> None:
    peer = WsPeer()
    link, events = opened(peer, peer.config(heartbeats=(100, 100)),
                          (b"CONNECTED\nversion:1.2\nheart-beat:200,50\n\n\x00",))  # fmt: skip
    peer.read_until(b"\n", count=peer.received.count(b"\n") + 3)  # ours: a beat every 100 ms, one message each
    assert peer.messages[-3:] == [b"\n"] * 3
    last_beat = 0.0
    for _ in range(int(3 * GRACE * 0.2 / 0.1)):  # the broker's beats every 100 ms keep it up
        peer.send(b"\n")
        last_beat = time.monotonic()
        gevent.sleep(0.1)  # the peer's own beat schedule, not a wait for the client
        assert not events.disconnected.ready()
    silent_for = events.disconnected.get(timeout=5) - last_beat
    assert silent_for >= GRACE * 0.2 - 0.01, silent_for
    peer.wait_closed()
    assert link.reader is not None and link.reader.dead
    peer.close()


def test_a_ping_is_answered_and_a_close_ends_cleanly_from_either_side() -> None:
    peer = WsPeer()
    link, events = opened(peer, peer.config())
    peer.ping(b"are you there")
    peer.send(b"RECEIPT\nreceipt-id:1\n\n\x00")  # after the ping: read once the pong was sent
    events.wait_frames(2)
    peer.read_until(b"\x00")
    while not peer.pongs:
        peer._pump(5)
    assert peer.pongs == [b"are you there"]
    link.close()  # ours: a close frame (1000), then the socket's end
    events.disconnected.get(timeout=5)
    peer.wait_closed()
    assert peer.close_code == 1000
    peer.close()
    # The broker's close frame: the client answers it and the connection ends.
    peer = WsPeer()
    link, events = opened(peer, peer.config())
    peer.close_ws()
    events.disconnected.get(timeout=5)
    peer.wait_closed()
    assert peer.close_code == 1000
    with pytest.raises(OSError):
        link.send(b"SEND\ndestination:/queue/a\n\nx\x00")
    peer.close()


def test_broken_websocket_frames_are_a_protocol_error() -> None:
    peer = WsPeer()
    _, events = opened(peer, peer.config())
    peer.peer.send(b"\x8f\x00")  # a frame with a reserved opcode
    assert events.protocol_error.get(timeout=5).startswith("WebSocket: ")
    events.disconnected.get(timeout=5)
    peer.close()


def test_a_refused_upgrade_says_why_for_each_host() -> None:
    rejecting, dead = WsPeer(), closed_port()
    config = ClientConfig(parse_broker_url(f"ws://127.0.0.1:{dead}/stomp,{rejecting.url()}"), timeout=5)
    opening = gevent.spawn(StompTransport().open, config, {}, Events().listener)
    rejecting.reject(404)
    with pytest.raises(Unreachable) as refused:
        opening.get(timeout=5)
    assert str(refused.value) == (
        f"127.0.0.1:{dead}: Connection refused; "
        f"127.0.0.1:{rejecting.port}: WebSocket: the broker answered HTTP 404 to /stomp"
    )
    rejecting.close()
    # A plain STOMP port answers the upgrade with a STOMP ERROR, not HTTP.
    plain = Peer()
    opening = gevent.spawn(StompTransport().open, ClientConfig(parse_broker_url(f"ws://127.0.0.1:{plain.port}/"),
                                                               timeout=5), {}, Events().listener)  # fmt: skip
    plain.read_until(b"\r\n\r\n")
    plain.send(b"ERROR\nmessage:Unknown STOMP action: GET\n\n\x00")
    with pytest.raises(Unreachable, match=r"^WebSocket: no HTTP upgrade at / \(.*\); is it a WebSocket port\?$"):
        opening.get(timeout=5)
    plain.close()


def test_an_upgrade_never_answered_is_bounded_by_the_timeout() -> None:
    silent = WsPeer()
    config = ClientConfig(parse_broker_url(silent.url()), timeout=0.3)
    started = time.monotonic()
    with pytest.raises(Unreachable, match="timed out"):
        StompTransport().open(config, {}, Events().listener)
    assert 0.25 < time.monotonic() - started < 2
    silent.close()


@needs_openssl
def test_wss_refuses_an_untrusted_certificate_by_default_and_trusts_the_given_ca(tmp_path: Path) -> None:
    cert = certificate(tmp_path)
    untrusted = WsPeer(cert)
    with pytest.raises(Unreachable, match=r"^TLS: self-signed certificate; --mq-ca-file names the CA to trust$"):
        StompTransport().open(untrusted.config("wss"), {}, Events().listener)
    untrusted.close()
    trusted = WsPeer(cert)
    link, _ = opened(trusted, trusted.config("wss", ca_file=str(cert[0])))
    assert trusted.messages[0].startswith(b"STOMP\n")
    link.close()
    trusted.wait_closed()
    assert trusted.close_code == 1000
    trusted.close()


def test_a_client_publishes_and_disconnects_over_websocket() -> None:
    peer = WsPeer()
    client = StompClient(peer.config(), lambda **_: None)
    connecting = gevent.spawn(client.connect)
    peer.accept()
    peer.read_until(b"\x00")
    peer.send(CONNECTED)
    connecting.get(timeout=5)
    disconnecting = gevent.spawn(client.disconnect)
    stream = peer.read_until(b"DISCONNECT")
    receipt = stream.split(b"receipt:", 1)[1].split(b"\n", 1)[0]
    peer.read_until(b"\x00", count=2)
    peer.send(b"RECEIPT\nreceipt-id:" + receipt + b"\n\n\x00")
    disconnecting.get(timeout=5)
    peer.wait_closed()
    assert peer.close_code == 1000
    peer.close()


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("ws://127.0.0.1:15674/ws", BrokerAddress((("127.0.0.1", 15674),), ssl=False, paths=("/ws",))),
        ("wss://mq:61619", BrokerAddress((("mq", 61619),), ssl=True, paths=("/",))),
        ("ws://a:1/stomp,b:2/x", BrokerAddress((("a", 1), ("b", 2)), paths=("/stomp", "/x"))),
        ("stomp://a:1,b:2", BrokerAddress((("a", 1), ("b", 2)))),
    ],
)
def test_websocket_urls_name_each_hosts_path(url: str, address: BrokerAddress) -> None:
    assert parse_broker_url(url) == address
    assert parse_broker_url(str(address)) == address
    assert address.websocket == url.startswith("ws")


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ws://a:1/stomp,stomp://b:2", "mixes schemes"),
        ("wss://a:1,ws://b:2", "mixes schemes"),
        ("stomp://a:1/stomp", "is not a broker address"),
        ("ws://a:1/stomp?x=1", "is not a broker address"),
        ("ws://a/stomp", "has no port"),
        ("http://a:1/stomp", "has scheme 'http'"),
    ],
)
def test_bad_websocket_urls_are_refused_in_one_line(url: str, why: str) -> None:
    with pytest.raises(OptionError, match=why) as refused:
        parse_broker_url(url)
    assert "ws://HOST:PORT/PATH" in str(refused.value) or "port" in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_websocket_byte_stream_is_what_a_link_reads_and_writes() -> None:
    # The plain transport's streams stay sockets: only ws and wss are upgraded.
    peer = Peer()
    link, _ = (lambda e: (StompTransport().open(peer.config(), {}, e.listener), e))(Events())
    assert isinstance(link._sock, socket.socket)
    link.close()
    peer.close()


def test_a_write_is_cut_into_the_frames_mqusers_encoded() -> None:
    frames = SendFrames("/queue/a", b"\x00body\x00", "run", "p1", {})  # NULs in a body: content-length says
    many = frames.frames(1, 3, 123)
    acks = ack_frame(b"m1") + ack_frame(b"m2")
    cut = split_frames(many + b"\n" + acks + b"\r\n")
    assert cut == [frames.frame(1, 123), frames.frame(2, 123), frames.frame(3, 123), b"\n",
                   ack_frame(b"m1"), ack_frame(b"m2"), b"\r\n"]  # fmt: skip
    assert split_frames(b"\n") == [b"\n"]
    assert split_frames(ack_frame(b"m1")) == [ack_frame(b"m1")]


class CuttingSocket:
    """A socket whose writes fail after ``room`` bytes, as a connection reset mid-write would."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.written = b""

    def send(self, data: memoryview) -> int:
        if not self.room:
            raise ConnectionResetError(104, "Connection reset by peer")
        taken = bytes(data[: self.room])
        self.written += taken
        self.room -= len(taken)
        return len(taken)


def test_a_write_cut_short_counts_only_the_frames_whose_messages_went_whole() -> None:
    acks = [ack_frame(b"m1"), ack_frame(b"m2"), ack_frame(b"m3")]
    message = len(acks[0]) + 6  # a masked text message: 2 bytes of header, 4 of mask
    for room, accepted, then in [(2 * message + 5, 24, "half-written"), (2 * message, 24, "reset"),
                                 (10, None, "half-written")]:  # fmt: skip
        sock = CuttingSocket(room)
        stream = WebSocketStream(sock, Connection(ConnectionType.CLIENT))  # type: ignore[arg-type]
        if accepted is None:  # not one message whole: the write's own error
            with pytest.raises(ConnectionResetError):
                stream.send(b"".join(acks))
        else:  # what went whole, as a socket's short write: the link writes the rest, or knows it is cut
            assert stream.send(b"".join(acks)) == accepted == 2 * len(acks[0])
        with pytest.raises(OSError, match=then):
            stream.send(acks[2])
