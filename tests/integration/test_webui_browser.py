"""Locust's web UI in a real headless Chromium: the custom parameters, a refusal, the mqusers tabs of a real run.

The truths are independent of the page: the option table (labels, the scenario's classes), the
parser's own error text, and the run's ``--mq-report-json`` written by the report code.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from mqusers.options.table import OPTIONS
from mqusers.webui.webform import FIELDS, GROUPS
from tests.integration.broker_stats import wait_for
from tests.integration.browser import opened, unavailable_reason
from tests.integration.web_ui import serve

_UNAVAILABLE = unavailable_reason()
pytestmark = [
    pytest.mark.activemq,
    pytest.mark.browser,
    pytest.mark.skipif(_UNAVAILABLE is not None, reason=f"browser: {_UNAVAILABLE}"),
]
SECRET = "mqusers-local"  # the password serve() puts in LOCUST_MQ_PASSWORD

#: The table on screen: header titles and each row's cell texts.
TABLE_JS = """() => {
  const table = document.querySelector("table");
  if (!table) return {heads: [], rows: []};
  const heads = [...table.querySelectorAll("thead th")].map(th => th.innerText.trim());
  const cells = tr => [...tr.querySelectorAll("td")].map(td => td.innerText.trim());
  const rows = [...table.querySelectorAll("tbody tr")].map(cells);
  return {heads, rows};
}"""


#: The mqusers tab's table box: wider than it shows, and cued as such (webform.js).
SCROLL_CUE_JS = """() => {
  const box = document.querySelector(".MuiTableContainer-root");
  return {wider: box.scrollWidth > box.clientWidth + 1, cued: box.classList.contains("mqusers-more-right")};
}"""
#: Whether the table's right edge is inside the window (Locust's page clips what runs past it).
TABLE_FITS_JS = '() => document.querySelector("table").getBoundingClientRect().right <= innerWidth'


def table(page: Any) -> list[dict[str, str]]:
    shown = page.evaluate(TABLE_JS)
    return [dict(zip(shown["heads"], row, strict=True)) for row in shown["rows"]]


def number(text: str) -> float:
    return float(text.replace(",", ""))


def start_form(page: Any) -> None:
    page.get_by_text("Custom parameters").click()
    page.locator('input[name="Destination"]').wait_for()


#: The custom parameters as seen: each field's label (and whether it is cut short), the help line under it,
#: and the group headings, all in the order they appear on screen (top to bottom).
FORM_JS = """() => {
  const fields = [...document.querySelectorAll(".MuiFormControl-root[data-mqusers]")].map(control => {
    const label = control.querySelector("label");
    return {top: control.getBoundingClientRect().top, label: label.innerText.trim(),
            cut: label.scrollWidth > label.clientWidth + 1, help: control.querySelector(".mqusers-help").innerText};
  });
  const groups = [...document.querySelectorAll(".mqusers-group")].map(h => ({top: h.getBoundingClientRect().top,
                                                                         text: h.innerText.trim()}));
  return {fields, groups, scroll: document.documentElement.scrollWidth, inner: innerWidth};
}"""


@pytest.mark.parametrize("width", [1280, 390])
def test_the_form_shows_full_labels_in_groups_with_help_and_defaults(tmp_path: Path, width: int) -> None:
    with serve("pubsub.py", tmp_path, "--mq-report-json", str(tmp_path / "r.json")) as (base, _):
        with opened(base + "/", width=width, height=844 if width < 500 else 800) as browser:
            page = browser.page
            start_form(page)
            page.locator(".mqusers-fixed").wait_for()
            shown = page.evaluate(FORM_JS)
            page.screenshot(path=str(tmp_path / f"form-{width}.png"), full_page=True)
            fixed = page.locator(".mqusers-fixed").inner_text()
        assert not browser.errors, browser.errors
    assert shown["scroll"] <= shown["inner"] == width
    fields = sorted(shown["fields"], key=lambda f: f["top"])
    by_label = {f["label"]: f for f in fields}
    ui = [option for option in OPTIONS if option.ui]
    assert len(fields) == len(ui) == 50
    for option in ui:
        label, _, group = FIELDS[option.name]
        field = by_label[label]  # the full label, nothing added, nothing cut
        assert not field["cut"], field
        assert field["help"].startswith(option.flag + " · ") and field["help"].endswith(option.help), field
        # Under its group's heading: the last heading above it.
        above = [g["text"] for g in sorted(shown["groups"], key=lambda g: g["top"]) if g["top"] < field["top"]]
        assert above[-1] == group, (label, above)
    headings = [g["text"] for g in sorted(shown["groups"], key=lambda g: g["top"])]
    assert headings == [*GROUPS, "Broker metrics and reports (set on the command line)"]
    # locustfiles/pubsub.py: Publisher.rate = 500, both classes on /topic/mqusers.pubsub, 2 subscribers.
    assert "empty = the scenario's 500 (Publisher)" in by_label["Rate per producer, msg/s"]["help"]
    assert "/topic/mqusers.pubsub (Subscriber, Publisher)" in by_label["Destination"]["help"]
    assert "empty = the scenario's 2 (Subscriber)" in by_label["Consumer users"]["help"]
    assert " · default 5 · " in by_label["Drain idle timeout, s"]["help"]
    assert str(tmp_path / "r.json") in fixed and SECRET not in fixed


def test_the_form_refuses_bad_values_in_the_page(tmp_path: Path) -> None:
    with serve("pubsub.py", tmp_path) as (base, _), opened(base + "/") as browser:
        page = browser.page
        start_form(page)
        page.locator('input[name="userCount"]').fill("3")
        page.locator('input[name="Message size"]').fill("1XB")
        page.get_by_role("button", name="Start").click()
        page.get_by_text("mqusers: --mq-size: '1XB' is not a size").wait_for(timeout=10_000)
        page.screenshot(path=str(tmp_path / "refused.png"), full_page=True)

        page.locator('input[name="Message size"]').fill("")
        page.locator('input[name="Consumer users"]').fill("5")
        page.get_by_role("button", name="Start").click()
        page.get_by_text("mqusers: --mq-consumers 5 is more than the 3 users").wait_for(timeout=10_000)
        assert requests.get(base + "/stats/requests", timeout=5).json()["state"] == "ready"
        assert SECRET not in page.content()
        assert not browser.errors, browser.errors


def test_a_running_test_refuses_another_host_or_destination_and_the_header_keeps_the_host_in_use(
    tmp_path: Path, destination
) -> None:  # type: ignore[no-untyped-def]
    topic = destination("topic")
    with serve("pubsub.py", tmp_path) as (base, log), opened(base + "/") as browser:
        page = browser.page
        host = page.locator('input[name="host"]').input_value()
        start_form(page)
        page.locator('input[name="userCount"]').fill("3")
        page.locator('input[name="Destination"]').fill(topic)
        page.get_by_role("button", name="Start").click()
        # Bounded, not tight: beside the parallel phase's runs the start took over 20 s once (alone: 12 s the test).
        assert wait_for(lambda: requests.get(base + "/stats/requests", timeout=5).json()["state"] == "running", 60)
        # Another host while it runs (the API, or a second tab's form): refused, the run goes on.
        other = "stomp://127.0.0.1:61614"
        form = {"user_count": "3", "spawn_rate": "1", "host": other}
        refused = requests.post(base + "/swarm", data=form, timeout=5).json()
        assert refused["success"] is False and refused["host"] == host, refused
        assert refused["message"] == ("mqusers: a running test keeps its broker and options; stop it to change "
                                      f"Host (in use: {host})")  # fmt: skip
        # Another destination in the page's edit form: refused in the page.
        page.get_by_role("button", name="Edit").click()
        page.locator(".MuiModal-root").get_by_text("Custom parameters").click()
        page.locator(".MuiModal-root").locator('input[name="Destination"]').fill(topic + ".other")
        page.locator(".MuiModal-root").get_by_role("button", name="Update").click()
        page.get_by_text(f"stop it to change Destination (in use: {topic})").wait_for(timeout=10_000)
        page.screenshot(path=str(tmp_path / "edit-refused.png"), full_page=True)
        assert not browser.errors, browser.errors  # a reload may cut the page's own polls short: checked before
        page.reload()
        page.get_by_text("Host").first.wait_for()
        header = page.locator("header").inner_text()
        page.screenshot(path=str(tmp_path / "header.png"))
        assert requests.get(base + "/stats/requests", timeout=5).json()["state"] == "running"
        requests.post(base + "/stop", timeout=30)
    assert host in header and other not in header, header
    assert "stop it to change Host" in Path(log.name).read_text()


@pytest.mark.alone  # live rates within 15 % of the final ones
def test_the_mqusers_tab_shows_live_figures_then_the_reports_rows(tmp_path: Path, destination) -> None:  # type: ignore[no-untyped-def]
    topic = destination("topic")
    report_json, report_html = tmp_path / "run.json", tmp_path / "run.html"
    extra = ("--mq-report-json", str(report_json), "--mq-report-html", str(report_html))
    with serve("pubsub.py", tmp_path, *extra) as (base, log), opened(base + "/", width=1280) as browser:
        page = browser.page
        start_form(page)
        page.locator('input[name="userCount"]').fill("3")
        page.locator('input[name="spawnRate"]').fill("3")
        page.locator('input[name="Destination"]').fill(topic)
        # A gate no run passes: proves a field whose name has digits reaches its option.
        page.locator('input[name="Gate: highest receive latency, ms"]').fill("0.001")
        page.get_by_role("button", name="Start").click()
        page.get_by_role("tab", name="mqusers", exact=True).click()

        def live() -> dict[str, str] | None:
            rows = [row for row in table(page) if row.get("Destination") == topic]
            return rows[0] if rows and rows[0]["Received msg/s"] else None

        def facts() -> dict[str, str]:
            page.get_by_role("tab", name="mqusers run").click()
            shown = {row["Run"]: row["Value"] for row in table(page)}
            page.get_by_role("tab", name="mqusers", exact=True).click()
            return shown

        assert wait_for(lambda: live() is not None, timeout=20), table(page)
        time.sleep(3)  # a steady state: these live rates are held against the final ones below
        first = live()
        assert first is not None
        page.screenshot(path=str(tmp_path / "live.png"), full_page=True)
        second: dict[str, str] | None = None

        def grown() -> bool:  # the page's next poll (every 2 s) shows more sent and more received
            nonlocal second
            second = live()
            return second is not None and all(number(second[k]) > number(first[k]) for k in ("Sent", "Received"))

        assert wait_for(grown, timeout=20), (first, second)
        assert second is not None and facts()["figures"].startswith("live since")
        stats = requests.get(base + "/mqusers/stats", timeout=5).text
        assert SECRET not in stats and SECRET not in requests.get(base + "/stats/requests", timeout=5).text

        page.get_by_role("button", name="Stop").click()
        assert wait_for(lambda: facts()["figures"].startswith("final"), timeout=40)
        final = next(row for row in table(page) if row["Destination"] == topic)
        # Every column inside a 1280 px window (a Generator column was cut off at its right edge).
        assert page.evaluate(TABLE_FITS_JS), page.evaluate(TABLE_FITS_JS.replace("<= innerWidth", ""))
        assert page.evaluate(SCROLL_CUE_JS) == {"wider": False, "cued": False}
        page.screenshot(path=str(tmp_path / "final.png"), full_page=True)
        # On a phone the same table scrolls, and says so: a shade on its right (Locust's own gives no cue).
        page.set_viewport_size({"width": 390, "height": 844})
        assert wait_for(lambda: page.evaluate(SCROLL_CUE_JS) == {"wider": True, "cued": True}, timeout=5)
        page.screenshot(path=str(tmp_path / "final-390.png"), full_page=True)
        page.set_viewport_size({"width": 1280, "height": 800})
        page.get_by_role("tab", name="mqusers run").click()
        shown = page.evaluate(TABLE_JS)["rows"]
        page.screenshot(path=str(tmp_path / "run.png"), full_page=True)
        page.get_by_role("tab", name="Download Data").click()
        link = page.get_by_role("link", name="mqusers HTML report of the last run")
        html = requests.get(base + "/" + link.get_attribute("href").removeprefix("./"), timeout=5)
        assert SECRET not in page.content()
        errors = list(browser.errors)

    assert wait_for(report_json.exists, timeout=10)
    document = json.loads(report_json.read_text())
    row = next(d for d in document["destinations"] if d["destination"] == topic)
    latency = row["latency_ms"]
    # The final table is the report's row, in ms with µs digits as the console and the reports.
    assert number(final["Sent"]) == row["sent"] and number(final["Received"]) == row["received"]
    assert number(final["Sent msg/s"]) == round(row["send_rate_msgs"], 1)
    assert number(final["Received msg/s"]) == round(row["receive_rate_msgs"], 1)
    for title, key in (("p50 ms", "p50"), ("p99 ms", "p99"), ("p99.9 ms", "p999"), ("max ms", "max")):
        assert final[title] == f"{latency[key]:,.3f}", title
    # Thousands separators on every figure, as the report's own formats would write them.
    assert final["Received"] == f"{row['received']:,}"
    assert final["Received msg/s"] == f"{row['receive_rate_msgs']:,.1f}"
    for title, key in (("Lost", "lost"), ("Dup.", "duplicated"), ("Foreign", "foreign"), ("Errors", "errors")):
        assert number(final[title]) == row[key], title
    assert number(final["Backlog"]) == 0 and row["received"] == 2 * row["sent"]  # two subscribers, nothing lost
    # The live figures were a part of the same run: counts below the final ones, rates and the median near them.
    assert number(second["Sent"]) <= row["sent"] and number(second["Received"]) <= row["received"]
    for live_row in (first, second):
        assert abs(number(live_row["Sent msg/s"]) / row["send_rate_msgs"] - 1) < 0.15, live_row
        assert abs(number(live_row["Received msg/s"]) / row["receive_rate_msgs"] - 1) < 0.15, live_row
        assert 0.5 <= number(live_row["p50 ms"]) / latency["p50"] <= 2.0, live_row
    run = {fact: value for fact, value in shown}  # the single facts (notes repeat "note")
    assert run["run id"] == document["run_id"] and run["generator"].startswith(document["generator"]["verdict"])
    assert [value for fact, value in shown if fact == "note"] == document["notes"]
    gate = f"{topic}: p99 {latency['p99']:.3f} ms > --mq-max-p99-ms 0.001"
    assert [value for fact, value in shown if fact == "gate failed"] == [gate]
    assert run["JSON report"] == str(report_json)
    assert html.ok and html.text == report_html.read_text() and document["run_id"] in html.text
    assert document["options"]["max_p99_ms"] == 0.001 and document["options"]["destination"] == topic
    assert "gate failed" in Path(log.name).read_text()
    assert not errors, errors
