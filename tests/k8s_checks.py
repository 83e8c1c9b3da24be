"""Checks the Kubernetes manifests' tests share: schemas, credentials, Locust's options, the overlays' figures."""

from __future__ import annotations

from locust.argument_parser import get_parser

import os
import re
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import referencing

import mqusers  # noqa: F401  (registers the --mq-* and --prometheus-* arguments)
from tests.kustomize import KUBERNETES, Document, find, render

VERSIONS = ("1.29", "1.30")  # the Kubernetes versions test_kubernetes.py holds the overlays to
LOCUSTFILE = KUBERNETES / "base" / "locustfile.py"  # the scenario every ConfigMap is made from
IMAGE = "mqusers-locust:dev"
SECRET_WORDS = re.compile(r"(?i)password|passcode|token|secret|credential")


def definition_errors(value: Any, name: str, version: str) -> list[str]:
    """What the Kubernetes schema ``name`` (e.g. ``securitycontext-v1``) refuses in ``value``, strictly."""
    from kubernetes_validate.utils import schema_contents

    directory = f"kubernetes-json-schema/v{version}.0-local-strict"
    schema = schema_contents(f"{directory}/{name}.json", version)
    definitions = schema_contents(f"{directory}/_definitions.json", version)
    registry = referencing.Resource.from_contents(definitions) @ (
        referencing.Resource.from_contents(schema) @ referencing.Registry()
    )
    validator = jsonschema.Draft202012Validator(schema, registry=registry)
    return [f"{name} at {'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(value)]


def object_errors(document: Document, version: str) -> list[str]:
    try:
        kubernetes_validate.validate(document, version, strict=True)
    except kubernetes_validate.ValidationError as error:
        return [f"{document['kind']} at {'/'.join(map(str, error.path))}: {error.message}"]
    return []


def credentials() -> tuple[set[str], set[str]]:
    """The credential options and their env vars, from the parser (mqusers marks its secret options)."""
    secret = {a.option_strings[0]: a.env_var for a in get_parser()._actions if getattr(a, "is_secret", False)}
    assert {"--mq-password", "--influx-token"} <= set(secret)
    return {*secret, "--mq-user"}, {*secret.values(), "LOCUST_MQ_USER"}


Env = list[Document]


def secret_problems(config_maps: dict[str, str], argvs: dict[str, list[str]], envs: dict[str, Env]) -> list[str]:
    """The overlays' rule (test_kubernetes.py): no credential in a ConfigMap or on a command line, and an env
    var that carries one comes from a Secret by key. ``config_maps``: key -> text; ``argvs`` and ``envs``: per
    container."""
    options, names = credentials()
    problems = []
    for key, text in config_maps.items():
        if key in names or SECRET_WORDS.search(key):
            problems.append(f"ConfigMap key {key}")
        problems += [f"{key}: {o}" for o in options if re.search(rf"^\s*{o[2:]}\s*=|{o}\b", text, re.M)]
    for where, argv in argvs.items():
        for arg in argv:
            if any(arg.startswith(option) for option in options) or re.search(r"://[^/@\s]*@", arg):
                problems.append(f"{where}: {arg}")
            # A shell may hand a credential on under Locust's name, from a variable, never a literal.
            for name in names:
                for value in re.findall(rf"\b{name}=(\S+)", arg):
                    if not re.fullmatch(r'"\$\w+";?', value):
                        problems.append(f"{where}: {name}={value}")
    for where, env in envs.items():
        for entry in env:
            credential = entry["name"] in names or SECRET_WORDS.search(entry["name"])
            if credential and ("value" in entry or "secretKeyRef" not in entry.get("valueFrom", {})):
                problems.append(f"{where}: env {entry['name']} not from a Secret")
    return problems


def conf(text: str) -> dict[str, str]:
    """A locust.conf as key -> value."""
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return {key.strip(): value.strip() for key, _, value in (line.partition("=") for line in lines if line)}


def parse(argv: list[str], files: dict[str, Path]) -> Any:
    """Locust's options for ``argv``, each pod path of ``files`` read from its local copy (exit 2 on a bad one)."""
    return get_parser().parse_args([str(files.get(arg, arg)) for arg in argv])


def keep_reports_seconds() -> int:
    """How long the overlays' Jobs keep their pod, and its report, after a run."""
    [job] = [d for d in render(KUBERNETES / "overlays" / "headless") if d["kind"] == "Job"]
    [master] = job["spec"]["template"]["spec"]["containers"]
    return int(next(e["value"] for e in master["env"] if e["name"] == "KEEP_REPORTS_SECONDS"))


def overlays_image() -> str:
    workers = find(render(KUBERNETES / "overlays" / "headless"), "Deployment", "mqusers-worker")
    image: str = workers["spec"]["template"]["spec"]["containers"][0]["image"]
    return image


@pytest.fixture
def no_locust_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Locust reads LOCUST_* from the environment: a test's parse sees only the manifests' options."""
    for name in [n for n in os.environ if n.startswith("LOCUST_")]:
        monkeypatch.delenv(name)
