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
