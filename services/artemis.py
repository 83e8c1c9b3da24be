"""ActiveMQ Artemis from its binary distribution on Maven Central: fetched, verified, one instance per folder.

The distribution (pinned version, SHA-512 checked) is unpacked once into ``<project>/.services/cache/``;
``artemis create`` makes the instance in the service's folder, with every acceptor on 127.0.0.1 at
its default port + ``PORT_SHIFT`` + MQUSERS_PORT_OFFSET. ``bin/artemis run`` execs the JVM, so the
PID we record is the broker's.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tarfile
from collections.abc import Callable, Sequence
from pathlib import Path

from .base import Ctx, ServiceError, cache_dir, cache_lock, maven, port_open, spawn, stomp_handshake
from .control import Service

VERSION = "2.40.0"
ARTIFACT = f"org.apache.activemq:apache-artemis:{VERSION}:tar.gz:bin"
TARBALL = f"apache-artemis-{VERSION}-bin.tar.gz"
# Maven Central's apache-artemis-2.40.0-bin.tar.gz.sha512 , compared equal when pinned.
SHA512 = (
    "270a00dc3028fb3b93c6aa09aa3e40fbe76015029e5308e0aac241589299a72d"
    "ac9bb50a10e7e86ad66185e2d8bc7224626810df12f1ee05694322054ad32700"
)
# `artemis create --port-offset` moves every acceptor and the console: 61613 → 61713 (STOMP),
# 61616 → 61716 (core/all protocols), 5672 → 5772 (AMQP), 5445 → 5545, 1883 → 1983, 8161 → 8261.
# Clear of the Classic brokers (61612-61637) and RabbitMQ (5672, 15672, 25672).
PORT_SHIFT = 100
DEFAULT_PORTS = {"stomp": 61613, "core": 61616, "amqp": 5672, "hornetq": 5445, "mqtt": 1883, "http": 8161}
# A local test broker's account, as the Classic brokers' mqusers/mqusers-local; anonymous clients allowed too.
USER, PASSWORD = "mqusers", "mqusers-local"


def home() -> Path:
    return cache_dir() / f"apache-artemis-{VERSION}"


def _sha512(path: Path) -> str:
    digest = hashlib.sha512()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def prepare() -> None:
    """Fetch and unpack the pinned distribution unless the cache has it; a bad checksum is deleted."""
    if (home() / "bin" / "artemis").is_file():
        return
    with cache_lock():
        if (home() / "bin" / "artemis").is_file():
            return
        tarball = cache_dir() / TARBALL
        if not tarball.is_file():
            maven(["dependency:copy", f"-Dartifact={ARTIFACT}", f"-DoutputDirectory={cache_dir()}"], ARTIFACT)
        if _sha512(tarball) != SHA512:
            tarball.unlink()
            raise ServiceError(f"artemis: {TARBALL} does not match its pinned SHA-512; deleted, try again")
        unpacking = cache_dir() / "unpacking"
        shutil.rmtree(unpacking, ignore_errors=True)
        with tarfile.open(tarball) as archive:
            archive.extractall(unpacking, filter="tar")
        (unpacking / home().name).rename(home())  # whole or not at all
        unpacking.rmdir()


def _instance(ctx: Ctx) -> Path:
    return ctx.dir / "instance"


def create(ctx: Ctx, shift: int, options: Sequence[str] = (), edit: Callable[[str], str] | None = None) -> Path:
    """``artemis create`` once per folder, port shift, options and distribution (its ports and the
    distribution's path are written into etc/: an instance made from another checkout's cache would
    start a JVM without its classes); ``edit`` rewrites the made etc/broker.xml."""
    instance = _instance(ctx)
    shift_text = str(shift + ctx.offset)
    marker = instance / "created-with"
    made_with = f"port-offset {shift_text}\nhome {home()}\noptions {' '.join(options)}\n"
    if marker.is_file() and marker.read_text() == made_with:
        return instance
    shutil.rmtree(instance, ignore_errors=True)
    argv = [str(home() / "bin" / "artemis"), "create", str(instance), "--silent",
            "--user", USER, "--password", PASSWORD, "--allow-anonymous",
            "--host", ctx.host, "--http-host", ctx.host, "--port-offset", shift_text, "--no-autotune",
            *options]  # fmt: skip
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ServiceError(f"{ctx.name}: artemis create failed\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
    if edit is not None:
        config = instance / "etc" / "broker.xml"
        config.write_text(edit(config.read_text()))
    marker.write_text(made_with)
    return instance


def run(ctx: Ctx, instance: Path) -> int:
    return spawn(ctx, [str(instance / "bin" / "artemis"), "run"], cwd=instance)


def launch(ctx: Ctx) -> int:
    return run(ctx, create(ctx, PORT_SHIFT))


def ready(ctx: Ctx) -> bool:
    """The core acceptor listens, STOMP completes a CONNECT handshake and the console (Jolokia) listens:
    the broker's figures are read from the first message on (a test read them before it listened)."""
    return (port_open(ctx.ports["core"], ctx.host) and stomp_handshake(ctx.ports["stomp"], host=ctx.host)
            and port_open(ctx.ports["http"], ctx.host))  # fmt: skip


def logs(ctx: Ctx) -> list[Path]:
    return [_instance(ctx) / "log" / "artemis.log"]


SERVICE = Service(
    name="artemis",
    package="openjdk-17-jre-headless",  # Artemis 2.40 needs Java 17+
    base_ports={key: port + PORT_SHIFT for key, port in DEFAULT_PORTS.items()},
    launch=launch,
    ready=ready,
    logs=logs,
    prepare=prepare,
)
