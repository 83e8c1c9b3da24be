"""services/network.py's and services/artemis_cluster.py's configuration without starting a broker."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import services
from services import activemq, artemis_cluster, network
from services.base import Ctx, ServiceError

A, B, C = network.NAMES


def ctx(name: str, folder: Path, offset: int = 0) -> Ctx:
    base = network.PORTS.get(name, {"stomp": 61613, "openwire": 61616})
    return Ctx(name=name, dir=folder / name, ports={key: port + offset for key, port in base.items()}, offset=offset)


@pytest.mark.parametrize(("duplex", "dials"), [("true", (2, 1, 0)), ("false", (2, 2, 2))])
def test_duplex_links_are_dialled_once_a_pair_one_way_links_by_each_broker(
    duplex: str, dials: tuple[int, int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MQUSERS_NETWORK_DUPLEX", duplex)
    monkeypatch.setenv("MQUSERS_NETWORK_CONDUIT", "false")
    for name, count in zip(network.NAMES, dials, strict=True):
        member = ctx(name, tmp_path, 3000)
        text = activemq.write_config(member, False, network=network.connectors(member)).read_text()
        assert text.count("<networkConnector ") == count
        assert 'advisorySupport="true"' in text  # the last of a duplex mesh dials none and still carries demand
        assert text.count(f'duplex="{duplex}"') == count and text.count('conduitSubscriptions="false"') == count
        assert "tcp://127.0.0.1:6164" not in text  # peers at the same port offset as this broker
    assert 'advisorySupport="false"' in activemq.write_config(ctx("activemq", tmp_path), False).read_text()


@pytest.mark.parametrize(("duplex", "dials"), [("true", ((B,), (C,), ())), ("false", ((B,), (A, C), (B,)))])
def test_a_line_links_neighbours_only_and_lets_messages_cross_two_links(
    duplex: str, dials: tuple[tuple[str, ...], ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MQUSERS_NETWORK_SHAPE", "line")
    monkeypatch.setenv("MQUSERS_NETWORK_DUPLEX", duplex)
    for name, peers in zip(network.NAMES, dials, strict=True):
        assert tuple(network.dialed(name, duplex == "true", line=True)) == peers
        text = network.connectors(ctx(name, tmp_path))
        assert text.count("<networkConnector ") == len(peers) and text.count('networkTTL="2"') == len(peers)
    monkeypatch.setenv("MQUSERS_NETWORK_SHAPE", "mesh")
    assert 'networkTTL="1"' in network.connectors(ctx(A, tmp_path))  # the direct link: one crossing
    monkeypatch.setenv("MQUSERS_NETWORK_TTL", "2")
    assert 'networkTTL="2"' in network.connectors(ctx(A, tmp_path))


def test_a_setting_that_is_neither_true_nor_false_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MQUSERS_NETWORK_CONDUIT", "yes")
    with pytest.raises(ServiceError, match="MQUSERS_NETWORK_CONDUIT is true or false, not 'yes'"):
        network.connectors(ctx(network.NAMES[0], tmp_path))
    monkeypatch.setenv("MQUSERS_NETWORK_CONDUIT", "true")
    monkeypatch.setenv("MQUSERS_NETWORK_SHAPE", "ring")
    with pytest.raises(ServiceError, match="MQUSERS_NETWORK_SHAPE is mesh or line, not 'ring'"):
        network.connectors(ctx(network.NAMES[0], tmp_path))


def test_each_artemis_cluster_node_names_the_other_two_and_redistributes_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    b = artemis_cluster.NAMES[1]
    assert artemis_cluster.peers(b, "127.0.0.1", 1000) == ["tcp://127.0.0.1:62766", "tcp://127.0.0.1:62786"]
    assert len({port for name in artemis_cluster.NAMES for port in services.ports(name).values()}) == 18
    made = '<address-settings>\n   <address-setting match="#">\n      <dead-letter-address>DLQ'
    edited = artemis_cluster.redistributed(made)
    assert '<address-setting match="#">\n            <redistribution-delay>0</redistribution-delay>' in edited
    assert artemis_cluster.redistributed(edited) == edited
    with pytest.raises(ServiceError, match="no longer holds one"):
        artemis_cluster.redistributed("<address-settings/>")
    assert artemis_cluster.balancing() == "ON_DEMAND"
    monkeypatch.setenv("MQUSERS_CLUSTER_BALANCING", "strict")
    assert artemis_cluster.balancing() == "STRICT"
    monkeypatch.setenv("MQUSERS_CLUSTER_BALANCING", "round-robin")
    with pytest.raises(ServiceError, match="MQUSERS_CLUSTER_BALANCING is one of ON_DEMAND, STRICT"):
        artemis_cluster.balancing()


def test_a_member_started_while_another_runs_joins_the_network_as_that_one_was_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B started as a line runs (a process whose environment names B's folder, as the launcher's does); A started
    again with nothing in its environment is a line too; with B gone, the default mesh; the environment wins."""
    monkeypatch.setenv("MQUSERS_NETWORK_SHAPE", "line")
    network.connectors(ctx(B, tmp_path))  # records B's settings in its folder
    monkeypatch.delenv("MQUSERS_NETWORK_SHAPE")
    b = subprocess.Popen(["sleep", "30"], env={"HOLDS": f"{tmp_path / B}/"})
    try:
        (tmp_path / B / "pid").write_text(f"{b.pid}\n")
        assert network.connectors(ctx(A, tmp_path)).count('networkTTL="2"') == 1  # A-B only: a line's
        monkeypatch.setenv("MQUSERS_NETWORK_TTL", "3")
        assert 'networkTTL="3"' in network.connectors(ctx(A, tmp_path))
        monkeypatch.delenv("MQUSERS_NETWORK_TTL")
    finally:
        b.kill()
        b.wait()
    assert network.connectors(ctx(A, tmp_path)).count('networkTTL="1"') == 2  # a mesh: A dials B and C
