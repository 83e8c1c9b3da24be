"""A results folder: every run's JSON under a name that sorts in time order, read back oldest first.

``--mq-results DIR`` (a single run) and ``mqusers repeat`` (each of its runs) name a run's JSON
``<UTC start, YYYYmmddTHHMMSSZ>-<run id>.json``; ``mqusers report DIR`` reads the folder's runs back,
ordered by when each started (its document's ``started``, whatever its file is called).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The UTC start in a run's file name: sorts as time does, and has no character a file system refuses.
STAMP = "%Y%m%dT%H%M%SZ"


def result_name(started: float, run_id: str) -> str:
    """The file name of a run that started at ``started`` (epoch s) in a results folder."""
    return f"{time.strftime(STAMP, time.gmtime(started))}-{run_id}.json"


@dataclass
class Folder:
    """A results folder's runs, oldest first, and the files left out with the reason for each."""

    runs: list[tuple[Path, dict[str, Any]]] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)


def read_folder(folder: Path) -> Folder:
    """Every ``*.json`` of ``folder`` that is a run's report; other documents (a find-max, a summary) skipped."""
    found = Folder()
    for path in sorted(folder.glob("*.json")):
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as error:
            found.skipped.append((path, f"not a readable JSON document ({error})"))
            continue
        if not isinstance(document, dict) or document.get("kind", "run") != "run":
            kind = document.get("kind") if isinstance(document, dict) else type(document).__name__
            found.skipped.append((path, f"not a run's report ({kind})"))
            continue
        found.runs.append((path, document))
    found.runs.sort(key=lambda run: (float(run[1].get("started") or 0.0), run[0].name))
    return found
