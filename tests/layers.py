"""The import rule, as a function: which imports between mqusers' folders run up ARCHITECTURE.md's layers;
and which modules their folder's docstring does not name."""

from __future__ import annotations

import ast
import re
from pathlib import Path

#: A layer row of ARCHITECTURE.md's table starts with its folder: "| `stomp/` | ...".
LAYER_ROW = re.compile(r"^\| `(\w+)/` \|", re.M)
#: A module named in a folder's docstring: ``client.py``.
MODULE_NAME = re.compile(r"``(\w+\.py)``")


def layers(architecture: Path) -> list[str]:
    """The folders of ARCHITECTURE.md's table, top layer first."""
    return LAYER_ROW.findall(architecture.read_text(encoding="utf-8"))


def unlisted_modules(package: Path) -> list[str]:
    """``folder/module.py`` for each module its folder's ``__init__.py`` docstring does not name."""
    missing = []
    for folder in sorted(p for p in package.iterdir() if (p / "__init__.py").is_file()):
        docstring = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))) or ""
        named = set(MODULE_NAME.findall(docstring))
        missing += [f"{folder.name}/{path.name}" for path in sorted(folder.glob("*.py"))
                    if path.name != "__init__.py" and path.name not in named]  # fmt: skip
    return missing


def imported(source: str, module: str) -> set[str]:
    """The mqusers modules a file imports, anywhere in it (inside functions and TYPE_CHECKING too)."""
    found = set()
    package = module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from ..run import context
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.update(f"{base}.{alias.name}" for alias in node.names)
            found.add(base)
    return {name for name in found if name.startswith("mqusers.")}


def upward_imports(package: Path, order: list[str]) -> list[str]:
    """Every ``a -> b`` where a's folder sits below b's in ``order``; unknown folders are reported too."""
    rank = {name: i for i, name in enumerate(order)}
    wrong = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package.parent).with_suffix("")
        module = ".".join(relative.parts)
        if len(relative.parts) < 3:
            continue  # mqusers/__init__.py sits on top: it may import any layer
        own = relative.parts[1]
        if own not in rank:
            wrong.append(f"{module}: folder {own}/ is not a layer of ARCHITECTURE.md")
            continue
        for target in sorted(imported(path.read_text(encoding="utf-8"), module)):
            theirs = target.split(".")[1]
            if theirs in rank and rank[theirs] < rank[own]:
                wrong.append(f"{module} -> {target} ({own}/ imports {theirs}/, a layer above it)")
    return wrong
