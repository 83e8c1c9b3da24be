"""make test's phases (tools/testrun.py): the slowest-tests table read from JUnit XML, the cost summary, the targets."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tools import testrun

ROOT = Path(__file__).resolve().parents[2]


def junit(path: Path, cases: dict[str, float]) -> Path:
    rows = "".join(
        f'<testcase classname="{name.rsplit("::", 1)[0].removesuffix(".py").replace("/", ".")}" '
        f'name="{name.rsplit("::", 1)[1]}" time="{seconds}"/>'
        for name, seconds in cases.items()
    )
    path.write_text(f'<?xml version="1.0"?><testsuites><testsuite name="pytest">{rows}</testsuite></testsuites>')
    return path


def test_the_slowest_tests_come_from_every_file_slowest_first(tmp_path: Path) -> None:
    one = junit(tmp_path / "a.xml", {"tests/unit/test_a.py::test_x": 0.5, "tests/unit/test_a.py::test_y": 70.0})
    two = junit(tmp_path / "b.xml", {"tests/integration/test_b.py::test_z[activemq]": 12.25})
    table = testrun.slowest([one, two, tmp_path / "missing.xml"], count=2)
    assert table == [(70.0, "tests/unit/test_a.py::test_y"), (12.25, "tests/integration/test_b.py::test_z[activemq]")]


def test_the_summary_says_each_phase_the_wall_time_and_a_test_over_the_budget(tmp_path: Path) -> None:
    xml = junit(tmp_path / "u.xml", {"tests/unit/test_a.py::test_slow": 61.0, "tests/unit/test_a.py::test_fast": 0.1})
    phases = [testrun.Phase("lint", 12.0), testrun.Phase("unit", 70.5, 1, [xml])]
    text = testrun.summary(phases, 90.0)
    assert re.search(r"^lint +12\.0  ok$", text, re.M) and re.search(r"^unit +70\.5  FAILED \(exit 1\)$", text, re.M)
    assert re.search(r"^wall +90\.0$", text, re.M)
    assert "the 2 slowest tests" in text and "    61.0 s  tests/unit/test_a.py::test_slow" in text
    assert text.rstrip().endswith("tests/unit/test_a.py::test_slow")  # named as over the 60 s a test may take
    assert "over the 60 s" in text


def test_an_unknown_phase_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        testrun.main(["units"])
    assert refused.value.code == 2 and "no phase units" in capsys.readouterr().err


def test_make_unit_and_make_test_run_the_same_phases() -> None:
    makefile = (ROOT / "Makefile").read_text()
    unit = re.search(r"^unit: install\n\t(.+)$", makefile, re.M)
    test = re.search(r"^test: install\n\t(.+)$", makefile, re.M)
    assert unit and unit.group(1) == "$(PY) -m tools.testrun unit"
    assert test and test.group(1).startswith("$(PY) -m tools.testrun --brokers")
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_every_integration_test_marked_alone_says_why() -> None:
    """A mark without its reason cannot be weighed later: the comment beside it (or above a module's) says it."""
    for path in sorted((ROOT / "tests" / "integration").glob("test_*.py")):
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            if line.startswith("@pytest.mark.alone"):
                assert "  # " in line, f"{path.name}:{number + 1}"
            elif "pytest.mark.alone" in line:
                above = "\n".join(lines[max(0, number - 3) : number])
                assert "# alone: " in above, f"{path.name}:{number + 1}"


def test_integration_files_start_longest_first_and_an_unknown_file_before_all() -> None:
    files = testrun._test_files("tests/integration", {"test_audit.py": 70.0, "test_errors.py": 60.0})
    names = [path.name for path in files]
    known = [names.index("test_audit.py"), names.index("test_errors.py")]
    assert known == sorted(known) and known[0] == len(names) - 2  # every other file is unknown here, so first
    every = {path.name: 1.0 for path in files}
    every["test_errors.py"] = 99.0
    assert testrun._test_files("tests/integration", every)[0].name == "test_errors.py"


def test_the_seconds_a_file_took_sum_its_cases_and_a_missing_file_took_none(tmp_path: Path) -> None:
    xml = junit(tmp_path / "a.xml", {"tests/integration/test_a.py::x": 1.5, "tests/integration/test_a.py::y": 2.0})
    assert testrun.file_seconds(xml) == 3.5 and testrun.file_seconds(tmp_path / "none.xml") == 0.0


def test_a_module_marked_alone_as_a_whole_is_left_out_of_the_parallel_phase(tmp_path: Path) -> None:
    whole = tmp_path / "test_whole.py"
    whole.write_text("import pytest\n\n# alone: why\npytestmark = [pytest.mark.activemq, pytest.mark.alone]\n")
    some = tmp_path / "test_some.py"
    some.write_text(
        "import pytest\n\npytestmark = pytest.mark.activemq\n\n@pytest.mark.alone  # why\ndef test_x(): pass\n"
    )
    assert "pytestmark" in some.read_text()
    assert testrun.all_alone(whole) and not testrun.all_alone(some)
    assert testrun.all_alone(ROOT / "tests" / "integration" / "test_failover.py")
