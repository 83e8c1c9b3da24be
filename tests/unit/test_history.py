"""A results folder: names that sort in time, its runs read back oldest first, and its trend page's figures."""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
import pytest

from mqusers.options.parsing import OptionError
from mqusers.options.paths import writable_folder
from mqusers.report.history import read_folder, result_name
from mqusers.report.htmlreport import main
from mqusers.stats.figures import run_headlines
from mqusers.stats.samples import run_from_document
from tests.unit.html_page import Page
from tests.unit.synthetic_runs import START, document, interval_latencies

OPERATION = "receive /queue/x"


def test_result_names_sort_as_the_runs_started() -> None:
    starts = [START + 59, START + 3600 * 24 * 40, START, START + 1]  # across a month's end, and a second apart
    names = [result_name(start, "run") for start in starts]
    assert sorted(names) == [result_name(start, "run") for start in sorted(starts)]
    assert result_name(1796513055.9, "ab12") == "20261205T232415Z-ab12.json"  # date -u -d @1796513055


def test_a_results_folder_is_accepted_if_it_can_be_made(tmp_path: Path) -> None:
    assert writable_folder(str(tmp_path / "new" / "deeper"), "--mq-results") == str(tmp_path / "new" / "deeper")
    (tmp_path / "file").write_text("")
    with pytest.raises(OptionError, match=r"--mq-results: cannot write into .*: not a folder; give a writable folder"):
        writable_folder(str(tmp_path / "file"), "--mq-results")
    with pytest.raises(OptionError, match="is not a folder"):
        writable_folder(str(tmp_path / "file" / "below"), "--mq-results")


def history(tmp_path: Path, medians: list[float]) -> list[dict[str, object]]:
    """Runs saved with names that do not sort as they started: the folder's order is the documents'."""
    rng = np.random.default_rng(7)
    documents = []
    for i, median in enumerate(medians):
        found = document(interval_latencies(rng, 10, 150, median), operation=OPERATION)
        found.update(started=START + 100 * i, run_id=f"r{i}")
        (tmp_path / f"{len(medians) - i}.json").write_text(json.dumps(found))
        documents.append(found)
    (tmp_path / "find-max.json").write_text(json.dumps({"kind": "find-max", "steps": []}))
    (tmp_path / "broken.json").write_text("{")
    return documents


def test_a_folder_is_read_oldest_first_and_other_files_are_skipped_with_why(tmp_path: Path) -> None:
    documents = history(tmp_path, [1.0, 2.0, 1.5])
    found = read_folder(tmp_path)
    assert [d for _, d in found.runs] == documents
    assert sorted((p.name, why.split(" (")[0]) for p, why in found.skipped) == [
        ("broken.json", "not a readable JSON document"), ("find-max.json", "not a run's report")]  # fmt: skip


def test_the_trend_page_shows_each_runs_figures_oldest_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    documents = history(tmp_path, [1.0, 2.0, 1.5])
    out = tmp_path / "trend.html"
    assert main(["report", str(tmp_path), "--html", str(out)][1:]) == 0
    assert "the trend of 3 runs" in capsys.readouterr().out
    page = Page(out.read_text())
    header, *rows = page.tables["trend"]
    assert header == ["run", "started", "report", "throughput msg/s", "p50 ms", "p99 ms", "p99.9 ms"]
    for row, found in zip(rows, documents, strict=True):
        truth = run_headlines(run_from_document(found, "run"))[OPERATION]
        cells = [cell.split() for cell in row[3:]]  # the figure, then its interval: "low - high"
        shown = [float(value.replace(",", "")) for value, low, _, high in cells]
        assert shown == [round(truth[f], 1 if f == "throughput" else 3) for f in ("throughput", "p50", "p99", "p99.9")]
    [data] = [body for attrs, body in page.scripts if attrs.get("id") == "report-data"]
    [trend] = json.loads(data)["documents"]
    assert [run["run_id"] for run in trend["runs"]] == ["r0", "r1", "r2"]
    for run in trend["runs"]:
        value, low, high = run["figures"]["p99"]
        assert low <= value <= high
    assert "find-max.json: not a run's report (find-max)</p>" in html.unescape(out.read_text())


def test_report_takes_files_or_folders_not_both(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    history(tmp_path, [1.0])
    with pytest.raises(SystemExit) as ended:
        main([str(tmp_path), str(tmp_path / "1.json"), "--html", str(tmp_path / "x.html")])
    assert ended.value.code == 2
    assert "give JSON files (one page of them) or results folders (their trend), not both" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SystemExit):
        main([str(empty), "--html", str(tmp_path / "x.html")])
    assert f"no run's JSON report in {empty}" in capsys.readouterr().err
