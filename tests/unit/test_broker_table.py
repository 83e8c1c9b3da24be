"""docs/brokers.md's table of what works on which broker says what the four-broker tests do, word for word."""

from __future__ import annotations

import re
from pathlib import Path

from tests.integration.brokers import BEHAVIOURS, CANNOT, FOUR

ROOT = Path(__file__).resolve().parents[2]
HEADING = "## What works on which broker"
#: The table's broker columns, in FOUR's order.
COLUMNS = ("ActiveMQ Classic 5.17.2", "ActiveMQ Classic 6.1.8", "Artemis 2.40.0", "RabbitMQ")


def table(text: str) -> list[list[str]]:
    """The rows of the first table under HEADING, each a list of its cells (header row first)."""
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines if not line.startswith("|---")]


def expected_rows() -> list[list[str]]:
    return [[b, *(CANNOT.get(b, {}).get(broker, "yes") for broker in FOUR)] for b in BEHAVIOURS]


def on_four_tests(behaviour: str) -> list[str]:
    """The integration tests parametrized with ``on_four(behaviour ...)``."""
    found = []
    for path in sorted((ROOT / "tests" / "integration").glob("test_*.py")):
        # The call's line, the closing parenthesis of a wrapped decorator, further decorators, the test.
        pattern = rf'on_four\("{re.escape(behaviour)}"[^\n]*\n(?:\)\n)?(?:@[^\n]*\n)*def (test_\w+)'
        found += [f"{path.name}::{name}" for name in re.findall(pattern, path.read_text())]
    return found


def test_the_docs_table_is_the_skip_reasons() -> None:
    rows = table((ROOT / "docs" / "brokers.md").read_text())
    assert rows[0][:5] == ["behaviour", *COLUMNS]
    assert [row[:5] for row in rows[1:]] == expected_rows()
    # Its last column names the test of each row, which runs on the four.
    assert [row[5] for row in rows[1:]] == [", ".join(f"`{t}`" for t in on_four_tests(b)) for b in BEHAVIOURS]
    assert all(on_four_tests(behaviour) for behaviour in BEHAVIOURS)


def test_a_reason_changed_on_one_side_only_is_found() -> None:
    text = (ROOT / "docs" / "brokers.md").read_text()
    first = expected_rows()[0]
    changed = text.replace(f"| {first[0]} | {first[1]} |", f"| {first[0]} | not {first[1]} |", 1)
    assert changed != text
    assert [row[:5] for row in table(changed)[1:]] != expected_rows()
