"""Folders are layers: every import between mqusers' folders points down ARCHITECTURE.md's table."""

from __future__ import annotations

import ast
import re
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


def test_every_module_is_named_in_its_folders_docstring() -> None:
    assert unlisted_modules(PACKAGE) == []


def test_an_unlisted_module_is_named(tmp_path: Path) -> None:
    copy = tmp_path / "mqusers"
    (copy / "run").mkdir(parents=True)
    (copy / "run" / "__init__.py").write_text('"""Run.\n\nModules: ``context.py``."""\n')
    (copy / "run" / "context.py").write_text('"""Listed."""\n')
    (copy / "run" / "stray.py").write_text('"""Not listed."""\n')
    assert unlisted_modules(copy) == ["run/stray.py"]


def test_architecture_says_each_folders_job_in_at_most_25_words() -> None:
    rows = re.findall(r"^\| `(\w+)/` \|([^|]*)\|$", (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8"), re.M)
    assert sorted(folder for folder, _ in rows) == sorted(ORDER)
    assert [folder for folder, job in rows if len(job.split()) > 25] == []


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


#: What a folder that calls itself pure must not touch: files, sockets, threads, processes, the clock's sleep.
IMPURE_MODULES = {"socket", "ssl", "select", "selectors", "threading", "subprocess", "multiprocessing", "gevent",
                  "requests", "urllib", "http", "zmq", "shutil", "tempfile", "pathlib"}  # fmt: skip
IMPURE_CALLS = {"open", "read_text", "write_text", "read_bytes", "write_bytes", "sleep", "system", "popen", "listdir",
                "scandir", "unlink", "mkdir"}  # fmt: skip


def impurities(folder: Path) -> list[str]:
    """``module: what`` for each import or call in ``folder`` that does I/O or runs a thread."""
    found = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            found += [f"{path.name}: import {n}" for n in names if n.split(".")[0] in IMPURE_MODULES]
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
                if name in IMPURE_CALLS:
                    found.append(f"{path.name}: {name}()")
    return found


def pure_folders() -> list[Path]:
    """The folders whose docstring's first line calls them pure."""
    return [
        folder
        for folder in sorted(PACKAGE.iterdir())
        if (folder / "__init__.py").is_file()
        and "pure" in (ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or "").splitlines()[0].lower()
    ]


def test_a_folder_that_says_pure_does_no_io_and_runs_no_thread() -> None:
    folders = pure_folders()
    assert {f.name for f in folders} >= {"audit", "findmax", "measure", "stats"}
    assert {f.name: impurities(f) for f in folders} == {f.name: [] for f in folders}


def test_an_impure_module_in_a_pure_folder_is_named(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("import threading\n\ndef f(p):\n    return open(p).read()\n")
    assert impurities(tmp_path) == ["bad.py: import threading", "bad.py: open()"]
