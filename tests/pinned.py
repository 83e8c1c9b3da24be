"""Third-party files the tests read at a pinned commit: downloaded once, checked by SHA-256, cached.

The cache is outside the checkout (every clone on the machine shares one download); a test that needs a
pin is skipped, with its reason, when the network is unreachable, and fails when the host answers with
other files than the pinned ones.
"""

from __future__ import annotations

import hashlib
import json
import os
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Pin:
    """Files of one repository at one commit, known by the SHA-256 of them all (:func:`digest`)."""

    name: str
    base: str  # the URL the paths are relative to
    paths: tuple[str, ...]
    sha256: str


OPERATOR_PIN = Pin(
    "locust-operator-0.1.6",  # tag helm-chart-0.1.6
    "https://raw.githubusercontent.com/locustio/k8s-operator/6b50cadef8314376c038067982551f7263859b41/",
    (
        "charts/locust-operator/crds/locusttest.yaml",
        *(f"locust_operator/{name}" for name in ("constants.py", "controller.py", "objects.py")),
    ),
    "f7b0c01bc7cc03eae04f2ea8ce9899b7c43eb3f6d6ddde603212f7cbb2886b0e",
)
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
DOWNLOAD_TIMEOUT_S = 15  # a pin's files are fetched all at once, so a pin takes about this at most


def digest(files: dict[str, bytes]) -> str:
    """One SHA-256 for a set of files: each path with the SHA-256 of its bytes, in path order."""
    whole = hashlib.sha256()
    for path in sorted(files):
        whole.update(path.encode() + b"\0" + hashlib.sha256(files[path]).digest())
    return whole.hexdigest()


def cache_dir() -> Path:
    """Outside the checkout, so every clone on the machine shares one download."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mqusers" / "pinned"


def download(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response:
        data: bytes = response.read()
        return data


def pinned(pin: Pin) -> dict[str, str]:
    """The pin's files as text: from the cache, else downloaded and checked; skips when the network is unreachable."""
    cached = cache_dir() / f"{pin.name}.json"
    if cached.is_file():
        files = {path: text.encode() for path, text in json.loads(cached.read_text(encoding="utf-8")).items()}
        if set(files) == set(pin.paths) and digest(files) == pin.sha256:
            return {path: data.decode() for path, data in files.items()}
    urls = [pin.base + path for path in pin.paths]
    try:
        with ThreadPoolExecutor(max_workers=len(urls)) as pool:
            files = dict(zip(pin.paths, pool.map(download, urls), strict=True))
    except urllib.error.HTTPError as error:  # the host answered: the pin itself is wrong
        pytest.fail(f"{pin.name}: {error.url}: HTTP {error.code}")
    except (urllib.error.URLError, OSError) as error:
        pytest.skip(f"network unreachable: cannot download {pin.name} from {urls[0].split('/')[2]} ({error})")
    assert digest(files) == pin.sha256, f"{pin.name}: the files at {pin.base} are not the pinned ones"
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_suffix(f".{os.getpid()}.partial")
    partial.write_text(json.dumps({path: data.decode() for path, data in files.items()}), encoding="utf-8")
    partial.replace(cached)  # atomic: two test processes may download at once
    return {path: data.decode() for path, data in files.items()}
