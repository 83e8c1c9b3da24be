"""The Grafana dashboards: generated from the schema, valid for file provisioning, every name real."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from mqusers.sinks import schema
from tools import dashboards, promdashboard

ROOT = Path(__file__).resolve().parents[2]
GRAFANA = ROOT / "grafana"
COMMITTED = sorted((GRAFANA / "dashboards").glob("*.json"))

_FROM = re.compile(r'FROM "([^"]+)"')
_ALIAS = re.compile(r'AS "([^"]+)"')
_QUOTED = re.compile(r'(AS )?"([^"]+)"')


def load(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text())
    return document


def queries(board: dict[str, Any]) -> list[str]:
    """Every InfluxQL text a dashboard runs: panel targets, variables, annotations."""
    found = [t["query"] for p in board["panels"] for t in p.get("targets", [])]
    found += [v["query"] for v in board["templating"]["list"]]
    found += [a["query"] for a in board["annotations"]["list"] if "query" in a]
    return found


def test_regenerating_gives_the_committed_files() -> None:
    rendered = dashboards.render_all()
    assert sorted(rendered) == [path.name for path in COMMITTED]
    for path in COMMITTED:
        assert path.read_text() == rendered[path.name], f"run `make dashboards`: {path} is stale"


def test_the_datasource_is_provisioned_for_influxql_on_influxdb_2() -> None:
    [source] = yaml.safe_load((GRAFANA / "provisioning/datasources/mqusers.yml").read_text())["datasources"]
    assert (source["uid"], source["type"]) == (dashboards.DATASOURCE["uid"], dashboards.DATASOURCE["type"])
    data = source["jsonData"]
    assert data.get("version", "InfluxQL") == "InfluxQL"  # not Flux: InfluxQL runs on 1.x, 2.x and 3.x
    assert data["dbName"] == "${INFLUX_BUCKET}" and data["httpHeaderName1"] == "Authorization"
    # The token comes from the environment; no secret lives in the repository.
    assert source["secureJsonData"] == {"httpHeaderValue1": "Token ${INFLUX_TOKEN}"}


def test_the_dashboard_provider_reads_the_folder_compose_mounts() -> None:
    [provider] = yaml.safe_load((GRAFANA / "provisioning/dashboards/mqusers.yml").read_text())["providers"]
    assert provider["type"] == "file"
    compose = (ROOT / "docker-compose.yml").read_text()
    assert f"./grafana/dashboards:{provider['options']['path']}:ro" in compose


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.stem)
def test_dashboard_is_valid_for_provisioning(path: Path) -> None:
    board = load(path)
    assert re.fullmatch(r"[a-z0-9-]{1,40}", board["uid"]) and board["title"].startswith("mqusers")
    assert isinstance(board["schemaVersion"], int) and board["schemaVersion"] >= 36
    assert board["panels"] and "id" not in board  # file provisioning assigns the database id
    ids = [panel["id"] for panel in board["panels"]]
    assert len(set(ids)) == len(ids)
    for panel in board["panels"]:
        if panel["type"] == "row":  # a header across the board: no queries of its own
            assert panel["gridPos"] == {"x": 0, "y": panel["gridPos"]["y"], "w": 24, "h": 1} and panel["title"]
            assert panel["collapsed"] is False and panel["panels"] == [] and "targets" not in panel
            continue
        assert panel["datasource"] == dashboards.DATASOURCE, panel["title"]
        assert panel["type"] in {"timeseries", "table", "stat"} and panel["targets"]
        assert set(panel["gridPos"]) == {"x", "y", "w", "h"} and panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        for target in panel["targets"]:
            assert target["datasource"] == dashboards.DATASOURCE and target["rawQuery"] is True
    names = {variable["name"] for variable in board["templating"]["list"]}
    assert {"run", "destination"} <= names and (path.stem in ("comparison", "broker") or "worker" in names)
    [events] = board["annotations"]["list"]
    assert events["datasource"] == dashboards.DATASOURCE and events["textColumn"] in schema.EVENTS.fields
    assert set(events["tagsColumn"].split(",")) <= set(schema.EVENTS.tags)


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.stem)
def test_every_measurement_field_and_tag_a_query_names_exists_in_the_schema(path: Path) -> None:
    board = load(path)
    for query in queries(board):
        [measurement_name] = _FROM.findall(query)
        measurement = schema.MEASUREMENTS[measurement_name]
        known = set(measurement.tags) | set(measurement.fields)
        for alias, name in _QUOTED.findall(_FROM.sub("", query)):
            if not alias:
                assert name in known, f"{name!r} is not a tag or field of {measurement_name}: {query}"
        assert "$timeFilter" in query or query.startswith("SHOW TAG VALUES")


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.stem)
def test_every_selected_value_is_aliased_and_only_influxql_is_used(path: Path) -> None:
    for query in queries(load(path)):
        assert query.startswith(("SELECT ", "SHOW TAG VALUES ")), query
        assert "|>" not in query  # Flux pipes: not InfluxQL
        if query.startswith("SELECT "):
            selected = query[len("SELECT ") : query.index(" FROM ")]
            assert len(_ALIAS.findall(selected)) == selected.count(" AS "), query


def test_panels_do_not_overlap() -> None:
    for name, build in {**dashboards.DASHBOARDS, "prometheus": promdashboard.prometheus}.items():
        cells: set[tuple[int, int]] = set()
        for panel in build()["panels"]:
            grid = panel["gridPos"]
            mine = {
                (x, y) for x in range(grid["x"], grid["x"] + grid["w"]) for y in range(grid["y"], grid["y"] + grid["h"])
            }
            assert not mine & cells, (name, panel["title"])
            cells |= mine


def fields_shown(board: dict[str, Any], measurement: schema.Measurement) -> set[str]:
    shown: set[str] = set()
    for query in queries(board):
        if f'FROM "{measurement.name}"' in query:
            shown |= {name for alias, name in _QUOTED.findall(_FROM.sub("", query)) if not alias}
    return shown & set(measurement.fields)


def test_the_broker_dashboard_shows_every_broker_figure_and_the_overview_has_a_broker_row() -> None:
    # Every broker figure the listener writes has a panel: none is streamed for nobody.
    broker = dashboards.broker()
    for measurement in (schema.BROKER, schema.BROKER_DESTINATIONS):
        assert fields_shown(broker, measurement) == set(measurement.fields), measurement.name
    assert [p["title"] for p in broker["panels"] if p["type"] == "row"] == ["Destinations", "Broker", "JVM"]
    overview = dashboards.overview()
    titles = [p["title"] for p in overview["panels"]]
    row = titles.index("Broker")
    assert overview["panels"][row]["type"] == "row" and row == len(titles) - 5  # the last row: four panels
    broker_queries = [t["query"] for p in overview["panels"][row + 1 :] for t in p["targets"]]
    # The broker's figures next to mqusers' own: depth against backlog, broker rates against client rates.
    assert any(f'FROM "{schema.DESTINATIONS.name}"' in q and '"backlog"' in q for q in broker_queries)
    assert any('non_negative_derivative(last("enqueued"), 1s)' in q for q in broker_queries)
    assert any(f'FROM "{schema.MERGED.name}"' in q and "'receive'" in q for q in broker_queries)
    assert {"memory_percent", "store_percent", "temp_percent", "connections"} <= fields_shown(overview, schema.BROKER)


PROMETHEUS_BOARD = GRAFANA / "prometheus" / "prometheus.json"


def test_the_prometheus_dashboard_is_current_and_queries_only_the_samples_the_endpoint_exposes() -> None:
    [(name, text)] = promdashboard.render_all().items()
    assert PROMETHEUS_BOARD.name == name and PROMETHEUS_BOARD.read_text() == text, "run `make dashboards`"
    board = load(PROMETHEUS_BOARD)
    assert board["uid"] == "mqusers-prometheus" and board["annotations"]["list"] == []  # events are InfluxDB's
    expressions = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    expressions += [v["query"] for v in board["templating"]["list"]]
    named = set(re.findall(r"\bmqusers_[a-z0-9_]+", " ".join(expressions)))
    samples = {family.sample for family in schema.PROMETHEUS.values()}
    assert named and named <= samples, named - samples
    for expression in expressions:
        # A counter is read as a rate (its raw value grows for ever); a gauge never is.
        for counter in re.findall(r"(\w*\()?(mqusers_[a-z0-9_]+_total)\{", expression):
            assert counter[0] in ("rate(", "label_values("), expression  # a variable reads only labels
        assert not re.search(r"rate\(mqusers_[a-z0-9_]+(?<!_total)\{", expression), expression
        assert '$run"' in expression or "label_values(mqusers_run_users{}" in expression, expression
    for panel in board["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"] == promdashboard.DATASOURCE
            assert all(t["datasource"] == promdashboard.DATASOURCE for t in panel["targets"])
    assert {v["name"] for v in board["templating"]["list"]} == {"run", "destination", "worker"}
    # The run-wide figures the brief asks for each have a panel: rates, percentiles, audit, generator and broker.
    for wanted in ("mqusers_merged_count_total", "mqusers_merged_p99_ms", "mqusers_audit_lost",
                   "mqusers_process_cpu_percent", "mqusers_broker_destination_depth"):  # fmt: skip
        assert wanted in named


def test_a_name_outside_the_schema_is_refused_when_the_dashboard_is_generated() -> None:
    with pytest.raises(KeyError, match="not a Prometheus sample"):
        promdashboard.metric("mqusers_merged_p99")  # the schema's family is mqusers_merged_p99_ms
