"""Test helpers live in helper modules: no test file imports another test file or a conftest."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def imported_from_tests(source: str) -> set[str]:
    """Every ``tests.`` module a source imports (``from tests.x import y`` names ``tests.x.y`` too)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.startswith("tests.")}


def offending(source: str) -> list[str]:
    return sorted(
        name
        for name in imported_from_tests(source)
        if name.rpartition(".")[2].startswith("test_") or name.rpartition(".")[2] == "conftest"
    )


def test_no_test_file_imports_another_test_file_or_a_conftest() -> None:
    found = {}
    for path in sorted(TESTS.rglob("*.py")):
        relative = path.relative_to(TESTS).as_posix()
        names = offending(path.read_text(encoding="utf-8"))
        if names:
            found[relative] = names
    assert found == {}


def test_a_planted_import_of_a_test_file_or_a_conftest_is_named() -> None:
    planted = "from tests.unit.test_events import connected\nfrom tests.integration.conftest import ROOT\n"
    assert offending(planted) == ["tests.integration.conftest", "tests.unit.test_events"]
    assert offending("from tests.integration.locust_runs import run_locust\nfrom tests import broker_samples\n") == []
