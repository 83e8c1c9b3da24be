"""The ``mqusers`` command's own help: exit 0, every subcommand named with its line."""

import json
from pathlib import Path

import pytest

from mqusers.commands.cli import COMMANDS, USAGE, main


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["locustfiles", "--help"], ["options", "--help"]])
def test_help_exits_0(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == 0
    assert capsys.readouterr().out.startswith("usage:")


def test_the_top_help_lists_every_subcommand_with_one_line_under_100_columns(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--help"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for command in [*COMMANDS, "locustfiles", "options"]:
        [line] = [line for line in lines if line.startswith(f"  {command} ")]
        assert len(line.split(maxsplit=1)) == 2  # the command and what it does
    assert max(map(len, lines)) < 100


def test_a_wrong_command_prints_the_usage_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["no-such-command"]) == 2
    assert main([]) == 2
    assert capsys.readouterr().err == USAGE * 2


def test_mqusers_report_says_what_it_wrote_and_where(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    source = tmp_path / "run.json"
    source.write_text(json.dumps({"kind": "matrix", "messages": 10, "rate": 0, "cells": []}))
    out = tmp_path / "page.html"
    assert main(["report", str(source), "--html", str(out)]) == 0
    said = capsys.readouterr().out
    assert said == f"mqusers report: wrote {out} ({out.stat().st_size:,} bytes) from matrix {source}\n"


def test_mqusers_locustfiles_prints_the_checkouts_scenarios(capsys: pytest.CaptureFixture[str]) -> None:
    # In a checkout (or an editable install) the package has no copy: the repository's folder is the one.
    assert main(["locustfiles"]) == 0
    folder = Path(capsys.readouterr().out.strip())
    assert folder == Path(__file__).resolve().parents[2] / "locustfiles" and (folder / "pubsub.py").is_file()
