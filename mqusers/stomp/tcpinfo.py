"""Whether the broker's host still acknowledges what we send: the kernel's TCP state of one socket.

A send that does not move has two causes a user must tell apart: the broker stopped reading
(producer flow control, a full store, a stalled process) while its host still acknowledges, or
nothing answers at all (a network partition, a dead host). The first leaves every byte sent
acknowledged and the kernel probing a closed window; the second leaves bytes unacknowledged while
no ACK arrives. Linux says which in ``TCP_INFO``: ``tcpi_unacked`` and ``tcpi_last_ack_recv``.
"""

from __future__ import annotations

import socket
import struct
from typing import Protocol

#: ``struct tcp_info``: 8 u8 fields (state ... wscale), then u32s from offset 8: rto, ato, snd_mss, rcv_mss,
#: unacked, sacked, lost, retrans, fackets, last_data_sent, last_ack_sent, last_data_recv, last_ack_recv.
_TCP_INFO = getattr(socket, "TCP_INFO", None)
#: Outstanding bytes with no ACK for this long: the peer's host is not answering (the retransmission
#: timer fires from 200 ms). A peer that only closed its window has acknowledged every byte sent.
SILENT_MS = 1000


class HasSockOpt(Protocol):
    def getsockopt(self, level: int, option: int, buflen: int, /) -> bytes: ...


def unanswered(sock: HasSockOpt) -> bool | None:
    """True while segments sent to the peer's host go unacknowledged for ``SILENT_MS``; False while
    it answers; None where the kernel does not say (not Linux, not TCP, the socket closed)."""
    if _TCP_INFO is None:
        return None
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, _TCP_INFO, 104)
    except (OSError, ValueError, AttributeError):
        return None
    if len(info) < 60:
        return None
    fields: tuple[int, ...] = struct.unpack_from("12x13I", info)
    unacked, last_ack_recv_ms = fields[3], fields[11]
    return bool(unacked > 0 and last_ack_recv_ms >= SILENT_MS)
