"""The Kubernetes master/worker topology run for real, in network namespaces instead of pods.

    mqnTAG-m   198.18.N.1    the headless master Job's container: keep-reports.sh, locust --master
    mqnTAG-w1  198.18.N.2    a worker pod's container: worker-loop.sh (locust --worker, restarted)
    mqnTAG-w2  198.18.N.3    another worker
    root       198.18.N.254  a TCP forwarder to the local ActiveMQ on 127.0.0.1 (the cluster's "broker")

The command lines, environment and files come from the rendered overlay deploy/kubernetes/
overlays/headless, as the kubelet would assemble them: command + args, env values, secretKeyRef
values from test Secrets (the local ActiveMQ's user), ConfigMap volumes as directories. The only
changes are the ones a cluster makes: the Service name mqusers-master becomes the master's address,
`broker` the forwarder's, each mount path a directory under tmp_path; and the test's own: a short
run, 2 workers, a destination of its own. The master runs twice, as a maximum-rate search runs one
master per step: the same worker processes must serve both, through their restart loop.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

import pytest

from tests.integration.brokers import started
from tests.integration.locust_runs import ROOT
from tests.integration.netns import GATEWAY_HOST, Network, network_or_skip, unavailable_reason
from tests.kustomize import KUBERNETES, Document, find, render

_UNAVAILABLE = unavailable_reason()
pytestmark = [
    pytest.mark.netns,
    pytest.mark.activemq,
    pytest.mark.skipif(_UNAVAILABLE is not None, reason=f"netns: {_UNAVAILABLE}"),
]

WORKERS = ("w1", "w2")
# What `kubectl create secret generic mqusers-broker` would hold: services/activemq.py's user.
SECRETS = {("mqusers-broker", "user"): "mqusers", ("mqusers-broker", "password"): "mqusers-local"}
# The image's ENV and its user's home (docker/locust/Dockerfile); the image's ENTRYPOINT.
IMAGE_ENV = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"}
ENTRYPOINT = ["locust"]
RUN_SECONDS = 4

# One connection's bytes both ways, a thread per direction: the broker as a cluster would see it,
# outside the namespaces. A subprocess, not a thread of pytest's (gevent patches this process).
_FORWARDER = """\
import socket, sys, threading
listen, target = (sys.argv[1], 0), ("127.0.0.1", int(sys.argv[2]))
server = socket.create_server(listen)
print(server.getsockname()[1], flush=True)

def pipe(src, dst):
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

while True:
    client, _ = server.accept()
    upstream = socket.create_connection(target)
    for s in (client, upstream):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
    threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()
"""


@pytest.fixture
def network() -> Iterator[Network]:
    with network_or_skip(["m", *WORKERS]) as net:
        yield net


@pytest.fixture
def broker_url(network: Network) -> Iterator[str]:
    """stomp://GATEWAY:PORT, reachable from every namespace, forwarded to the local ActiveMQ."""
    broker = started("activemq")
    assert network.subnet is not None
    gateway = str(network.subnet[GATEWAY_HOST])
    forwarder = subprocess.Popen(
        [sys.executable, "-I", "-c", _FORWARDER, gateway, str(broker.port)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert forwarder.stdout is not None
        yield f"stomp://{gateway}:{int(forwarder.stdout.readline())}"
    finally:
        forwarder.kill()
        forwarder.wait()


class Pod:
    """One pod's container as the kubelet would start it, with cluster names swapped for addresses."""

    def __init__(self, documents: list[Document], workload: Document, directory: Path, names: dict[str, str]):
        spec = workload["spec"]["template"]["spec"]
        [self.container] = spec["containers"]
        self.directory = directory
        self.names = names  # cluster name -> address
        config_maps = {doc["metadata"]["name"]: doc for doc in documents if doc["kind"] == "ConfigMap"}
        volumes = {volume["name"]: volume for volume in spec["volumes"]}
        mounts = self.container["volumeMounts"]
        self.mounts = {mount["mountPath"]: directory / mount["name"] for mount in mounts}
        for mount in mounts:  # every mount known first: the files name each other's paths
            path, source = self.mounts[mount["mountPath"]], volumes[mount["name"]]
            path.mkdir(parents=True)
            for key, text in config_maps[source["configMap"]["name"]]["data"].items() if "configMap" in source else []:
                (path / key).write_text(self.rewrite(text))

    def rewrite(self, text: str) -> str:
        """Mount paths become directories; the broker's host in locust.conf the forwarder's."""
        # One pass, whole path components only: a directory under /tmp must not be rewritten twice.
        paths = "|".join(re.escape(mount) for mount in sorted(self.mounts, key=len, reverse=True))
        text = re.sub(rf"(?<![\w/.-])({paths})(?![\w.-])", lambda m: str(self.mounts[m.group(1)]), text)
        return re.sub(r"^host = stomp://broker:61613$", f"host = {self.names['broker']}", text, flags=re.M)

    def argv(self, extra: Sequence[str] = ()) -> list[str]:
        argv = [*self.container.get("command", ENTRYPOINT), *self.container.get("args", []), *extra]
        return [self.rewrite(arg) for arg in argv]

    def env(self, overrides: dict[str, str] | None = None) -> dict[str, str]:
        environment = {
            **IMAGE_ENV,
            "HOME": str(self.mounts["/tmp"]),
            "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        }
        for entry in self.container.get("env", []):
            if "value" in entry:
                environment[entry["name"]] = self.names.get(entry["value"], self.rewrite(entry["value"]))
            elif (ref := entry["valueFrom"]["secretKeyRef"])["name"] == "mqusers-broker":
                environment[entry["name"]] = SECRETS[(ref["name"], ref["key"])]
            else:
                assert ref.get("optional"), f"Secret {ref['name']} is not optional"  # the kubelet would refuse
        for entry in self.container.get("envFrom", []):
            assert entry["configMapRef"].get("optional"), entry  # none of them exist in this overlay
        return environment | (overrides or {})


def read_log(handle: IO[str]) -> str:
    handle.flush()
    return Path(handle.name).read_text()


def test_the_headless_overlay_runs_twice_on_the_same_looping_workers(
    network: Network, broker_url: str, tmp_path: Path
) -> None:
    documents = render(KUBERNETES / "overlays" / "headless")
    names = {
        find(documents, "Service", "mqusers-master")["metadata"]["name"]: network.address("m"),
        "broker": broker_url,
    }
    master = Pod(documents, find(documents, "Job", "mqusers-master"), tmp_path / "master", names)
    workers = [
        Pod(documents, find(documents, "Deployment", "mqusers-worker"), tmp_path / host, names) for host in WORKERS
    ]
    queue = f"/queue/mqusers.k8s.{network.tag}"
    # The test's own settings, after locust.conf's (the command line wins): short, 2 workers, paced.
    extra = ["-t", f"{RUN_SECONDS}s", "-u", "4", "-r", "4", "--expect-workers", str(len(WORKERS)),
             "--expect-workers-max-wait", "30", "--mq-total-rate", "300", "--mq-destination", queue]  # fmt: skip
    logs = {role: open(tmp_path / f"{role}.log", "w+") for role in ["m1", "m2", *WORKERS]}  # noqa: SIM115
    try:
        loops = [
            network.popen(host, pod.argv(), env=pod.env(), cwd=ROOT, stdout=logs[host], stderr=subprocess.STDOUT)
            for host, pod in zip(WORKERS, workers, strict=True)
        ]
        reports = []
        for run in ("m1", "m2"):
            began = time.monotonic()
            proc = network.popen(
                "m",
                master.argv(extra),
                env=master.env({"KEEP_REPORTS_SECONDS": "0"}),
                cwd=ROOT,
                stdout=logs[run],
                stderr=subprocess.STDOUT,
            )
            code = proc.wait(timeout=RUN_SECONDS + 90)
            output = read_log(logs[run])
            assert code == 0, output[-3000:]
            report = master.mounts["/reports"] / "report.json"
            reports.append(json.loads(report.read_text()))
            report.rename(report.with_name(f"{run}.json"))
            assert all(loop.poll() is None for loop in loops), "a worker's loop ended with its master"
            print(f"{run}: {time.monotonic() - began:.1f} s")
        worker_logs = {host: read_log(logs[host]) for host in WORKERS}
    finally:
        for log in logs.values():
            log.close()

    for run, report in zip(("first", "second"), reports, strict=True):
        [row] = [r for r in report["destinations"] if r["destination"] == queue]
        assert row["sent"] > 0 and row["sent"] == row["received"], (run, row)
        assert (row["lost"], row["errors"], row["duplicated"]) == (0, 0, 0), (run, row)
        assert len(report["clock_offsets"]) == len(WORKERS), (run, report["clock_offsets"])
        assert report["options"]["total_rate"] == 300 and report["options"].get("user") is not None
    assert reports[0]["run_id"] != reports[1]["run_id"]
    for output in worker_logs.values():
        # The first master's quit ended locust --worker; the loop started it again for the second.
        assert "worker-loop: locust exited with status 0; starting it again in" in output, output[-3000:]
    secrets = set(SECRETS.values()) - {"mqusers"}  # the user name is not secret (it is in the report)
    for text in [json.dumps(reports), *worker_logs.values()]:
        assert not any(secret in text for secret in secrets)


def test_the_forwarder_is_reached_from_a_namespace(network: Network, broker_url: str) -> None:
    """The broker address the pods get answers STOMP from inside a namespace (the route, the forwarder)."""
    host, port = broker_url.removeprefix("stomp://").split(":")
    probe = (
        "import socket, sys\n"
        "s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)\n"
        "s.sendall(b'CONNECT\\naccept-version:1.2\\nhost:/\\nlogin:mqusers\\npasscode:mqusers-local\\n\\n\\x00')\n"
        "print(s.recv(64).split(b'\\n')[0].decode())\n"
    )
    result = network.run("w1", [sys.executable, "-I", "-c", probe, host, port])
    assert result.stdout.strip() == "CONNECTED", result.stderr
