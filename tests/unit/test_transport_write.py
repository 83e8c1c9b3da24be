"""A write cut short over a real TCP socket: what the kernel took reaches the peer, nothing follows it."""

import socket

import gevent
import pytest
from gevent.event import Event

from mqusers.options.parsing import parse_broker_url
from mqusers.stomp.seam import ClientConfig, Listener
from mqusers.stomp.transport import StompTransport


def test_an_interrupted_write_says_what_left_and_refuses_to_write_after_it() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(10)
    reading, received = Event(), bytearray()

    def broker() -> None:
        conn, _ = server.accept()
        conn.recv(4096)  # CONNECT
        conn.sendall(b"CONNECTED\nversion:1.2\n\n\x00")
        reading.wait()  # a broker that stopped reading (flow control, a memory alarm) until now
        while chunk := conn.recv(1 << 20):
            received.extend(chunk)
        conn.close()

    peer = gevent.spawn(broker)
    answered = Event()
    listener = Listener(lambda *_: False, lambda headers: answered.set(), lambda: None, lambda: 0.0, lambda _: None)
    config = ClientConfig(parse_broker_url(f"stomp://127.0.0.1:{server.getsockname()[1]}"), timeout=5)
    connection = StompTransport().open(config, {}, listener)
    assert answered.wait(5)
    data = bytes(range(256)) * (256 * 1024)  # 64 MB: more than both sockets can buffer (tcp_rmem max 32 MB)
    writer = gevent.spawn(connection.send, data)
    with gevent.Timeout(5):
        while not (connection.in_send and connection.accepted):  # the kernel took what fits; the rest waits
            gevent.sleep(0.001)
    writer.kill()  # the User stopped in its blocked send
    left = connection.accepted
    assert 0 < left < len(data)
    with pytest.raises(OSError, match="interrupted write"):
        connection.send(b"DISCONNECT\n\n\x00")  # it would read as the rest of the cut frame
    connection.close()
    reading.set()
    peer.get(timeout=10)
    # Closing sent what the kernel held: the broker read exactly the bytes said to have left.
    assert bytes(received) == data[:left]
