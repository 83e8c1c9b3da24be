"""Every service port stays out of Linux's ephemeral range, where an outgoing client socket may already hold it."""

from __future__ import annotations

from pathlib import Path

import services

DEFAULT_EPHEMERAL = range(32768, 61000)  # Linux's default net.ipv4.ip_local_port_range, 32768-60999
HELPER_OFFSETS = (0, 3000, 3200, 3400, 3600)  # a second set of services beside the first (MQUSERS_PORT_OFFSET)


def _this_machines_ephemeral() -> range:
    low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    return range(int(low), int(high) + 1)


def test_no_service_listens_where_a_client_socket_may_be_bound() -> None:
    ports = {
        (service.name, key, offset): port + offset
        for service in services.SERVICES.values()
        for key, port in service.base_ports.items()
        for offset in HELPER_OFFSETS
    }
    for ephemeral in (DEFAULT_EPHEMERAL, _this_machines_ephemeral()):
        assert {where: port for where, port in ports.items() if port in ephemeral} == {}
    assert max(ports.values()) <= 65535
