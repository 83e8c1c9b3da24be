"""mqusers' own transport over real local sockets: failover hosts in order, each one's error kept; CONNECT;
the broker's ERROR before CONNECTED; heart-beats both ways; TLS verified by default; a close that leaves
nothing behind."""

from __future__ import annotations

from locust.argument_parser import get_parser

import argparse
import gc
import os
import shutil
import struct
import time
from pathlib import Path

import gevent
import pytest
from gevent.event import AsyncResult

from mqusers.options.parsing import OptionError, parse_broker_url
from mqusers.options.settings import read_settings
from mqusers.run.context import client_config
from mqusers.stomp import heartbeats, tls
from mqusers.stomp.client import MqError, StompClient
from mqusers.stomp.framing import parse_headers
from mqusers.stomp.heartbeats import GRACE, HeartBeats, negotiate
from mqusers.stomp.link import Link
from mqusers.stomp.seam import ClientConfig, Listener, Unreachable
from mqusers.stomp.tcpinfo import unanswered
from mqusers.stomp.transport import StompTransport
from mqusers.stomp.wire import Headers, connect_frame
from tests.unit.socket_peer import Peer, certificate, closed_port

needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make a certificate")


class Events:
    """A listener that keeps what the connection reported."""

    def __init__(self) -> None:
        self.frames: list[tuple[bytes, Headers]] = []
        self.connected: AsyncResult = AsyncResult()
        self.disconnected: AsyncResult = AsyncResult()
        self.protocol_errors: list[str] = []
        self.listener = Listener(self._frame, self.connected.set, lambda: self.disconnected.set(time.monotonic()),
                                 lambda: 0.0, self.protocol_errors.append)  # fmt: skip

    def _frame(self, command: bytes, headers: Headers, body: bytes, received_ns: int) -> bool:
        self.frames.append((command, headers))
        return False


def opened(
    peer: Peer, config: ClientConfig, connected: bytes = b"CONNECTED\nversion:1.2\n\n\x00"
) -> tuple[Link, Events]:
    events = Events()
    link = StompTransport().open(config, {}, events.listener)
    peer.read_until(b"\x00")
    peer.send(connected)
    events.connected.get(timeout=5)
    return link, events


def sent_connect(peer: Peer) -> tuple[bytes, Headers]:
    block = bytes(peer.received).split(b"\n\n", 1)[0]
    return parse_headers(block)


def test_each_failover_host_is_tried_in_order_and_each_ones_error_is_kept() -> None:
    first, second = closed_port(), closed_port()
    config = ClientConfig(parse_broker_url(f"stomp://127.0.0.1:{first},stomp://127.0.0.1:{second}"), timeout=5)
    with pytest.raises(Unreachable) as refused:
        StompTransport().open(config, {}, Events().listener)
    assert str(refused.value) == (f"127.0.0.1:{first}: Connection refused; 127.0.0.1:{second}: Connection refused")
    peer = Peer()
    config = ClientConfig(parse_broker_url(f"stomp://127.0.0.1:{first},{peer.url()}"), timeout=5, user="u",
                          password="p:w", vhost="/", heartbeats=(0, 0))  # fmt: skip
    events = Events()
    link = StompTransport().open(config, {"client-id": "c1"}, events.listener)
    peer.read_until(b"\x00")  # the dead first host was skipped: the second got the CONNECT
    command, headers = sent_connect(peer)
    assert command == b"STOMP"
    assert headers == {b"accept-version": b"1.2", b"host": b"/", b"login": b"u", b"passcode": b"p:w",
                       b"client-id": b"c1"}  # fmt: skip
    link.close()
    peer.close()


def test_a_line_break_in_a_connect_value_is_refused_without_showing_it() -> None:
    with pytest.raises(ValueError, match="'passcode' holds a line break") as refused:
        connect_frame("/", (0, 0), "u", "secret\nDISCONNECT", {})
    assert "secret" not in str(refused.value)


def test_an_error_before_connected_is_the_brokers_refusal_and_the_link_closes_itself() -> None:
    peer = Peer()
    events = Events()
    StompTransport().open(peer.config(), {}, events.listener)
    peer.read_until(b"\x00")
    peer.send(b"ERROR\nmessage:Authentication failed\n\nUser name [u] or password is invalid.\x00")
    # The broker keeps its end open: the link ends the connection itself.
    events.disconnected.get(timeout=5)
    assert events.frames == [(b"ERROR", {b"message": b"Authentication failed"})]
    assert not events.connected.ready()
    peer.wait_closed()
    peer.close()


def test_a_client_refused_by_an_error_says_the_brokers_words() -> None:
    peer = Peer()
    client = StompClient(peer.config(), lambda **_: None)
    connecting = gevent.spawn(client.connect)
    peer.read_until(b"\x00")
    peer.send(b"ERROR\nmessage:Authentication failed\n\nUser name [u] or password is invalid.\x00")
    with pytest.raises(MqError) as refused:
        connecting.get(timeout=5)
    assert str(refused.value) == (
        f"broker at {peer.url()} refused the connection: Authentication failed: User name [u] or password is invalid."
    )
    peer.close()


@pytest.mark.parametrize(
    ("ours", "theirs", "agreed"),
    [
        ((100, 100), b"200,50", (100, 200)),  # each side the slower of what one offers and the other wants
        ((100, 0), b"0,300", (300, 0)),
        ((0, 100), b"200,200", (0, 200)),
        ((100, 100), b"0,0", (0, 0)),
        ((100, 100), None, (0, 0)),  # no header: the broker beats not
        ((100, 100), b"x,1", (0, 0)),
    ],
)
def test_heart_beat_intervals_are_negotiated_as_stomp_says(ours: tuple[int, int], theirs: bytes | None,
                                                           agreed: tuple[int, int]) -> None:  # fmt: skip
    assert negotiate(ours, theirs) == agreed


def test_heart_beats_go_both_ways_and_a_silent_broker_is_dropped_after_the_grace() -> None:
    peer = Peer()
    link, events = opened(
        peer, peer.config(heartbeats=(100, 100)), b"CONNECTED\nversion:1.2\nheart-beat:200,50\n\n\x00"
    )
    assert sent_connect(peer)[1][b"heart-beat"] == b"100,100"
    frame_lines = peer.received.count(b"\n")
    peer.read_until(b"\n", count=frame_lines + 3)  # ours: beats within every 100 ms, nothing else written
    assert bytes(peer.received).endswith(b"\x00\n\n\n")
    # The broker beats every 200 ms: for three grace periods the connection stays up.
    receive_s = 0.2
    last_beat = 0.0
    for _ in range(int(3 * GRACE * receive_s / 0.1)):
        peer.send(b"\n")
        last_beat = time.monotonic()
        gevent.sleep(0.1)  # the peer's own beat schedule, not a wait for the client
        assert not events.disconnected.ready()
    silent_for = events.disconnected.get(timeout=5) - last_beat  # then silence: dropped
    assert silent_for >= GRACE * receive_s - 0.01, silent_for
    peer.wait_closed()
    assert link.reader is not None and link.reader.dead
    peer.close()


@pytest.mark.parametrize(
    ("begun", "missing"),
    [
        (b"MESSAGE\nsubscription:s\n\nhello", "no NUL"),
        (b"MESSAGE\nsubscription:s\ncontent-length:50\n\nhello", "45 bytes short of its content-length"),
    ],
    ids=["no-nul", "short-body"],
)
def test_a_frame_begun_and_never_ended_drops_the_connection_naming_it(begun: bytes, missing: str) -> None:
    """A peer that starts a frame and goes quiet held the reader for ever: a run of 15 s took 38.9 s."""
    peer = Peer()
    link, events = opened(peer, peer.config(timeout=0.3))
    began = time.monotonic()
    peer.send(begun)
    events.disconnected.get(timeout=5)
    assert 0.3 <= time.monotonic() - began < 3
    assert events.protocol_errors == [f"MESSAGE frame never ended: {len(begun)} bytes of it, then nothing for 0.3 s"
                                      f" ({missing})"]  # fmt: skip
    link.close()
    peer.close()


def test_a_quiet_broker_between_frames_is_waited_for() -> None:
    peer = Peer()
    link, events = opened(peer, peer.config(timeout=0.2))
    gevent.sleep(0.6)  # longer than the timeout: nothing begun, nothing owed
    peer.send(b"MESSAGE\nsubscription:s\n\nhi\x00")
    gevent.sleep(0.1)
    assert not events.disconnected.ready() and events.frames[-1][0] == b"MESSAGE"
    link.close()
    peer.close()


def test_our_beats_go_twice_per_agreed_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    """ActiveMQ checks once per interval that something arrived: one beat per interval drifts across its check."""
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 3:
            raise OSError("done")  # the beat loop's way out: the connection is gone

    monkeypatch.setattr(heartbeats.gevent, "sleep", sleep)
    HeartBeats.__dict__["_beat"].__func__(4000 / 1000 / heartbeats.BEATS_PER_INTERVAL, lambda: None)
    assert slept == [2.0, 2.0, 2.0]


def test_the_kernel_says_a_peer_that_stopped_reading_still_acknowledges() -> None:
    """A broker that stops reading (flow control) leaves our send stuck, but its host answers: not a partition."""
    import socket

    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname())
    accepted, _ = server.accept()  # never read: the window closes, the kernel probes it and is answered
    client.setblocking(False)
    sent = 0
    try:
        while True:
            sent += client.send(b"x" * 65536)
    except BlockingIOError:
        pass
    assert sent > 0
    checks = []
    for _ in range(8):  # the zero-window probes back off (0.2, 0.4, 0.8 s...): look across them
        time.sleep(0.25)
        checks.append(unanswered(client))
    assert checks == [False] * 8
    for sock in (client, accepted, server):
        sock.close()
    assert unanswered(client) is None  # closed: the kernel says nothing


class _Info:
    """``TCP_INFO`` as the kernel lays it out: 8 bytes, then u32s from rto on."""

    def __init__(self, unacked: int, last_ack_recv_ms: int) -> None:
        u32 = [0] * 23
        u32[4], u32[12] = unacked, last_ack_recv_ms
        self.info = bytes(8) + struct.pack("23I", *u32)

    def getsockopt(self, level: int, option: int, buflen: int, /) -> bytes:
        return self.info[:buflen]


@pytest.mark.parametrize(
    ("unacked", "last_ack_ms", "verdict"),
    [(0, 5000, False), (3, 200, False), (3, 999, False), (3, 1000, True), (40, 9000, True)],
    ids=["window-closed", "in-flight", "just-before", "silent-1s", "partition"],
)
def test_unacknowledged_bytes_with_no_ack_for_a_second_are_an_unanswering_host(
    unacked: int, last_ack_ms: int, verdict: bool
) -> None:
    assert unanswered(_Info(unacked, last_ack_ms)) is verdict


@needs_openssl
def test_tls_refuses_an_untrusted_certificate_by_default_and_trusts_the_given_ca(tmp_path: Path) -> None:
    cert = certificate(tmp_path)
    untrusted = Peer(cert)
    with pytest.raises(Unreachable, match=r"^TLS: self-signed certificate; --mq-ca-file names the CA to trust$"):
        StompTransport().open(untrusted.config("stomp+ssl"), {}, Events().listener)
    untrusted.close()
    trusted = Peer(cert)
    link, _ = opened(trusted, trusted.config("stomp+ssl", ca_file=str(cert[0])))
    assert sent_connect(trusted)[0] == b"STOMP"
    link.close()
    trusted.close()


def test_a_tls_url_to_a_plaintext_peer_says_so_once_its_silence_outlasts_the_handshake_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tls, "HANDSHAKE_S", 0.3)
    plain = Peer()  # reads the ClientHello, answers nothing: a STOMP port waiting for CONNECT
    began = time.monotonic()
    with pytest.raises(Unreachable, match=rf"^TLS: no answer to the handshake within 0.3 s: is 127.0.0.1:{plain.port} "
                       r"a plaintext STOMP port\? \(stomp:// for it"):  # fmt: skip
        StompTransport().open(plain.config("stomp+ssl"), {}, Events().listener)
    assert time.monotonic() - began < 3  # its bound, not the connect timeout's 5 s
    plain.close()


@needs_openssl
def test_a_broker_that_asks_for_a_client_certificate_gets_the_one_given(tmp_path: Path) -> None:
    server, client = certificate(tmp_path), certificate(tmp_path, "mqusers-client")
    peer = Peer(server, client_ca=client[0])
    config = peer.config("stomp+ssl", ca_file=str(server[0]), cert_file=str(client[0]), key_file=str(client[1]))
    link, _ = opened(peer, config)
    assert dict(rdn[0] for rdn in peer.conn().getpeercert()["subject"]) == {"commonName": "mqusers-client"}  # type: ignore[attr-defined]
    link.close()
    peer.close()


def parse(*args: str) -> argparse.Namespace:
    return get_parser(default_config_files=[]).parse_args(["-f", "x.py", *args])


@needs_openssl
def test_client_certificate_options_are_checked_before_load(tmp_path: Path) -> None:
    (cert, key), (_, other_key) = certificate(tmp_path), certificate(tmp_path / "other")
    settings = read_settings(parse("--mq-cert-file", str(cert), "--mq-key-file", str(key)), "stomp+ssl://h:1")
    assert (client_config(settings).cert_file, client_config(settings).key_file) == (str(cert), str(key))
    with pytest.raises(OptionError, match=r"^--mq-key-file: needs --mq-cert-file"):
        read_settings(parse("--mq-key-file", str(key)), "stomp+ssl://h:1")
    with pytest.raises(OptionError, match=r"^--mq-cert-file: cannot load .* with its key \(KEY_VALUES_MISMATCH\)$"):
        read_settings(parse("--mq-cert-file", str(cert), "--mq-key-file", str(other_key)), "stomp+ssl://h:1")
    with pytest.raises(OptionError, match=r"^--mq-cert-file: cannot read '/nowhere.pem'; give the client's PEM"):
        read_settings(parse("--mq-cert-file", "/nowhere.pem"), "stomp+ssl://h:1")


def open_files() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def heart_beat_greenlets() -> list[gevent.Greenlet]:
    """The live greenlets running a connection's heart-beats."""
    found = [g for g in gc.get_objects() if isinstance(g, gevent.Greenlet) and not g.dead]
    return [g for g in found if getattr(getattr(g, "_run", None), "__qualname__", "").startswith("HeartBeats.")]


@needs_openssl
def test_a_closed_tls_link_leaves_no_file_and_no_greenlet_behind(tmp_path: Path) -> None:
    cert = certificate(tmp_path)
    for round_ in range(2):  # the first round loads what stays (CA store, resolver): the second is judged
        peer = Peer(cert)
        before = open_files()
        config = peer.config("stomp+ssl", ca_file=str(cert[0]), heartbeats=(50, 50))
        link, events = opened(peer, config, b"CONNECTED\nversion:1.2\nheart-beat:50,50\n\n\x00")
        peer.read_until(b"\n", count=peer.received.count(b"\n") + 1)  # the beats run
        beating = heart_beat_greenlets()
        assert len(beating) == 2  # one sends ours, one watches the broker's
        link.close()
        events.disconnected.get(timeout=5)
        assert link.reader is not None and link.reader.dead
        assert gevent.joinall(beating, timeout=5) == beating
        peer.close()
        if round_:
            # The link's socket and the peer's two are closed, and nothing else was opened (a
            # socketpair, stomp.py 9's TLS send queue, stayed open).
            assert open_files() - before == set()
            assert len(open_files()) == len(before) - 1
