"""Saved runs read from disk: a run JSON, or a folder of them, into :class:`~mqusers.stats.samples.Run` s."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from mqusers.stats.samples import Run, RunFileError, run_from_document


def run_paths(argument: str) -> list[Path]:
    """A run JSON, or a folder's ``*.json`` (sorted); :class:`RunFileError` when there is none."""
    path = Path(argument)
    if path.is_dir():
        files = sorted(p for p in path.glob("*.json") if p.is_file())
        if not files:
            raise RunFileError(f"{argument}: a folder with no run JSON (*.json) in it")
        return files
    if not path.is_file():
        raise RunFileError(f"{argument}: no such file or folder")
    return [path]


def load_runs(arguments: list[str], inspect: Callable[[dict[str, Any]], list[str]] | None = None) -> list[Run]:
    """The runs of one side: files, folders of files, or both; every one must read as a run with intervals.
    ``inspect`` reads each document once, as it is parsed: its words are the run's ``said``."""
    runs = []
    for path in (p for argument in arguments for p in run_paths(argument)):
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise RunFileError(f"{path}: not a readable JSON document ({error})") from None
        if not isinstance(document, dict) or document.get("kind", "run") != "run":
            raise RunFileError(f"{path}: not a run's JSON (--mq-report-json)")
        run = run_from_document(document, str(path))
        runs.append(replace(run, said=tuple(inspect(document))) if inspect else run)
    return runs
