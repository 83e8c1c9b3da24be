"""services/artemis.py and activemq6.py: the pinned download is verified and cached, without a network."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from services import activemq6, artemis
from services.base import ServiceError, reachable_by_others


def test_artemis_tarball_with_a_wrong_sha512_is_refused_and_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(artemis, "cache_dir", lambda: tmp_path)
    monkeypatch.setattr(artemis, "maven", lambda *args: pytest.fail("the tarball is cached: no download"))
    tarball = tmp_path / artemis.TARBALL
    tarball.write_bytes(b"not the distribution")
    with pytest.raises(ServiceError, match="does not match its pinned SHA-512"):
        artemis.prepare()
    assert not tarball.exists()
    assert not artemis.home().exists()


def test_activemq6_uses_its_cached_jars_without_maven(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(activemq6, "cache_dir", lambda: tmp_path)
    monkeypatch.setattr(activemq6, "maven", lambda *args: pytest.fail("the jars are cached: no download"))
    activemq6.lib().mkdir()
    (activemq6.lib() / ".complete").touch()
    activemq6.prepare()


def test_activemq6_cache_folder_follows_the_pom(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = activemq6.lib()
    pom = tmp_path / "pom.xml"
    pom.write_text(activemq6.POM.read_text().replace(activemq6.VERSION, "6.1.7"))
    monkeypatch.setattr(activemq6, "POM", pom)
    assert activemq6.lib() != before  # a changed pom never reuses the old jars


def test_a_service_user_may_traverse_but_not_read_the_folders_above_its_own(tmp_path: Path) -> None:
    """A clone under ``mktemp -d`` (0700) hid RabbitMQ's folder from its user: "eacces" on the cookie."""
    hidden = tmp_path / "clone"
    own = hidden / ".services" / "rabbitmq"
    own.mkdir(parents=True)
    hidden.chmod(0o700)
    reachable_by_others(own)
    assert stat.S_IMODE(hidden.stat().st_mode) == 0o701  # search only: nothing listed to others
    assert stat.S_IMODE(tmp_path.stat().st_mode) & stat.S_IXOTH
