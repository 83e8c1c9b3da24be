"""``mqusers matrix``'s tables and JSON from its cells' reports: the broker's store figure marks a
persistent cell whose messages were not written anywhere."""

from html import escape
from typing import Any

import numpy as np

from mqusers.commands import grids
from mqusers.commands.grids import Steady
from mqusers.commands.matrix import NOT_PERSISTED, Cell, cell_figures, command, figures, markdown, matrix_document
from mqusers.report.htmlreport import render
from tests.unit.synthetic_runs import document, interval_latencies


def report(store_bytes: int | None) -> dict[str, Any]:
    row = {"destination": "/queue/q", "sent": 12_000, "received": 12_000, "lost": 0, "receive_rate_msgs": 12_345.67,
           "receive_rate_mbit": 101.1, "latency_ms": {"mean": 0.5, "p99": 1.25}}  # fmt: skip
    broker = {} if store_bytes is None else {"source": "activemq", "broker": {"store_bytes": store_bytes}}
    return {"destinations": [row], "operations": [], "broker": broker}


def test_a_persistent_cell_on_a_store_holding_nothing_is_marked_in_the_table_and_the_json(tmp_path) -> None:  # type: ignore[no-untyped-def]
    memory, kahadb, plain = (
        Cell("queue", True, False, "1KB"),
        Cell("queue", True, False, "10KB"),
        Cell("queue", False, False, "1KB"),
    )
    results = [(memory, figures(memory, report(0))), (kahadb, figures(kahadb, report(33_554_432))),
               (plain, figures(plain, report(0)))]  # fmt: skip
    assert [f["persisted"] for _, f in results] == [False, True, None]  # non-persistent: nothing to say
    assert figures(memory, report(None))["persisted"] is None  # no broker figures (RabbitMQ, no plugin): unknown
    table = markdown("queue", results).splitlines()
    assert table[2] == ("| persistent | durable | size | latency mean ms | latency p99 ms | msg/s | Mbit/s | lost | "
                        "≈ noise |")  # fmt: skip
    assert table[4] == "| yes (store 0 B) | no | 1KB | 0.500 | 1.250 | 12,346 | 101.10 | 0 | - |"
    assert table[5].startswith("| yes | no | 10KB |") and table[6].startswith("| no | no | 1KB |")
    steady = Steady(warmup_seconds=5, steady_after=3, seconds=20, messages=12_000, repeats=3)
    document = matrix_document({"queue": results}, steady, 0)
    assert [(c["persisted"], c["store_bytes"]) for c in document["cells"]] == [(False, 0), (True, 33_554_432),
                                                                              (None, 0)]  # fmt: skip
    assert NOT_PERSISTED.startswith("store 0 B: ") and "memory-only" in NOT_PERSISTED
    # The HTML page says it under the tables too; a grid with every store written says nothing.
    assert document["notes"] == [steady.legend(), NOT_PERSISTED]
    assert f'<p class="note">{escape(NOT_PERSISTED)}</p>' in render([document], ["matrix"])
    assert matrix_document({"queue": results[1:]}, steady, 0)["notes"] == [steady.legend()]


def test_a_cell_carries_its_runs_the_median_latencies_and_every_runs_loss(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cell = Cell("topic", True, True, "1KB")
    runs = []
    for seed, (p99, lost) in enumerate([(3.0, 0), (1.0, 2), (2.0, 0)]):
        doc = document(interval_latencies(np.random.default_rng(seed), 10, 200, 1.0), warmup=2,
                       operation="receive /queue/q")  # fmt: skip
        found = {**figures(cell, report(0)), "p99": p99, "lost": lost, "repeat": seed + 1,
                 "report": str(tmp_path / f"topic-pd-1KB-{seed + 1}.json")}  # fmt: skip
        run = grids.steady_run(doc, "/queue/q", found["report"])
        runs.append(({**found, "msgs": grids.throughput(run)}, run))
    found = cell_figures(cell, runs)
    assert (found["p99"], found["lost"], found["repeats"]) == (2.0, 2, 3)
    assert found["msgs"] == sorted(f["msgs"] for f, _ in runs)[1] and len(found["msgs_interval"]) == 2
    assert [r["repeat"] for r in found["runs"]] == [1, 2, 3]
    warmup = {**figures(cell, report(0)), "report": str(tmp_path / "topic-pd-1KB-warmup.json")}
    steady = Steady(warmup_seconds=5, steady_after=3, seconds=20, messages=1000, repeats=3)
    page = render([matrix_document({"topic": [(cell, {**found, "noise": [], "warmup": warmup})]}, steady, 0)],
                  ["matrix"])  # fmt: skip
    # The page lists the warm-up, marked as left out, and each measured run with its report.
    assert page.count("topic persistent durable 1KB") == 4 and "warm-up (left out)" in page
    assert all(f"topic-pd-1KB-{n}.json" in page for n in (1, 2, 3)) and "topic-pd-1KB-warmup.json" in page


def test_every_run_of_a_cell_has_a_destination_of_its_own(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Two grids on one broker, or two runs within one second, never share a queue (they would steal messages)."""
    cell = Cell("queue", persistent=False, durable=False, size="1KB")
    destinations = set()
    for _ in range(3):
        argv = command(cell, tmp_path, "stomp://127.0.0.1:61613", 0, tmp_path / "r.json", ["-t", "1s"], [])
        destinations.add(argv[argv.index("--mq-destination") + 1])
    assert len(destinations) == 3 and all(d.startswith("/queue/mqusers.commands.matrix.") for d in destinations)
