"""deploy/kubernetes/ checked without a cluster: rendered, schema-validated, and held to its invariants.

Each overlay is rendered by tests/kustomize.py (checked against `kubectl kustomize` when kubectl is
installed) and every object is validated against the Kubernetes JSON schemas of the
kubernetes-validate package in strict mode (an unknown or misspelt field fails). Then what a schema
cannot see: no secret in a ConfigMap or on a command line, resources and a non-root, read-only
container everywhere, the workers pointed at the master's Service with ports that agree, the worker
count said the same in its two places, options that Locust and mqusers accept. The two container
scripts are run with a stand-in `locust` to see the worker's restart loop and back-off work.
"""

from locust.argument_parser import get_parser

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import mqusers  # noqa: F401  (registers the --mq-* and --influx-* arguments)
from mqusers.options.settings import read_settings
from tests.kustomize import KUBERNETES, OVERLAYS, ROOT, Document, find, render

kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="the dev extra installs kubernetes-validate")

VERSIONS = ("1.29", "1.30")  # Kubernetes versions the manifests must be valid for
WORKLOADS = ("Deployment", "StatefulSet", "Job")
# The Secrets the user creates (docs/kubernetes.md); the manifests never carry their values.
SECRETS = {
    "mqusers-broker": {"user", "password"},
    "mqusers-live": {"influx-admin-password", "influx-token", "grafana-admin-password"},
}
USER_CONFIG_MAPS = {"mqusers-grafana-dashboards"}  # kubectl create configmap --from-file=grafana/dashboards/
SECRET_WORDS = re.compile(r"(?i)password|passcode|token|secret|credential")


@pytest.fixture(scope="module", params=OVERLAYS)
def overlay(request: pytest.FixtureRequest) -> tuple[str, list[Document]]:
    return request.param, render(KUBERNETES / "overlays" / request.param)


def pod_specs(documents: list[Document]) -> Iterator[tuple[str, Document]]:
    for doc in documents:
        if doc["kind"] in WORKLOADS:
            yield f"{doc['kind']}/{doc['metadata']['name']}", doc["spec"]["template"]


def containers(documents: list[Document]) -> Iterator[tuple[str, Document, Document]]:
    """(where, pod spec, container) for every container and init container."""
    for where, template in pod_specs(documents):
        spec = template["spec"]
        for container in spec.get("initContainers", []) + spec["containers"]:
            yield f"{where}/{container['name']}", spec, container


def locust_containers(documents: list[Document]) -> Iterator[tuple[str, Document, Document]]:
    for where, spec, container in containers(documents):
        if container["image"].startswith("mqusers-locust"):
            yield where, spec, container


def env(container: Document) -> dict[str, Document]:
    return {entry["name"]: entry for entry in container.get("env", [])}


def conf(documents: list[Document]) -> dict[str, str]:
    """locust.conf of ConfigMap mqusers-locust as key -> value."""
    text = find(documents, "ConfigMap", "mqusers-locust")["data"]["locust.conf"]
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return {key.strip(): value.strip() for key, _, value in (line.partition("=") for line in lines if line)}


def master_args(container: Document) -> list[str]:
    """The arguments a master container passes to Locust (or the whole `mqusers find-max` command).

    The Jobs' args are the command keep-reports.sh runs; the web UI's go to the image's `locust`.
    """
    argv: list[str] = container.get("args", [])
    return argv[1:] if argv[:1] == ["locust"] else argv


def masters(documents: list[Document]) -> list[tuple[str, Document, Document]]:
    return [c for c in locust_containers(documents) if "--master" in master_args(c[2])]


def test_every_overlay_is_rendered() -> None:
    assert set(OVERLAYS) == {"headless", "web-ui", "find-max", "live"}


def same_as_kubectls(directory: Path) -> None:
    """Our rendering of DIRECTORY equals `kubectl kustomize DIRECTORY` (when kubectl is installed)."""
    if shutil.which("kubectl") is None:
        return
    result = subprocess.run(["kubectl", "kustomize", str(directory)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    theirs = [doc for doc in yaml.safe_load_all(result.stdout) if doc]

    def key(doc: Document) -> tuple[str, str]:
        return doc["kind"], doc["metadata"]["name"]

    assert sorted(render(directory), key=key) == sorted(theirs, key=key)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
@pytest.mark.parametrize("name", OVERLAYS)
def test_the_rendering_is_kubectl_kustomizes(name: str) -> None:
    same_as_kubectls(KUBERNETES / "overlays" / name)


def test_the_image_is_the_users_to_name(tmp_path: Path) -> None:
    live = os.path.relpath(KUBERNETES / "overlays" / "live", tmp_path)  # kustomize refuses absolute paths
    (tmp_path / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources:\n  - {live}\n"
        "images:\n  - name: mqusers-locust\n    newName: registry.example.com/mqusers-locust\n    newTag: 0.1.0\n"
    )
    same_as_kubectls(tmp_path)
    images = {c["image"] for _, _, c in containers(render(tmp_path))}
    assert "registry.example.com/mqusers-locust:0.1.0" in images
    assert not any(image.startswith("mqusers-locust") for image in images), images
    dockerfile = (ROOT / "docker" / "locust" / "Dockerfile").read_text()
    assert re.search(r"^USER locust$", dockerfile, re.M) and "--uid 10001" in dockerfile


@pytest.mark.parametrize("version", VERSIONS)
def test_every_object_is_valid_kubernetes(overlay: tuple[str, list[Document]], version: str) -> None:
    _, documents = overlay
    for doc in documents:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            where = "/".join(str(part) for part in error.path)
            pytest.fail(f"{doc['kind']}/{doc['metadata']['name']} at {where}: {error.message}")


def test_no_secret_in_a_config_map_or_on_a_command_line(overlay: tuple[str, list[Document]]) -> None:
    _, documents = overlay
    secret_options = {a.option_strings[0]: a.env_var for a in get_parser()._actions if getattr(a, "is_secret", False)}
    assert {"--mq-password", "--influx-token"} <= set(secret_options)
    credentials = {*secret_options, "--mq-user"}
    credential_env = {*secret_options.values(), "LOCUST_MQ_USER"}
    assert not [doc for doc in documents if doc["kind"] == "Secret"], "Secrets are the user's to create"
    for doc in documents:
        if doc["kind"] != "ConfigMap":
            continue
        for key, text in doc["data"].items():
            assert key not in credential_env and not SECRET_WORDS.search(key), (doc["metadata"]["name"], key)
            for option in credentials:
                assert not re.search(rf"^\s*{option[2:]}\s*=|{option}\b", text, re.M), (key, option)
    for where, _, container in containers(documents):
        argv = [*container.get("command", []), *container.get("args", [])]
        for arg in argv:
            assert not any(arg.startswith(option) for option in credentials), (where, arg)
            assert not re.search(r"://[^/@\s]*@", arg), (where, arg)  # user:password@host
        for name, entry in env(container).items():
            if name in credential_env or SECRET_WORDS.search(name):
                assert "value" not in entry and "secretKeyRef" in entry.get("valueFrom", {}), (where, name)
        for entry in container.get("envFrom", []):
            assert "configMapRef" in entry, (where, entry)  # a Secret by name only, key by key
    for where, _, container in locust_containers(documents):
        refs = {n: e["valueFrom"]["secretKeyRef"] for n, e in env(container).items() if "valueFrom" in e}
        assert (refs["LOCUST_MQ_USER"]["name"], refs["LOCUST_MQ_USER"]["key"]) == ("mqusers-broker", "user"), where
        assert (refs["LOCUST_MQ_PASSWORD"]["name"], refs["LOCUST_MQ_PASSWORD"]["key"]) == ("mqusers-broker", "password")
        assert not refs["LOCUST_MQ_PASSWORD"].get("optional", False), where


def test_every_container_is_bounded_and_unprivileged(overlay: tuple[str, list[Document]]) -> None:
    _, documents = overlay
    for where, template in pod_specs(documents):
        assert template["spec"].get("automountServiceAccountToken") is False, where
    for where, pod, container in containers(documents):
        resources = container.get("resources", {})
        for bound in ("requests", "limits"):
            assert {"cpu", "memory"} <= set(resources.get(bound, {})), (where, bound)
        security, pod_security = container.get("securityContext", {}), pod.get("securityContext", {})
        assert security.get("runAsNonRoot", pod_security.get("runAsNonRoot")) is True, where
        assert security.get("runAsUser", pod_security.get("runAsUser", 0)) != 0, where
        assert security.get("allowPrivilegeEscalation") is False, where
        assert security.get("readOnlyRootFilesystem") is True, where
        assert security.get("capabilities", {}).get("drop") == ["ALL"], where
        # A read-only root needs every path it writes mounted: at least /tmp.
        assert "/tmp" in {mount["mountPath"] for mount in container.get("volumeMounts", [])}, where
    for where, _, container in locust_containers(documents):
        resources = container["resources"]
        assert resources["requests"] == resources["limits"], f"{where}: a load generator gets Guaranteed QoS"


def selected(documents: list[Document], service: Document) -> list[tuple[str, Document]]:
    selector = service["spec"]["selector"]
    return [(w, t) for w, t in pod_specs(documents) if selector.items() <= t["metadata"]["labels"].items()]


def test_every_service_reaches_a_named_container_port(overlay: tuple[str, list[Document]]) -> None:
    _, documents = overlay
    for service in (doc for doc in documents if doc["kind"] == "Service"):
        pods = selected(documents, service)
        assert len(pods) == 1, f"Service {service['metadata']['name']} selects {[w for w, _ in pods]}"
        ports = {p["name"]: p["containerPort"] for c in pods[0][1]["spec"]["containers"] for p in c.get("ports", [])}
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in ports, (service["metadata"]["name"], port)
            assert port["port"] == ports[port["targetPort"]], "the same number on both sides keeps it readable"
    for where, _, container in containers(documents):
        named = {p["name"] for p in container.get("ports", [])}
        for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
            if probe in container:
                action = container[probe].get("httpGet") or container[probe].get("tcpSocket")
                assert action["port"] in named, (where, probe)


def test_the_workers_find_the_master_on_its_bus(overlay: tuple[str, list[Document]]) -> None:
    name, documents = overlay
    [(_, _, worker)] = [c for c in locust_containers(documents) if c[0].startswith("Deployment/mqusers-worker/")]
    worker_env = {n: e["value"] for n, e in env(worker).items() if "value" in e}
    service = find(documents, "Service", worker_env["LOCUST_MASTER_NODE_HOST"])
    [bus] = [p for p in service["spec"]["ports"] if p["name"] == "bus"]
    assert int(worker_env["LOCUST_MASTER_NODE_PORT"]) == bus["port"]
    [(master_pod, _)] = selected(documents, service)
    [(where, _, master)] = masters(documents)
    assert where.startswith(master_pod), (where, master_pod)
    ports = {p["name"]: p["containerPort"] for p in master.get("ports", [])}
    argv = master_args(master)

    def option(name: str) -> str:
        """The master's value of --NAME: its command line, else locust.conf, else Locust's default."""
        if f"--{name}" in argv:
            return argv[argv.index(f"--{name}") + 1]
        return conf(documents).get(name) or str(get_parser().get_default(name.replace("-", "_")))

    assert ports["bus"] == int(option("master-bind-port"))
    if "web" in ports:  # the web UI variant
        assert "--headless" not in argv and "headless" not in conf(documents)
        assert ports["web"] == int(option("web-port"))
        assert find(documents, "Service", "mqusers-web")["spec"]["type"] == "ClusterIP", "the UI has no login"
    # The worker count, in its two places.
    replicas = find(documents, "Deployment", "mqusers-worker")["spec"]["replicas"]
    assert int(option("expect-workers")) == replicas, f"{name}: {replicas} workers, the master expects another count"


def test_the_workers_loop_and_the_masters_keep_their_reports(overlay: tuple[str, list[Document]]) -> None:
    _, documents = overlay
    scripts = find(documents, "ConfigMap", "mqusers-scripts")["data"]
    [(_, _, worker)] = [c for c in locust_containers(documents) if c[0].startswith("Deployment/mqusers-worker/")]
    assert worker["command"] == ["/bin/sh", "/mnt/scripts/worker-loop.sh"] and "worker-loop.sh" in scripts
    for where, _, master in masters(documents):
        if where.startswith("Job/"):
            assert master["command"] == ["/bin/sh", "/mnt/scripts/keep-reports.sh"], where
            assert int(env(master)["KEEP_REPORTS_SECONDS"]["value"]) > 0
    for doc in documents:
        if doc["kind"] == "Job":
            assert doc["spec"]["backoffLimit"] == 0 and doc["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def test_every_reference_resolves(overlay: tuple[str, list[Document]]) -> None:
    _, documents = overlay
    config_maps = {doc["metadata"]["name"]: doc for doc in documents if doc["kind"] == "ConfigMap"}
    for workload in (doc for doc in documents if doc["kind"] in WORKLOADS):
        where, spec = f"{workload['kind']}/{workload['metadata']['name']}", workload["spec"]["template"]["spec"]
        volumes = {volume["name"]: volume for volume in spec.get("volumes", [])}
        claims = {claim["metadata"]["name"] for claim in workload["spec"].get("volumeClaimTemplates", [])}
        for container in spec["containers"]:
            for mount in container.get("volumeMounts", []):
                assert mount["name"] in volumes or mount["name"] in claims, (where, mount)
            references = [e["valueFrom"] for e in container.get("env", []) if "valueFrom" in e]
            references += container.get("envFrom", [])
            for ref in references:
                if "secretKeyRef" in ref:
                    key = ref["secretKeyRef"]
                    assert key["key"] in SECRETS.get(key["name"], set()), (where, key)
                elif "configMapRef" in ref:
                    assert ref["configMapRef"]["name"] in config_maps or ref["configMapRef"].get("optional"), where
        for volume in volumes.values():
            if "configMap" in volume:
                name = volume["configMap"]["name"]
                assert name in config_maps or (name in USER_CONFIG_MAPS and volume["configMap"].get("optional")), name


def test_the_options_are_ones_locust_and_mqusers_accept(
    overlay: tuple[str, list[Document]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, documents = overlay
    for name in [n for n in os.environ if n.startswith("LOCUST_")]:
        monkeypatch.delenv(name)
    data = find(documents, "ConfigMap", "mqusers-locust")["data"]
    (tmp_path / "locust.conf").write_text(data["locust.conf"])
    for where, _, master in masters(documents):
        argv = master_args(master)
        if argv[:2] == ["mqusers", "find-max"]:
            assert argv[argv.index("-f") + 1] == "/mnt/locust/locustfile.py"
            continue  # find-max's own command line; its Locust options follow the same rules
        argv = [str(tmp_path / "locust.conf") if arg == "/mnt/locust/locust.conf" else arg for arg in argv]
        options = get_parser().parse_args(argv)  # exit 2 on an unknown key or a bad value
        assert options.locustfile == "/mnt/locust/locustfile.py" and "locustfile.py" in data, where
        options.mq_report_json = str(tmp_path / "report.json")  # /reports exists in the pod only
        read_settings(options, options.host)  # mqusers' own checks of every --mq-* value
        assert options.mq_total_rate is not None, "the example paces the run (open model)"


def test_grafana_provisioning_is_the_repositorys() -> None:
    component = KUBERNETES / "components" / "influxdb-grafana"
    provisioning = ROOT / "grafana" / "provisioning"
    for ours, theirs in [
        ("grafana-datasources.yml", "datasources/mqusers.yml"),
        ("grafana-dashboards.yml", "dashboards/mqusers.yml"),
    ]:
        assert yaml.safe_load((component / ours).read_text()) == yaml.safe_load((provisioning / theirs).read_text())


# -- the container scripts, run with a stand-in `locust` ------------------------------------------

FAKE_LOCUST = """#!/bin/sh
trap 'echo "term $$" >> "$LOG"; exit 0' TERM
echo "start $$ $*" >> "$LOG"
case "$MODE" in
  fail) exit 3 ;;
  run) sleep 30 & wait $! ;;
esac
"""


#: A stand-in `sleep` that logs its argument and returns at once, except from BLOCK_FROM seconds on:
#: then it really sleeps (a back-off a test interrupts). The scripts' waits, without waiting.
FAKE_SLEEP = """#!/bin/sh
echo "sleep $*" >> "$LOG"
[ "$1" -lt "${BLOCK_FROM:-999999}" ] || exec /bin/sleep 30
"""


def script(name: str) -> Path:
    return KUBERNETES / "base" / name


def fake_locust(tmp_path: Path, mode: str, *, fake_sleep: bool = False) -> dict[str, str]:
    (tmp_path / "bin").mkdir(exist_ok=True)
    for name, text in [("locust", FAKE_LOCUST), ("sleep", FAKE_SLEEP)][: 1 + fake_sleep]:
        binary = tmp_path / "bin" / name
        binary.write_text(text)
        binary.chmod(0o755)
    log = tmp_path / "log"
    log.touch()
    return {"PATH": f"{binary.parent}:/usr/bin:/bin", "LOG": str(log), "MODE": mode}


def lines(tmp_path: Path, word: str) -> list[str]:
    return [line for line in (tmp_path / "log").read_text().splitlines() if line.startswith(word)]


def wait_for(condition: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_the_worker_loop_restarts_locust_with_a_bounded_back_off(tmp_path: Path) -> None:
    environment = fake_locust(tmp_path, "fail", fake_sleep=True) | {"BLOCK_FROM": "4"}
    loop = subprocess.Popen(["/bin/sh", str(script("worker-loop.sh")), "--processes", "1"], env=environment,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        # Quick failures: restarted after 1 s, then 2 s (the back-off doubles, up to 30 s); the third
        # back-off, 4 s, is where SIGTERM comes.
        wait_for(lambda: lines(tmp_path, "sleep 4"), timeout=10)
        loop.send_signal(signal.SIGTERM)
        assert loop.wait(timeout=3) == 0
    finally:
        loop.kill()
        assert loop.stderr is not None
        output = loop.stderr.read()
    starts = lines(tmp_path, "start")
    assert all(line.endswith(" --worker --processes 1") for line in starts), starts
    assert "locust exited with status 3; starting it again in 1s" in output
    assert "locust exited with status 3; starting it again in 2s" in output
    assert len(starts) == 3, "SIGTERM during the back-off ends the loop, no restart"
    assert lines(tmp_path, "sleep") == ["sleep 1", "sleep 2", "sleep 4"]


def test_the_worker_loop_hands_sigterm_to_locust(tmp_path: Path) -> None:
    loop = subprocess.Popen(["/bin/sh", str(script("worker-loop.sh"))], env=fake_locust(tmp_path, "run"))
    try:
        wait_for(lambda: lines(tmp_path, "start"), timeout=5)  # said once its TERM trap is set
        loop.send_signal(signal.SIGTERM)
        assert loop.wait(timeout=5) == 0
    finally:
        loop.kill()
    [start], [term] = lines(tmp_path, "start"), lines(tmp_path, "term")
    assert start.split()[1] == term.split()[1], "locust itself was told to stop"


@pytest.mark.parametrize(("mode", "code"), [("fail", 3), ("done", 0)])
def test_keep_reports_holds_the_pod_then_exits_with_the_commands_status(tmp_path: Path, mode: str, code: int) -> None:
    environment = fake_locust(tmp_path, mode, fake_sleep=True) | {"KEEP_REPORTS_SECONDS": "90",
                                                                  "HOSTNAME": "mqusers-master-x"}  # fmt: skip
    result = subprocess.run(["/bin/sh", str(script("keep-reports.sh")), "locust", "--master"], env=environment,
                            capture_output=True, text=True, timeout=10)  # fmt: skip
    assert result.returncode == code
    assert lines(tmp_path, "sleep") == ["sleep 90"]  # the pod held KEEP_REPORTS_SECONDS after the command
    assert "kubectl cp mqusers-master-x:/reports ./reports" in result.stderr
    assert lines(tmp_path, "start") and lines(tmp_path, "start")[0].endswith(" --master")


def test_no_overlay_runs_a_broker_and_the_others_are_the_compose_stacks_images(
    overlay: tuple[str, list[Document]],
) -> None:
    """The broker is the user's (locust.conf's host); InfluxDB and Grafana are compose's images, same versions."""
    _, documents = overlay
    images = {container["image"] for _, _, container in containers(documents)} - {"mqusers-locust:dev"}
    assert not [image for image in images if re.search(r"activemq|artemis|rabbitmq", image)], images
    assert conf(documents)["host"] == "stomp://broker:61613"
    compose = set(re.findall(r"\$\{\w+_IMAGE:-([^}]+)\}", (ROOT / "docker-compose.yml").read_text()))
    assert images <= compose, images - compose
