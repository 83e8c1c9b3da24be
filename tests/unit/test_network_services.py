"""services/network.py's configuration without starting a broker: who dials whom, and every member's advisories."""

from __future__ import annotations

from pathlib import Path

import pytest

from services import activemq, network
from services.base import Ctx, ServiceError


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


def test_a_setting_that_is_neither_true_nor_false_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MQUSERS_NETWORK_CONDUIT", "yes")
    with pytest.raises(ServiceError, match="MQUSERS_NETWORK_CONDUIT is true or false, not 'yes'"):
        network.connectors(ctx(network.NAMES[0], tmp_path))
