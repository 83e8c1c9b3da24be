"""``mqusers matrix``'s tables and JSON from its cells' reports: the broker's store figure marks a
persistent cell whose messages were not written anywhere."""

from html import escape
from typing import Any

from mqusers.commands.matrix import NOT_PERSISTED, Cell, figures, markdown, matrix_document
from mqusers.report.htmlreport import render


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
    assert table[2] == "| persistent | durable | size | latency mean ms | latency p99 ms | msg/s | Mbit/s | lost |"
    assert table[4] == "| yes (store 0 B) | no | 1KB | 0.500 | 1.250 | 12,345.7 | 101.10 | 0 |"
    assert table[5].startswith("| yes | no | 10KB |") and table[6].startswith("| no | no | 1KB |")
    document = matrix_document({"queue": results}, 12_000, 0, tmp_path)
    assert [(c["persisted"], c["store_bytes"]) for c in document["cells"]] == [(False, 0), (True, 33_554_432),
                                                                              (None, 0)]  # fmt: skip
    assert NOT_PERSISTED.startswith("store 0 B: ") and "memory-only" in NOT_PERSISTED
    # The HTML page says it under the tables too; a grid with every store written says nothing.
    assert document["notes"] == [NOT_PERSISTED] and f'<p class="note">{escape(NOT_PERSISTED)}</p>' in render(
        [document], ["matrix"])  # fmt: skip
    assert matrix_document({"queue": results[1:]}, 12_000, 0, tmp_path)["notes"] == []
