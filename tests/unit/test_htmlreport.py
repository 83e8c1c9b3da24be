"""The HTML renderer: tables read back from the page equal the documents, nothing fetched, nothing secret."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from mqusers.commands.capacity import COLUMNS
from mqusers.commands.grids import Steady
from mqusers.commands.matrix import Cell, matrix_document
from mqusers.measure.book import Book
from mqusers.measure.series import Series
from mqusers.options.settings import Settings
from mqusers.report.build import RunFacts, build_report
from mqusers.report.htmlreport import chart_data, main, render
from mqusers.report.htmlrun import AUDIT_COLUMNS
from mqusers.report.reportformats import report_document
from mqusers.run.ending import DrainOutcome
from tests.unit.html_page import Page

DESTINATION = "/queue/</script><b>x"  # a name that would end the data's script element if not escaped


def run_document(lost: int = 3, run_id: str = "r1") -> dict[str, Any]:
    book, series = Book(), Series()
    for ms in (0.4, 0.5, 0.6, 12.0):
        book.on_request("STOMP", f"receive {DESTINATION}", ms, 100, None)
        series.on_request("STOMP", f"receive {DESTINATION}", ms, 100, None)
    for _ in range(7):
        book.on_request("STOMP", f"send {DESTINATION}", 0.01, 100, None)
    verdict = {DESTINATION: {"lost": lost, "duplicated": 1, "reordered": 2, "redelivered": 4, "unconfirmed": 5,
                             "foreign": 6, "by_subscription": []}}  # fmt: skip
    facts = RunFacts(run_id, 1_700_000_000.0, 1_700_000_010.0, "time", DrainOutcome(True, 1.0, "all arrived"))
    settings = Settings(password="hunter2", user="me", size=1024)
    return report_document(build_report(book, verdict, facts, settings, series))


def number(cell: str) -> float:
    return float(cell.replace(",", ""))


def test_the_audit_table_shows_the_documents_figures() -> None:
    document = run_document()
    page = Page(render([document], ["run r1"]))
    header, *rows = page.tables["audit"]
    assert header == ["destination", *AUDIT_COLUMNS]
    [row] = rows
    [expected] = document["destinations"]
    assert row[0] == DESTINATION
    assert [number(cell) for cell in row[1:]] == [expected[column] for column in AUDIT_COLUMNS]
    assert [number(cell) for cell in row[1:]] == [7, 4, 3, 1, 2, 4, 5, 6]


def test_the_page_fetches_nothing_and_carries_its_chart_data_intact() -> None:
    document = run_document()
    page = Page(render([document], ["run r1"]))
    assert page.links == []  # no CDN, no stylesheet link: uPlot and the styles are inline
    code = [body for attrs, body in page.scripts if "type" not in attrs]
    assert code[0].startswith("/*! https://github.com/leeoniya/uPlot (v1.6.32) */") and "new uPlot(" in code[1]
    [data] = [body for attrs, body in page.scripts if attrs.get("id") == "report-data"]
    assert "</" not in data
    assert json.loads(data) == json.loads(json.dumps({"documents": [chart_data(document)], "titles": ["run r1"]}))


def test_options_are_shown_but_never_a_secret() -> None:
    document = run_document()
    document["options"]["password"] = "hunter2"  # a hand-edited or older JSON: still not shown
    html = render([document], ["run r1"])
    assert "hunter2" not in html
    assert ["size", "1,024"] in Page(html).tables["options"] and ["user", "me"] in Page(html).tables["options"]


def test_several_runs_are_compared_side_by_side() -> None:
    first, second = run_document(lost=0, run_id="a"), run_document(lost=9, run_id="b")
    page = Page(render([first, second], ["a.json", "b.json"]))
    header, *rows = page.tables["compare"]
    assert [row[0] for row in rows] == ["a.json", "b.json"]
    lost = header.index("lost")
    assert [number(row[lost]) for row in rows] == [0, 9]
    p99 = header.index("p99 ms")
    assert number(rows[0][p99]) == first["destinations"][0]["latency_ms"]["p99"]


FIND_MAX = {"kind": "find-max", "max_rate": 1800.0, "steps": [
    {"rate": 1000.0, "achieved": 999.0, "sustained": True, "reason": "", "p50_ms": 0.4, "p99_ms": 1.1,
     "p999_ms": 2.0, "max_ms": 3.0, "lost": 0, "verdict": "ok", "report": "steps/1000.json"},
    {"rate": 2000.0, "achieved": 1500.0, "sustained": False, "reason": "achieved 75 % of the target",
     "p50_ms": 40.0, "p99_ms": 90.0, "p999_ms": 99.0, "max_ms": 120.0, "lost": 0, "verdict": "ok",
     "report": "steps/2000.json"},
]}  # fmt: skip
CURVE = {"kind": "curve", "max_rate": 1800.0, "points": [
    {"percent": 50.0, "offered": 900.0, "achieved": 900.0, "sustained": True, "p50_ms": 0.3, "p99_ms": 0.9,
     "p999_ms": 1.5, "max_ms": 2.0, "lost": 0},
]}  # fmt: skip


def test_a_search_and_a_curve_render_their_tables_and_link_each_steps_run() -> None:
    page = Page(render([FIND_MAX, CURVE], ["search", "curve"]))
    _, *steps = page.tables["steps"]
    assert [(number(s[0]), number(s[1]), s[2]) for s in steps] == [(1000, 999, "yes"), (2000, 1500, "no")]
    assert page.links == ["steps/1000.json", "steps/2000.json"]
    _, point = page.tables["points"]
    assert [number(point[0]), number(point[5])] == [50, 0.9]
    assert "compare" not in page.tables  # no runs to compare


def test_a_curves_table_says_whether_each_point_kept_up_as_the_console_does() -> None:
    def point(percent: float, sustained: bool, **more: Any) -> dict[str, Any]:
        return {"percent": percent, "offered": 18.0 * percent, "achieved": 18.0 * percent, "sustained": sustained,
                "p99_ms": 0.9, "lost": 0, **more}  # fmt: skip

    why = "schedule lag p99 7.000 ms > 5.000 ms"
    points = [point(50, True), point(90, True, flaky=True, why=f"held on a rerun after: {why}"),
              point(100, False, why=why, report="steps/step-03.json")]  # fmt: skip
    page = Page(render([{"kind": "curve", "max_rate": 1800.0, "points": points}], ["curve.json"]))
    header, *rows = page.tables["points"]
    assert header[3] == "keeps up" == COLUMNS[2]  # the console's label
    assert [row[3] for row in rows] == ["yes", "flaky", "no"]
    assert rows[2][-1] == why and page.links == ["steps/step-03.json"]  # why not, and the point's own run
    old = Page(render([{"kind": "curve", "max_rate": 1800.0, "points": [{"percent": 50.0, "offered": 900.0}]}],
                      ["old.json"]))  # fmt: skip
    assert old.tables["points"][1][3] == "-"  # saved before points said: not a "no"


def test_a_cluster_comparison_and_a_runs_failover_render_their_tables() -> None:
    runs = [{"repeat": n, "report": f"pair-durable-{n}.json", "msgs": 940.0 + n, "sent": 9, "received": 9, "lost": 0}
            for n in (1, 2)]  # fmt: skip
    cluster = {"kind": "cluster-compare", "size": "646", "repeats": 2, "legend": "msg/s: the median", "rows": [
        {"config": "pair", "url": "stomp://a:1,stomp://b:2", "noise": [["persistent", "durable"]],
         "warmup": {"durable": {"report": "pair-durable-warmup.json", "msgs": 700.0}},
         "schemes": {"durable": {"msgs": 950.0, "msgs_interval": [900.0, 990.0], "runs": runs}},
         "latency": {"rate": 1000.0, "p50_ms": 0.3, "p99_ms": 1.2, "runs": [
             {"repeat": 1, "report": "pair-latency-1.json", "p50_ms": 0.3, "p99_ms": 1.2, "received": 9, "lost": 0}]},
         "failover": {"window_ms": 2363.0, "lost": 0, "unconfirmed": 1, "dup_after_reconnect": 15,
                      "report": "pair-failover.json"}}],
        "titles": {"persistent": "persistent, non-durable", "durable": "persistent, durable"}}  # fmt: skip
    run = run_document()
    run["faults"] = [{"at_s": 5.0, "command": "kill -KILL 42", "ran": True, "started_ns": 1_700_000_005_000_000_000,
                      "ended_ns": 1_700_000_005_020_000_000, "exit_code": 0, "output": ""}]  # fmt: skip
    run["failover"] = {"outages": 1, "destinations": [{
        "destination": DESTINATION, "outages": 1, "reconnects": 1, "unrecovered": 0,
        "window_max_ms": {"consumer": 3000.0}, "reconnect_max_ms": 2500.0, "after_ready_max_ms": 400.0,
        "latency_ms": {"during": {"p99_ms": 900.0}, "outside": {"p99_ms": 1.5}},
        "windows": [{"start_ns": 1_700_000_005_000_000_000, "end_ns": 1_700_000_008_000_000_000}]}]}  # fmt: skip
    page = Page(render([cluster, run], ["cluster", "run"]))
    _, row = page.tables["cluster"]
    assert row[:5] == ["pair", "stomp://a:1, stomp://b:2", "-", "-", "950.0(900.0-990.0)"]
    assert row[5] == "persistent ≈ persistent durable"  # the columns' own names
    _, row = page.tables["cluster-failover"]
    assert row == ["pair", "2,363.000", "-", "-", "0", "1", "15"]
    # Every run is listed, the warm-up's as left out, the paced and failover runs by their reports' names (no
    # throughput of their own), each linking its report.
    listed = [r[:3] for r in page.tables["grid-runs"][1:]]
    assert listed == [
        ["pair persistent, durable", "warm-up (left out)", "700.0"],
        ["pair persistent, durable", "1", "941.0"],
        ["pair persistent, durable", "2", "942.0"],
        ["pair latency at 1,000 msg/s", "1", "pair-latency-1.json"],
        ["pair failover", "-", "pair-failover.json"],
    ]
    assert page.links == ["pair-durable-warmup.json", "pair-durable-1.json", "pair-durable-2.json",
                          "pair-latency-1.json", "pair-failover.json"]  # fmt: skip
    _, failover = page.tables["failover"]
    assert failover[0] == DESTINATION and failover[4:6] == ["-", "3,000.000"] and failover[8:] == ["900.000", "1.500"]
    _, fault = page.tables["faults"]
    assert fault[:3] == ["5.0", "kill -KILL 42", "0"]
    data = json.loads(page.scripts[0][1])["documents"]
    assert data[0] == {"kind": "cluster-compare"}
    assert data[1]["marks"] == {"windows": [[1_700_000_005.0, 1_700_000_008.0]],
                                "faults": [[1_700_000_005.0, "5s: kill -KILL 42"]]}  # fmt: skip


def test_a_matrix_renders_the_seed_methods_tables_per_mode(tmp_path: Path) -> None:
    def figures(mean: float, p99: float, msgs: float, mbit: float, slug: str) -> dict[str, Any]:
        runs = [{"repeat": 1, "report": str(tmp_path / f"{slug}-1.json"), "msgs": msgs}]
        return {"mean": mean, "p99": p99, "msgs": msgs, "mbit": mbit, "lost": 0, "runs": runs}

    results = {
        "topic": [(Cell("topic", False, False, "1KB"), figures(0.5, 1.2, 9000.0, 73.7, "topic-n-1KB")),
                  (Cell("topic", True, True, "1KB"), figures(2.5, 9.0, 4000.0, 32.8, "topic-pd-1KB"))],
        "request-reply": [(Cell("request-reply", False, False, "1KB"),
                           figures(0.9, 3.0, 1100.0, 9.0, "request-reply-n-1KB"))],
    }  # fmt: skip
    document = matrix_document(results, STEADY, 0.0)
    page = Page(render([document], ["matrix"]))
    header, plain, durable = page.tables["matrix matrix-topic"]
    assert header[3] == "forwarding latency mean ms" and page.tables["matrix matrix-request-reply"][0][3] == (
        "round trip latency mean ms")  # fmt: skip
    assert plain[:7] == ["no", "no", "1KB", "0.500", "1.200", "9,000.0", "73.70"] and durable[:2] == ["yes", "yes"]
    assert page.links == [str(tmp_path / f"{slug}-1.json") for slug in ("topic-n-1KB", "topic-pd-1KB",
                                                                       "request-reply-n-1KB")]  # fmt: skip


def test_the_command_writes_the_page_and_refuses_an_unknown_kind(tmp_path: Path) -> None:
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps(run_document()))
    out = tmp_path / "out.html"
    assert main([str(saved), "--html", str(out)]) == 0
    assert Page(out.read_text()).tables["audit"][1][0] == DESTINATION
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"kind": "matrix?"}))
    with pytest.raises(SystemExit) as refused:
        main([str(odd), "--html", str(out)])
    assert refused.value.code == 2


STEADY = Steady(warmup_seconds=5, steady_after=3, seconds=20, messages=20_000, repeats=1)
UNITS = {"ms": 3, "msg/s": 1, "Mbit/s": 2, "%": 1, "s": 1}  # the page's rule, written out independently


def test_every_figure_has_its_units_format_and_every_thousand_its_separator(tmp_path: Path) -> None:
    results = {"topic": [(Cell("topic", False, False, "1KB"), {"mean": 0.5, "p99": 1.25, "msgs": 12345.678,
                                                                "mbit": 101.1, "lost": 1234})]}  # fmt: skip
    cluster = {"kind": "cluster-compare", "size": "646", "messages": 2000, "rows": [
        {"config": "pair", "url": "stomp://a:1", "schemes": {"durable": {"msgs": 9500.25}},
         "failover": {"window_ms": 2363.5, "lost": 0, "unconfirmed": 1, "dup_after_reconnect": 15}}]}  # fmt: skip
    first, second = run_document(lost=1234, run_id="a"), run_document(run_id="b")
    documents = [first, second, FIND_MAX, CURVE, cluster, matrix_document(results, STEADY, 0.0)]
    page = Page(render(documents, [f"d{i}.json" for i in range(len(documents))]))
    checked = 0
    for css, (header, *rows) in page.tables.items():
        if css in ("options", "broker-wide"):
            continue  # an option's or a figure's own value, one per row
        for column, heading in enumerate(header):
            cells = [row[column] for row in rows if re.fullmatch(r"-?[\d,]+(\.\d+)?", row[column])]
            unit = heading.rsplit(" ", 1)[-1]
            for text in cells:
                checked += 1
                whole, _, decimals = text.partition(".")
                assert len(decimals) == UNITS.get(unit, 0), (css, heading, text)  # a count has no decimals
                assert whole.lstrip("-") == f"{int(whole.replace(',', '')):,}".lstrip("-"), (css, heading, text)
    assert checked > 60


def test_a_single_documents_page_names_it_once_and_says_what_ran() -> None:
    document = run_document()
    document["options"]["rate"] = 1250.5
    document["options"]["broker"] = "stomp://broker:61613"
    document["scenario"] = {"locustfile": "pubsub.py", "server": "ActiveMQ/6.1.2", "users": {"Publisher": 3,
                            "Subscriber": 1200}, "rate": "250 msg/s asked per producer", "size": 1024}  # fmt: skip
    assert "r1" not in render([document], ["run r1"]).split("<h1>mqusers run r1</h1>")[1].split("<section")[0]
    html = render([document], ["runs/r1.json"])
    assert html.count("runs/r1.json") == 1  # the header's "from ...", no heading repeating it
    assert "<h1>mqusers run r1</h1>" in html and "<h2>" not in html.split('<section class="run"')[1].split("<h3>")[0]
    ran = html.split('<dl class="what-ran">')[1].split("</dl>")[0]
    assert f"<dd>{DESTINATION}</dd>".replace("<b>", "&lt;b&gt;").replace("</script>", "&lt;/script&gt;") in ran
    # Flags as a command line takes them (no thousands separator), so the line can be pasted back.
    assert "--mq-rate 1250.5" in ran and "--mq-size 1024" in ran and "hunter2" not in ran and "heartbeats" not in ran
    assert "<dd>pubsub.py</dd>" in ran and "<dd>stomp://broker:61613 (ActiveMQ/6.1.2)</dd>" in ran
    assert "<dd>users: Publisher 3, Subscriber 1,200; 250 msg/s asked per producer; 1,024 B messages</dd>" in ran


def test_connects_disconnects_and_the_churns_connections_have_their_tables() -> None:
    book = Book()
    for _ in range(4):
        book.on_request("STOMP", "connect stomp://h:1", 2.0, 0, None)
        book.on_request("STOMP", "disconnect stomp://h:1", 0.5, 0, None)
    book.on_request("STOMP", "connect stomp://h:1", 3.0, 0, ValueError("refused"))
    facts = RunFacts("c1", 1_700_000_000.0, 1_700_000_010.0, "time", DrainOutcome(True, 1.0, "all arrived"))
    page = Page(render([report_document(build_report(book, {}, facts, Settings()))], ["run c1"]))
    header, *rows = page.tables["operations"]
    assert header[:3] == ["operation", "count", "failed"]
    assert [row[:3] for row in rows] == [["connect stomp://h:1", "5", "1"], ["disconnect stomp://h:1", "4", "0"]]
    header, row = page.tables["connections"]
    assert header[:5] == ["opened", "opened/s", "failed", "closed with receipt", "closed without"]
    assert row[0] == "4" and row[2:5] == ["1", "4", "0"]
    assert "connections" not in Page(render([run_document()], ["run r1"])).tables  # no churn, no table


def test_a_run_with_transactions_has_their_table_and_its_aborted_columns() -> None:
    book = Book()
    for _ in range(3):
        book.on_request("STOMP", f"commit {DESTINATION}", 0.5, 0, None)
    book.on_request("STOMP", f"abort {DESTINATION}", 0.4, 0, None)
    book.on_request("STOMP", f"commit {DESTINATION}", 10.0, 0, ValueError("no RECEIPT within 10s"))
    for _ in range(50):
        book.on_request("STOMP", f"send {DESTINATION}", 0.01, 100, None)
    verdict = {DESTINATION: {"aborted": 10, "aborted_delivered": 1, "by_subscription": []}}
    facts = RunFacts("t1", 1_700_000_000.0, 1_700_000_010.0, "time", DrainOutcome(True, 1.0, "all arrived"))
    document = report_document(build_report(book, verdict, facts, Settings()))
    page = Page(render([document], ["run t1"]))
    header, row = page.tables["transactions"]
    assert header == ["committed", "aborted", "ended/s", "commit unanswered", "abort unanswered", "messages aborted",
                      "aborted delivered"]  # fmt: skip
    assert [row[i] for i in (0, 1, 3, 4, 5, 6)] == ["3", "1", "1", "0", "10", "1"]
    header, audit = page.tables["audit"]
    assert header[-2:] == ["aborted", "aborted delivered"] and audit[-2:] == ["10", "1"]
    plain = Page(render([run_document()], ["run r1"]))
    assert "transactions" not in plain.tables and plain.tables["audit"][0] == ["destination", *AUDIT_COLUMNS]
