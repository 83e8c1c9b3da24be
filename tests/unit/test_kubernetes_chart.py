"""deploy/helm/locust-values.yaml checked without a cluster or helm: mqusers under the deliveryhero chart.

Every key of the values file is checked against the deliveryhero `locust` chart's values and templates at
a pinned version (tests/pinned.py: skipped without the network); the chart is not rendered. Offline: its
Kubernetes parts against the Kubernetes schemas, the worker count said once (the master's expect-workers
is rendered from worker.replicas), credentials only from the overlays' Secret, /metrics on a named port.
"""

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import mqusers  # noqa: F401  (registers the --mq-* and --prometheus-* arguments)
from mqusers.options.settings import read_settings
from tests.k8s_checks import (
    IMAGE,
    LOCUSTFILE,
    VERSIONS,
    conf,
    definition_errors,
    no_locust_env,  # noqa: F401  (the fixture pytestmark uses)
    object_errors,
    overlays_image,
    parse,
    secret_problems,
)
from tests.kustomize import ROOT, Document
from tests.pinned import Pin, pinned

VALUES = ROOT / "deploy" / "helm" / "locust-values.yaml"
#: The overlays' broker Secret and its keys (docs/kubernetes.md, "The Secret"): the chart reads the same one.
BROKER_SECRET = ("mqusers-broker", ["user", "password"])
#: The one place the chart's values are templated: the master's expect-workers (extraObjects).
REPLICAS = "{{ .Values.worker.replicas }}"

CHART_PIN = Pin(
    "deliveryhero-locust-0.35.0",  # the last change to stable/locust, Chart.yaml version 0.35.0
    "https://raw.githubusercontent.com/deliveryhero/helm-charts/78171b3c72feb7df35f06f24234f3f2c3e9fe857/stable/locust/",
    (
        "Chart.yaml",
        "values.yaml",
        *(f"templates/{name}" for name in ("_helpers.tpl", "configmap-config.yaml", "configmap-locust-lib.yaml")),
        *(f"templates/{name}" for name in ("configmap-locust-locustfile.yaml", "extra-manifests.yaml", "secret.yaml")),
        *(f"templates/master-{name}" for name in ("deployment.yaml", "ingress.yaml", "pdb.yaml", "service.yaml")),
        *(f"templates/worker-{name}" for name in ("deployment.yaml", "hpa.yaml", "keda.yaml", "pdb.yaml")),
        *(f"templates/{role}-serviceaccount.yaml" for role in ("master", "worker")),
    ),
    "0c89d69823383f9d35b0d94f6eb8766030ba6b3da1820ed5bd0e0cf161f89abc",
)

pytestmark = pytest.mark.usefixtures("no_locust_env")  # LOCUST_* of the shell never reach a parse


@pytest.fixture(scope="module")
def chart() -> dict[str, str]:
    return pinned(CHART_PIN)


def values() -> Document:
    loaded: Document = yaml.safe_load(VALUES.read_text())
    return loaded


def master_conf(ours: Document) -> str:
    """The master's locust.conf as the chart renders it: extraObjects go through `tpl`."""
    [config_map] = [o for o in ours["extraObjects"] if o["kind"] == "ConfigMap" and "locust.conf" in o["data"]]
    text: str = config_map["data"]["locust.conf"]
    assert re.findall(r"\{\{.*?\}\}", text) == [REPLICAS], "the one value the conf reads is the worker count"
    return text.replace(REPLICAS, str(ours["worker"]["replicas"]))


def chart_argvs(ours: Document) -> dict[str, list[str]]:
    """What the command's `exec locust "$@"` runs: the chart's --master/--worker, then the role's args."""
    return {role: [f"--{role}", *map(str, ours[role]["args"])] for role in ("master", "worker")}


def chart_env(ours: Document, role: str) -> list[Document]:
    """The env the chart gives a role's container from these values (its templates at the pin)."""
    env = [{"name": key, "value": str(value)} for key, value in ours["loadtest"].get("environment", {}).items()]
    env += [{"name": key, "value": str(value)} for key, value in ours[role].get("environment", {}).items()]
    for secret, keys in ours["loadtest"].get("environment_external_secret", {}).items():
        env += [{"name": key, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}} for key in keys]
    return env


def master_files(ours: Document, tmp_path: Path) -> dict[str, Path]:
    [mount] = [m for m in ours["master"]["extraVolumeMounts"] if m["name"] == "mqusers-conf"]
    (tmp_path / "locust.conf").write_text(master_conf(ours))
    return {f"{mount['mountPath']}/locust.conf": tmp_path / "locust.conf"}


def leaves(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(key path, value) of every value that is not a map, maps walked into."""
    if isinstance(node, dict) and node:
        for key, value in node.items():
            yield from leaves(value, (*path, str(key)))
    else:
        yield path, node


def strings(node: Any) -> Iterator[str]:
    """Every key and string anywhere in ``node``."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield str(key)
            yield from strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings(value)
    elif isinstance(node, str):
        yield node


def chart_reads(chart: dict[str, str]) -> set[str]:
    """Every `.Values.a.b` the chart's templates read."""
    templates = "".join(text for path, text in chart.items() if path.startswith("templates/"))
    return set(re.findall(r"\.Values\.([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)", templates))


def value_problem(path: tuple[str, ...], ours: Any, theirs: Document, reads: set[str]) -> str | None:
    """Why the chart would ignore or misread the value at ``path``; None when it takes it."""
    where = ".".join(path)
    if not any(".".join(path[:i]) in reads for i in range(1, len(path) + 1)):
        return f"{where}: no template reads it"
    node: Any = theirs
    for i, key in enumerate(path):
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif (isinstance(node, dict) and not node and i > 0) or ".".join(path[: i + 1]) in reads:
            return None  # inside a free-form map (environment: {}), or read though values.yaml leaves it out
        else:
            return f"{where}: not in the chart's values.yaml"
    if node not in (None, {}, [], "") and type(node) is not type(ours):
        return f"{where}: the chart has a {type(node).__name__}, this a {type(ours).__name__}"
    return None


def test_every_value_is_one_the_chart_takes(chart: dict[str, str]) -> None:
    assert yaml.safe_load(chart["Chart.yaml"])["version"] == "0.35.0"
    assert "at\n# version 0.35.0:" in VALUES.read_text(), "the values file names the version it is for"
    theirs, reads = yaml.safe_load(chart["values.yaml"]), chart_reads(chart)
    problems = [value_problem(path, value, theirs, reads) for path, value in leaves(values())]
    assert [p for p in problems if p] == []
    # The check finds a misspelt key, one inside a block the chart copies whole, and a wrong type.
    assert value_problem(("worker", "replica"), 4, theirs, reads) == "worker.replica: no template reads it"
    probe = ("master", "readinessProbe", "httpGet", "pathh")
    assert value_problem(probe, "/", theirs, reads) == f"{'.'.join(probe)}: not in the chart's values.yaml"
    wrong_type = value_problem(("worker", "replicas"), "4", theirs, reads)
    assert wrong_type == "worker.replicas: the chart has a int, this a str"


def test_the_charts_templates_do_what_the_values_rely_on(chart: dict[str, str]) -> None:
    master, worker = chart["templates/master-deployment.yaml"], chart["templates/worker-deployment.yaml"]
    assert "{{ tpl (toYaml .) $ }}" in chart["templates/extra-manifests.yaml"], "expect-workers is rendered"
    for text, role in ((master, "master"), (worker, "worker")):
        assert re.search(rf"args:\n\s+- --{role}\n\{{\{{- if .Values.{role}.args }}}}", text), f"--{role}, then args"
        assert f"{{{{- with .Values.{role}.command }}}}\n        command:" in text
        assert f"{{{{- with .Values.{role}.annotations }}}}" in text.split("labels:")[1], "the pod's annotations"
        assert f"toYaml .Values.{role}.extraVolumeMounts" in text and f"toYaml .Values.{role}.extraVolumes" in text
        # environment_external_secret: one env var per key, named after it, from the Secret by key.
        assert re.search(r"- name: \{\{ \$value \}\}\n\s+valueFrom:\n\s+secretKeyRef:\n\s+name: \{\{ \$key \}\}", text)
    assert "toYaml .Values.master.extraPorts" in master and "toYaml .Values.worker.ports" in worker
    assert "- --headless" in master.split("if .Values.loadtest.headless")[1], "--headless only when asked for"


def test_the_worker_count_is_said_once_and_the_master_expects_it(tmp_path: Path) -> None:
    ours = values()
    replicas = ours["worker"]["replicas"]
    for count in (replicas, 8):  # and after `--set worker.replicas=8`
        ours["worker"]["replicas"] = count
        assert parse(chart_argvs(ours)["master"], master_files(ours, tmp_path)).expect_workers == count
    [config_map] = [o for o in values()["extraObjects"] if "locust.conf" in o["data"]]
    assert conf(config_map["data"]["locust.conf"])["expect-workers"] == REPLICAS
    said = [text for text in strings(values()) if "expect" in text.lower()]
    assert said == [config_map["data"]["locust.conf"]], "said nowhere else: no arg, no env var"
    # A worker autoscaler would make replicas a floor, not the count: none is enabled.
    assert not any(values()["worker"].get(scaler, {}).get("enabled") for scaler in ("hpa", "keda"))


def test_no_secret_in_the_values_or_on_a_command_line(tmp_path: Path) -> None:
    ours = values()
    argvs = {role: [*map(str, ours[role]["command"]), *argv] for role, argv in chart_argvs(ours).items()}
    envs = {role: chart_env(ours, role) for role in ("master", "worker")}
    assert secret_problems({"locust.conf": master_conf(ours)}, argvs, envs) == []
    # The overlays' Secret, key by key; never values in the values file (environment_secret would make a
    # Secret from them) nor a whole Secret as env (envFrom).
    assert ours["loadtest"]["environment_external_secret"] == dict([BROKER_SECRET])
    assert not {"environment_secret", "environment_load_from_secrets", "mount_external_secret"} & set(ours["loadtest"])
    assert not ours.get("master", {}).get("auth", {}).get("password")
    # The command hands the Secret's `user` and `password` to Locust under its names, and nothing else.
    for role in ("master", "worker"):
        shell, flag, script, name = ours[role]["command"]
        assert (shell, flag, name) == ("/bin/sh", "-c", "locust") and script.endswith('exec locust "$@"')
        handed = re.findall(r'(LOCUST_\w+)="\$(\w+)"', script)
        assert handed == [("LOCUST_MQ_USER", "user"), ("LOCUST_MQ_PASSWORD", "password")], role


def test_the_charts_options_are_ones_locust_and_mqusers_accept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ours = values()
    loadtest = ours["loadtest"]
    # The chart's own env for both roles (envs_include_default): the host and the locustfile.
    monkeypatch.setenv("LOCUST_HOST", loadtest["locust_host"])
    monkeypatch.setenv("LOCUST_LOCUSTFILE", f"{loadtest['locust_locustfile_path']}/{loadtest['locust_locustfile']}")
    argvs, files = chart_argvs(ours), master_files(ours, tmp_path)
    master, worker = parse(argvs["master"], files), parse(argvs["worker"], files)
    assert master.master and worker.worker and master.host == "stomp://broker:61613"
    assert master.locustfile == "/mnt/locust/locustfile.py" and LOCUSTFILE.name == loadtest["locust_locustfile"]
    assert loadtest["locust_lib_configmap"] == "", "the chart's example lib stays out"
    # A Deployment restarts a master that exits: one run by itself, then the web UI stays (no --autoquit).
    assert master.autostart and master.autoquit == -1 and not master.headless and not loadtest.get("headless")
    mounts = {m["mountPath"]: m["name"] for m in ours["master"]["extraVolumeMounts"]}
    volumes = {v["name"]: v for v in ours["master"]["extraVolumes"]}
    assert "emptyDir" in volumes[mounts[os.path.dirname(master.mq_report_json)]], "the report in the pod's volume"
    master.mq_report_json = str(tmp_path / "report.json")
    read_settings(master, master.host)
    assert master.mq_total_rate is not None, "the example paces the run (open model)"


def test_every_chart_pod_serves_metrics_on_a_named_port_its_annotations_give(tmp_path: Path) -> None:
    ours = values()
    ports = {"master": ours["master"]["extraPorts"], "worker": ours["worker"]["ports"]}
    for role, argv in chart_argvs(ours).items():
        options = parse(argv, master_files(ours, tmp_path))
        annotations = ours[role]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true" and annotations["prometheus.io/path"] == "/metrics"
        assert annotations["prometheus.io/port"] == options.prometheus_port, role
        assert options.prometheus_host == "0.0.0.0", role
        assert {"name": "metrics", "containerPort": int(options.prometheus_port)} in ports[role], role


@pytest.mark.parametrize("version", VERSIONS)
def test_the_values_kubernetes_parts_are_valid_bounded_and_unprivileged(version: str) -> None:
    ours = values()
    errors = definition_errors(ours["podSecurityContext"], "podsecuritycontext-v1", version)
    errors += definition_errors(ours["securityContext"], "securitycontext-v1", version)
    ports = {"master": ours["master"]["extraPorts"], "worker": ours["worker"]["ports"]}
    for role in ("master", "worker"):
        errors += definition_errors(ours[role]["resources"], "resourcerequirements-v1", version)
        errors += [e for v in ours[role]["extraVolumes"] for e in definition_errors(v, "volume-v1", version)]
        errors += [e for m in ours[role]["extraVolumeMounts"] for e in definition_errors(m, "volumemount-v1", version)]
        errors += [e for p in ports[role] for e in definition_errors(p, "containerport-v1", version)]
        errors += definition_errors({"annotations": ours[role]["annotations"]}, "objectmeta-meta-v1", version)
    errors += [e for o in ours["extraObjects"] for e in object_errors(o, version)]
    assert errors == []
    pod, container = ours["podSecurityContext"], ours["securityContext"]
    assert pod["runAsNonRoot"] is True and pod["runAsUser"] != 0
    assert container["allowPrivilegeEscalation"] is False and container["readOnlyRootFilesystem"] is True
    assert container["capabilities"]["drop"] == ["ALL"]
    for role in ("master", "worker"):
        assert "/tmp" in {m["mountPath"] for m in ours[role]["extraVolumeMounts"]}, f"{role}: a read-only root"
        resources = ours[role]["resources"]
        assert {"cpu", "memory"} <= set(resources["requests"]) and resources["requests"] == resources["limits"], role
    assert ours["service"]["type"] == "ClusterIP", "the web UI has no login"


def test_the_charts_image_is_the_overlays() -> None:
    image = values()["image"]
    assert f"{image['repository']}:{image['tag']}" == IMAGE == overlays_image()
