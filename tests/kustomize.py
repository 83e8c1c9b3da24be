"""Render deploy/kubernetes/ the way `kubectl kustomize` does, for the subset the manifests use.

No cluster and no kustomize binary are needed: the layout adds resources and never patches, so a
build is the concatenation of every listed file and directory, the ConfigMaps the generators make
(names kept: the manifests disable the hash suffix) and the `images:` renames. Any other kustomize
field is refused rather than ignored, so a manifest change that needs more than this fails the tests
loudly instead of being validated half-rendered. When `kubectl` is installed,
tests/unit/test_kubernetes.py checks this rendering against `kubectl kustomize`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
KUBERNETES = ROOT / "deploy" / "kubernetes"
OVERLAYS = sorted(path.name for path in (KUBERNETES / "overlays").iterdir() if path.is_dir())

Document = dict[str, Any]

_KINDS = {
    ("kustomize.config.k8s.io/v1beta1", "Kustomization"),
    ("kustomize.config.k8s.io/v1alpha1", "Component"),
}
_FIELDS = {"apiVersion", "kind", "resources", "components", "configMapGenerator", "generatorOptions", "images"}


class KustomizeError(ValueError):
    """A kustomization this renderer does not handle (or a broken one)."""


def load_documents(path: Path) -> list[Document]:
    documents = [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
    for doc in documents:
        if not isinstance(doc, dict) or "kind" not in doc or "apiVersion" not in doc:
            raise KustomizeError(f"{path}: not a Kubernetes object: {str(doc)[:80]}")
    return documents


def _kustomization(directory: Path) -> Document:
    path = directory / "kustomization.yaml"
    if not path.is_file():
        raise KustomizeError(f"{directory}: no kustomization.yaml")
    spec: Document = yaml.safe_load(path.read_text())
    if (spec.get("apiVersion"), spec.get("kind")) not in _KINDS:
        raise KustomizeError(f"{path}: apiVersion/kind {spec.get('apiVersion')}/{spec.get('kind')}")
    unknown = set(spec) - _FIELDS
    if unknown:
        raise KustomizeError(f"{path}: fields this renderer does not apply: {sorted(unknown)}")
    return spec


def _config_map(directory: Path, generator: Document, hash_disabled: bool) -> Document:
    unknown = set(generator) - {"name", "files", "literals", "options"}
    if unknown:
        raise KustomizeError(f"{directory}: configMapGenerator fields {sorted(unknown)}")
    if not generator.get("options", {}).get("disableNameSuffixHash", hash_disabled):
        raise KustomizeError(f"{directory}: {generator['name']}: a hashed name needs real kustomize")
    data: dict[str, str] = {}
    for entry in generator.get("files", []):
        key, _, source = entry.rpartition("=")
        path = (directory / source).resolve()
        if not path.is_relative_to(directory.resolve()):  # kustomize's default load restriction
            raise KustomizeError(f"{directory}: {source} is outside the kustomization's directory")
        data[key or path.name] = path.read_text()
    for literal in generator.get("literals", []):
        key, _, value = literal.partition("=")
        data[key] = value
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": generator["name"]}, "data": data}


def _rename_images(documents: list[Document], images: list[Document]) -> None:
    def visit(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("containers", "initContainers") and isinstance(value, list):
                    for container in value:
                        container["image"] = renamed(container["image"])
                visit(value)
        elif isinstance(node, list):
            for item in node:
                visit(item)

    def renamed(image: str) -> str:
        name, tag = image, ""
        if ":" in image.rsplit("/", 1)[-1]:  # a tag, not a registry's port
            name, tag = image.rsplit(":", 1)
        for rule in images:
            if rule["name"] == name:
                name = rule.get("newName", name)
                if "digest" in rule:
                    return f"{name}@{rule['digest']}"
                tag = rule.get("newTag", tag)
        return f"{name}:{tag}" if tag else name

    visit(documents)


def render(directory: Path) -> list[Document]:
    """Every object `kubectl kustomize DIRECTORY` would print (in the listed order, not kustomize's)."""
    spec = _kustomization(directory)
    documents: list[Document] = []
    for entry in [*spec.get("resources", []), *spec.get("components", [])]:
        if Path(entry).is_absolute():  # kustomize: "new root cannot be absolute"
            raise KustomizeError(f"{directory}: {entry}: kustomize takes relative paths only")
    for entry in spec.get("resources", []):
        path = directory / entry
        documents += render(path) if path.is_dir() else load_documents(path)
    hash_disabled = bool(spec.get("generatorOptions", {}).get("disableNameSuffixHash", False))
    for generator in spec.get("configMapGenerator", []):
        documents.append(_config_map(directory, generator, hash_disabled))
    for entry in spec.get("components", []):
        component = directory / entry
        if _kustomization(component)["kind"] != "Component":
            raise KustomizeError(f"{component}: listed under components but not a Component")
        documents += render(component)
    _rename_images(documents, spec.get("images", []))
    names = [(doc["kind"], doc["metadata"]["name"]) for doc in documents]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise KustomizeError(f"{directory}: objects defined twice: {duplicates}")
    return documents


def find(documents: list[Document], kind: str, name: str) -> Document:
    for doc in documents:
        if doc["kind"] == kind and doc["metadata"]["name"] == name:
            return doc
    raise KeyError(f"no {kind} {name}")
