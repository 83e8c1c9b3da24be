"""deploy/kubernetes/operator/ checked without a cluster: mqusers under Locust's own operator.

The LocustTest is validated against the CRD of Locust's operator (github.com/locustio/k8s-operator, the
one docs.locust.io installs) in strict mode, and the pods the operator makes from it are checked against
its source, both read at a pinned commit (tests/pinned.py: skipped without the network). The rest holds
offline, as the overlays' tests do: the worker count (said twice, held equal), no credential in a
ConfigMap or on a command line, options Locust and mqusers accept, the /metrics annotations, a report
kept for `kubectl cp`.
"""

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml

import mqusers  # noqa: F401  (registers the --mq-* and --prometheus-* arguments)
from mqusers.options.settings import read_settings
from tests.k8s_checks import (
    IMAGE,
    LOCUSTFILE,
    SECRET_WORDS,
    VERSIONS,
    conf,
    credentials,
    definition_errors,
    keep_reports_seconds,  # fmt: skip
    no_locust_env,  # noqa: F401  (the fixture pytestmark uses)
    object_errors,
    overlays_image,
    parse,
    secret_problems,
)
from tests.kustomize import KUBERNETES, Document, load_documents
from tests.pinned import Pin, pinned

OPERATOR = KUBERNETES / "operator"

OPERATOR_PIN = Pin(
    "locust-operator-0.1.6",  # tag helm-chart-0.1.6
    "https://raw.githubusercontent.com/locustio/k8s-operator/6b50cadef8314376c038067982551f7263859b41/",
    (
        "charts/locust-operator/crds/locusttest.yaml",
        *(f"locust_operator/{name}" for name in ("constants.py", "controller.py", "objects.py")),
    ),
    "f7b0c01bc7cc03eae04f2ea8ce9899b7c43eb3f6d6ddde603212f7cbb2886b0e",
)

pytestmark = pytest.mark.usefixtures("no_locust_env")  # LOCUST_* of the shell never reach a parse


@pytest.fixture(scope="module")
def operator_source() -> dict[str, str]:
    return pinned(OPERATOR_PIN)


def locust_test() -> Document:
    [document] = load_documents(OPERATOR / "locusttest.yaml")
    return document


def operator_config_map() -> tuple[str, dict[str, str]]:
    """The ConfigMap the user creates (docs/kubernetes.md): its name and its data."""
    name = locust_test()["spec"]["locustfile"]["configMap"]["name"]
    return name, {"locustfile.py": LOCUSTFILE.read_text(), "locust.conf": (OPERATOR / "locust.conf").read_text()}


#: Where the operator mounts the locustfile ConfigMap (objects.py's LOCUST_BASE_PATH at the pin).
OPERATOR_MOUNT = "/home/locust"


def operator_argvs(test: Document) -> dict[str, list[str]]:
    """The command lines the operator gives the image's `locust` (objects.py and controller.py at the pin)."""
    args = shlex.split(test["spec"].get("args", ""))
    master_service = f"{test['metadata']['name']}-master"
    return {"master": ["--master", *args], "worker": ["--worker", "--master-host", master_service, *args]}


def operator_files(tmp_path: Path) -> dict[str, Path]:
    _, data = operator_config_map()
    for key, text in data.items():
        (tmp_path / key).write_text(text)
    return {f"{OPERATOR_MOUNT}/{key}": tmp_path / key for key in data}


def structural(schema: Document) -> Document:
    """A CRD's openAPIV3Schema as JSON Schema, an unknown field refused as `kubectl apply` refuses it
    (strict field validation; the API server would drop it)."""
    out: Document = {k: schema[k] for k in ("type", "enum", "required", "minimum", "maximum", "pattern") if k in schema}
    if schema.get("x-kubernetes-int-or-string"):
        out["type"] = ["integer", "string"]
    if schema.get("nullable") and "type" in out:
        out["type"] = [*([out["type"]] if isinstance(out["type"], str) else out["type"]), "null"]
    if "properties" in schema:
        out["properties"] = {key: structural(value) for key, value in schema["properties"].items()}
        if "additionalProperties" not in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
    if isinstance(schema.get("additionalProperties"), dict):
        out["additionalProperties"] = structural(schema["additionalProperties"])
    if "items" in schema:
        out["items"] = structural(schema["items"])
    for key in ("oneOf", "anyOf", "allOf"):
        if key in schema:
            out[key] = [structural(branch) for branch in schema[key]]
    return out


def crd_errors(crd: Document, document: Document) -> list[str]:
    group, names = crd["spec"]["group"], crd["spec"]["names"]
    versions = {f"{group}/{v['name']}": v for v in crd["spec"]["versions"] if v["served"]}
    if document["apiVersion"] not in versions or document["kind"] != names["kind"]:
        return [f"{document['apiVersion']} {document['kind']}: the CRD serves {sorted(versions)} {names['kind']}"]
    schema = structural(versions[document["apiVersion"]]["schema"]["openAPIV3Schema"])
    schema["properties"] |= {"apiVersion": {"type": "string"}, "kind": {"type": "string"}}
    schema["properties"]["metadata"] = {"type": "object"}  # ObjectMeta: checked against Kubernetes' schema
    validator = jsonschema.Draft7Validator(schema)
    return [f"at {'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(document)]


def test_the_locusttest_is_valid_against_the_operators_crd(operator_source: dict[str, str]) -> None:
    crd = yaml.safe_load(operator_source["charts/locust-operator/crds/locusttest.yaml"])
    assert crd_errors(crd, locust_test()) == []
    for version in VERSIONS:
        assert definition_errors(locust_test()["metadata"], "objectmeta-meta-v1", version) == []


def test_a_misspelt_or_unknown_field_fails_the_crd_check(operator_source: dict[str, str]) -> None:
    crd = yaml.safe_load(operator_source["charts/locust-operator/crds/locusttest.yaml"])
    wrong = locust_test()
    wrong["spec"]["worker"]["resource"] = wrong["spec"]["worker"].pop("resources")
    wrong["spec"]["env"] = [{"name": "LOCUST_MQ_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]
    wrong["spec"]["workers"] = 0
    errors = crd_errors(crd, wrong)
    assert len(errors) == 3, errors
    assert "'resource' was unexpected" in errors[0] + errors[1] + errors[2]
    assert "'valueFrom' was unexpected" in errors[0] + errors[1] + errors[2]


def test_the_operator_makes_the_pods_this_manifest_expects(operator_source: dict[str, str]) -> None:
    """What locusttest.yaml and locust.conf rely on, read from the operator's source at the pin."""
    source, controller = operator_source["locust_operator/objects.py"], operator_source["locust_operator/controller.py"]
    assert 'GROUP = "locust.io"' in operator_source["locust_operator/constants.py"]
    # The docs' commands: its Services' names and the labels of its pods.
    assert 'name = f"{self.name}-master"' in controller and 'name = f"{self.name}-webui"' in controller
    assert 'f"{LABEL_ANNOTATION_PREFIX}/test-run": self.name' in controller
    assert 'f"{LABEL_ANNOTATION_PREFIX}/component": component' in controller
    assert f'LOCUST_BASE_PATH = "{OPERATOR_MOUNT}"' in source, "the locustfile ConfigMap's mount"
    assert 'args=["--master", *shlex.split(args)]' in source
    assert 'args=["--worker", "--master-host", master_svc, *shlex.split(args)]' in source
    assert source.count("ttl_seconds_after_finished=0") == 2, "its Jobs go when they finish: hence --autoquit"
    assert "security_context" not in source and "volumes=[volume]" in source, "no securityContext, no other volume"
    # No Secret reaches its pods: env items have a name and a value, nothing else (a valueFrom is dropped).
    # When this fails, the operator has learnt valueFrom: give LOCUST_MQ_USER/PASSWORD from mqusers-broker.
    crd = yaml.safe_load(operator_source["charts/locust-operator/crds/locusttest.yaml"])
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert set(spec["env"]["items"]["properties"]) == {"name", "value"}
    assert "env=[client.V1EnvVar(**env_var) for env_var in env]" in source


def test_the_worker_count_is_said_twice_in_one_file_and_agrees(tmp_path: Path) -> None:
    """The operator cannot tell the master its worker count: locusttest.yaml says it twice, held equal here."""
    test = locust_test()
    workers = test["spec"]["workers"]
    master = parse(operator_argvs(test)["master"], operator_files(tmp_path))
    assert master.expect_workers == workers, f"workers: {workers}, but the master expects {master.expect_workers}"
    assert "expect-workers" not in conf((OPERATOR / "locust.conf").read_text()), "the count is locusttest.yaml's"


def test_no_secret_in_the_locusttest_its_config_map_or_its_command_lines() -> None:
    test = locust_test()
    _, data = operator_config_map()
    envs = {"master": test["spec"].get("env", []), "worker": test["spec"].get("env", [])}
    assert secret_problems(data, operator_argvs(test), envs) == []
    # The operator cannot hand a pod a Secret, so nothing credential-like is in the LocustTest at all.
    _, names = credentials()
    assert not [e for e in test["spec"].get("env", []) if e["name"] in names or SECRET_WORDS.search(e["name"])]
    assert not SECRET_WORDS.search(yaml.safe_dump(test["spec"])), "no credential of any kind in the LocustTest"


def test_the_operators_options_are_ones_locust_and_mqusers_accept(tmp_path: Path) -> None:
    test = locust_test()
    files = operator_files(tmp_path)
    argvs = operator_argvs(test)
    master, worker = parse(argvs["master"], files), parse(argvs["worker"], files)
    assert master.master and worker.worker and worker.master_host == f"{test['metadata']['name']}-master"
    assert master.locustfile == f"{OPERATOR_MOUNT}/locustfile.py"
    assert master.host == "stomp://broker:61613", "the overlays' broker: yours goes in locust.conf"
    # The report: written to /tmp (the only folder the image lets its user write) and kept as long as the
    # overlays keep theirs, since the operator deletes a Job as soon as it finishes.
    assert not master.headless and master.autostart and master.autoquit == keep_reports_seconds()
    assert os.path.dirname(master.mq_report_json) == "/tmp"
    master.mq_report_json = str(tmp_path / "report.json")
    read_settings(master, master.host)  # mqusers' own checks of every --mq-* value
    assert master.mq_total_rate is not None, "the example paces the run (open model)"


def test_every_operator_pod_serves_metrics_where_its_annotations_say(tmp_path: Path) -> None:
    test = locust_test()
    files = operator_files(tmp_path)
    for role, argv in operator_argvs(test).items():
        options = parse(argv, files)
        annotations = test["spec"][role]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true" and annotations["prometheus.io/path"] == "/metrics"
        assert annotations["prometheus.io/port"] == options.prometheus_port, role
        assert options.prometheus_host == "0.0.0.0", f"{role}: a scraper on another pod must reach it"


@pytest.mark.parametrize("version", VERSIONS)
def test_the_operators_pods_are_bounded_and_the_config_map_valid(version: str) -> None:
    test = locust_test()
    for role in ("master", "worker"):
        resources = test["spec"][role]["resources"]
        assert definition_errors(resources, "resourcerequirements-v1", version) == []
        assert {"cpu", "memory"} <= set(resources["requests"]), role
        assert resources["requests"] == resources["limits"], f"{role}: a load generator gets Guaranteed QoS"
    name, data = operator_config_map()
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}
    assert object_errors(config_map, version) == []


def same_as_kubectls(directory: Path) -> list[Document]:
    """`kubectl kustomize DIRECTORY` (the test is skipped without kubectl)."""
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    result = subprocess.run(["kubectl", "kustomize", str(directory)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def test_the_operators_image_is_the_users_to_name(tmp_path: Path) -> None:
    test = locust_test()
    assert test["spec"]["image"] == IMAGE == overlays_image(), "the overlays' image and tag"
    kustomization = yaml.safe_load((OPERATOR / "kustomization.yaml").read_text())
    assert kustomization["resources"] == ["locusttest.yaml"]
    config = yaml.safe_load((OPERATOR / kustomization["configurations"][0]).read_text())
    assert {"path": "spec/image", "kind": "LocustTest"} in config["images"]
    assert same_as_kubectls(OPERATOR) == [test]
    operator = os.path.relpath(OPERATOR, tmp_path)  # kustomize refuses absolute paths
    (tmp_path / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources:\n  - {operator}\n"
        "images:\n  - name: mqusers-locust\n    newName: registry.example.com/mqusers-locust\n    newTag: 0.1.0\n"
    )
    [renamed] = same_as_kubectls(tmp_path)
    assert renamed["spec"]["image"] == "registry.example.com/mqusers-locust:0.1.0"
