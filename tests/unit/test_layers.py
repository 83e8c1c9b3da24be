"""Folders are layers: every import between mqusers' folders points down ARCHITECTURE.md's table."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.layers import imported, layers, unlisted_modules, upward_imports

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "mqusers"
ORDER = layers(ROOT / "ARCHITECTURE.md")


def test_the_table_lists_every_folder_once() -> None:
    folders = sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file())
    assert sorted(ORDER) == folders and len(set(ORDER)) == len(ORDER)


def test_the_package_root_holds_only_the_api_and_the_folders() -> None:
    files = sorted(p.name for p in PACKAGE.iterdir() if p.is_file())
    assert files == ["__init__.py", "errors.py", "py.typed"]


def test_the_error_tree_sits_below_every_folder() -> None:
    assert imported((PACKAGE / "errors.py").read_text(encoding="utf-8"), "mqusers.errors") == set()


def test_every_module_is_named_in_its_folders_row() -> None:
    assert unlisted_modules(PACKAGE, ROOT / "ARCHITECTURE.md") == []


def test_an_unlisted_module_is_named(tmp_path: Path) -> None:
    copy = tmp_path / "mqusers"
    (copy / "run").mkdir(parents=True)
    (copy / "run" / "__init__.py").write_text('"""Run."""\n')
    (copy / "run" / "context.py").write_text('"""Listed."""\n')
    (copy / "run" / "stray.py").write_text('"""Not listed."""\n')
    table = tmp_path / "ARCHITECTURE.md"
    table.write_text("| folder | modules | job |\n|---|---|---|\n| `run/` | `context.py` | the run |\n")
    assert unlisted_modules(copy, table) == ["run/stray.py"]


def test_no_import_runs_up_the_layers() -> None:
    assert upward_imports(PACKAGE, ORDER) == []


def test_a_planted_upward_import_is_found(tmp_path: Path) -> None:
    copy = tmp_path / "mqusers"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "assets"))
    wire = copy / "stomp" / "wire.py"
    wire.write_text(wire.read_text() + "\n\ndef _late() -> None:\n    from mqusers.report import build  # noqa\n")
    relative = copy / "measure" / "names.py"
    relative.write_text(relative.read_text() + "\nfrom ..run import context  # noqa\n")
    assert upward_imports(copy, ORDER) == [
        "mqusers.measure.names -> mqusers.run (measure/ imports run/, a layer above it)",
        "mqusers.measure.names -> mqusers.run.context (measure/ imports run/, a layer above it)",
        "mqusers.stomp.wire -> mqusers.report (stomp/ imports report/, a layer above it)",
        "mqusers.stomp.wire -> mqusers.report.build (stomp/ imports report/, a layer above it)",
    ]


def test_a_folder_outside_the_table_is_named(tmp_path: Path) -> None:
    copy = tmp_path / "mqusers"
    (copy / "extras").mkdir(parents=True)
    (copy / "extras" / "__init__.py").write_text('"""Somewhere new."""\n')
    assert upward_imports(copy, ORDER) == ["mqusers.extras.__init__: folder extras/ is not a layer of ARCHITECTURE.md"]
