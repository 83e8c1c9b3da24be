"""``mqusers compare``: the console table, JSON and HTML of NEW against BASE from run JSONs or folders of them,
and bad input refused in one line with exit 2 (simulated runs: mqusers/stats is tested in test_stats.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mqusers.commands.cli import main
from mqusers.stats.bootstrap import ONE_RUN_NOTE
from mqusers.stats.figures import FIGURES
from tests.unit.synthetic_runs import document, interval_latencies


def saved(path: Path, seed: int, scale: float = 1.0, **kwargs: str) -> Path:
    rng = np.random.default_rng(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document(interval_latencies(rng, 30, 400, 1.0, scale=scale), warmup=2, **kwargs)))
    return path


def test_a_slower_run_is_called_slower_in_the_table_the_json_and_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, new = saved(tmp_path / "base.json", 1), saved(tmp_path / "new.json", 2, scale=1.5)
    out, page = tmp_path / "c.json", tmp_path / "c.html"
    assert main(["compare", str(base), str(new), "--json", str(out), "--html", str(page)]) == 0
    said = capsys.readouterr().out
    compared = json.loads(out.read_text())
    figures = compared["operations"]["receive /queue/x"]
    assert sorted(figures) == sorted(FIGURES) and compared["notes"] == [ONE_RUN_NOTE]
    for name in ("p50", "p90", "p99"):
        figure = figures[name]
        assert figure["verdict"] == "slower" and figure["difference_low_pct"] > 0
        assert figure["ratio"] == pytest.approx(figure["new"]["point"] / figure["base"]["point"])
        line = next(line for line in said.splitlines() if line.startswith(f"{name} ms "))
        assert line.split()[-1] == "slower" and f"{figure['difference_pct']:+,.1f} %" in line
    assert "note: one run a side" in said and f"files written: {out}, {page}" in said
    html = page.read_text()
    assert html.count('<span class="change-slower">slower</span>') >= 3 and "one run a side" in html


def test_folders_are_each_sides_runs_and_the_spread_is_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in range(3):
        saved(tmp_path / "base" / f"{i}.json", i)
        saved(tmp_path / "new" / f"{i}.json", 10 + i)
    out = tmp_path / "c.json"
    assert main(["compare", str(tmp_path / "base"), str(tmp_path / "new"), "--json", str(out)]) == 0
    said = capsys.readouterr().out
    compared = json.loads(out.read_text())
    assert len(compared["base"]) == len(compared["new"]) == 3 and compared["notes"] == []
    p50 = compared["operations"]["receive /queue/x"]["p50"]
    assert p50["base"]["runs"] == 3 and p50["base"]["min"] <= p50["base"]["point"] <= p50["base"]["max"]
    assert "BASE 3 runs" in said and "(their lowest-highest)" in said


def test_the_same_inputs_and_seed_give_the_same_comparison(tmp_path: Path) -> None:
    base, new = saved(tmp_path / "a.json", 1), saved(tmp_path / "b.json", 2)
    outputs = []
    for name in ("one", "two"):
        assert main(["compare", str(base), str(new), "--seed", "7", "--json", str(tmp_path / name)]) == 0
        outputs.append((tmp_path / name).read_text())
    assert outputs[0] == outputs[1]


def test_a_tolerance_keeps_small_differences_from_counting(tmp_path: Path) -> None:
    base, new = saved(tmp_path / "a.json", 1), saved(tmp_path / "b.json", 2, scale=1.5)
    out = tmp_path / "c.json"
    assert main(["compare", str(base), str(new), "--tolerance", "90", "--json", str(out)]) == 0
    compared = json.loads(out.read_text())
    assert compared["tolerance"] == 0.9
    assert {f["verdict"] for f in compared["operations"]["receive /queue/x"].values()} == {"no significant difference"}


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda d: [str(d / "missing.json"), str(d / "a.json")], "missing.json: no such file or folder"),
        (lambda d: [str(d / "old.json"), str(d / "a.json")], 'old.json: no "intervals"'),
        (lambda d: [str(d / "a.json"), str(d / "queue.json")], "ran queue.py"),
        (lambda d: [str(d / "a.json"), str(d / "send.json")], "no operation in common"),
        (lambda d: [str(d / "a.json"), str(d / "a.json"), "--json", str(d / "no" / "c.json")], "folder does not exist"),
        (lambda d: [str(d / "a.json"), str(d / "a.json"), "--resamples", "5"], "--resamples 5"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], make, said) -> None:  # type: ignore[no-untyped-def]
    saved(tmp_path / "a.json", 1)
    saved(tmp_path / "queue.json", 2, locustfile="queue.py")
    saved(tmp_path / "send.json", 3, operation="send /queue/x")
    (tmp_path / "old.json").write_text(json.dumps({"kind": "run", "destinations": []}))
    assert main(["compare", *make(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mqusers compare: ") and said in err and err.count("\n") == 1


def test_a_confidence_outside_50_to_99_9_percent_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["compare", "a.json", "b.json", "--confidence", "100"])
    assert exit.value.code == 2 and "--confidence: 100 is not within 50-99.9 %" in capsys.readouterr().err


def test_too_few_samples_read_so_in_the_table_the_json_and_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The defect: a connect measured 4 times in one second a side got "+237.0 % (+237.0 to +237.0) higher".
    paths = []
    for name, seed, scale in (("base", 1, 1.0), ("new", 2, 3.4)):
        rng = np.random.default_rng(seed)
        run = document(interval_latencies(rng, 30, 400, 1.0), warmup=2)
        connect = document([scale * rng.lognormal(0, 0.1, 4)], warmup=0, operation="connect", seconds=30.0)
        connect["intervals"]["operations"]["connect"][0][0] = run["intervals"]["measured_from"]
        run["intervals"]["operations"].update(connect["intervals"]["operations"])
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(run))
    out, page = tmp_path / "c.json", tmp_path / "c.html"
    assert main(["compare", *map(str, paths), "--json", str(out), "--html", str(page)]) == 0
    said, compared = capsys.readouterr().out, json.loads(out.read_text())
    assert {f["verdict"] for f in compared["operations"]["connect"].values()} == {"too few samples"}
    assert compared["operations"]["connect"]["p50"]["evidence"]["base"] == {"intervals": 1, "samples": 4}
    table = said[said.index("connect ") : said.index("receive /queue/x ")]
    assert table.count("too few samples") == 5 and "higher" not in table and "slower" not in table
    assert "too few samples for a verdict: connect: every figure (BASE 1 interval, 4 samples" in " ".join(said.split())
    assert "verdicts: 0 verdicts among 5 figures judged; family-wise" in " ".join(said.split())
    assert compared["figures"]["judged"] == 5 and compared["each_confidence"] == pytest.approx(1 - 0.05 / 5)
    html = page.read_text()
    assert html.count('<span class="change-too">too few samples</span>') == 5
    assert "too few samples for a verdict" in html


def test_a_base_that_lost_messages_with_a_contended_generator_is_named_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The defect: BASE had lost 4,874 messages on a contended generator and compare judged NEW against it silently.
    base, new = saved(tmp_path / "base.json", 1, scale=3.0), saved(tmp_path / "new.json", 2)
    broken = json.loads(base.read_text())
    broken["destinations"] = [{"destination": "/queue/x", "lost": 4_874, "unreceived": 0}]
    broken["generator"] = {"verdict": "contended"}
    base.write_text(json.dumps(broken))
    out, page = tmp_path / "c.json", tmp_path / "c.html"
    assert main(["compare", str(base), str(new), "--json", str(out), "--html", str(page)]) == 0
    said = " ".join(capsys.readouterr().out.split())
    warning = (f"warning: BASE {base}: 4,874 messages lost or never received; generator contended: not a baseline: "
               "a difference from it says as much about BASE as about NEW")  # fmt: skip
    assert warning in said and said.index(warning) < said.index("receive /queue/x")
    compared = json.loads(out.read_text())
    assert compared["unfit"] == {"base": {str(base): ["4,874 messages lost or never received", "generator contended"]},
                                 "new": {}}  # fmt: skip
    assert "warning: BASE" in page.read_text() and "4,874 messages lost" in page.read_text()
