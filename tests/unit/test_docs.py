"""The documentation kept true: the options page current, every link resolving, every shown command checked.

What runs a shown command is tests/integration/test_readme_commands.py; here, without a broker, each
command must be run there or say why not (tests/doccommands.py), and what can be checked without
running it is: the repository files it names, its ``--mq-*``/``--influx-*`` options (a ``locust``
command's values through Locust's parser and mqusers' own checks), the services, make targets and
``mqusers`` subcommands it names, and for commands meant for a cluster or Docker the Kubernetes
objects, Secret keys and Compose services they name.
"""

from locust.argument_parser import get_parser

import ast
import os
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import services
from mqusers import read_settings  # importing mqusers registers the --mq-* and --influx-* arguments
from mqusers.brokers import brokeroptions as broker_settings
from mqusers.commands import cli
from mqusers.options import table
from mqusers.sinks import sinkoptions as influx_settings
from tests.doccommands import PAGES, ROOT, RUN_HERE, shown_commands, where_run, why_not_run
from tests.kustomize import KUBERNETES, OVERLAYS, Document, load_documents, render
from tools import optionsdoc

RUNNER = ROOT / "tests" / "integration" / "test_readme_commands.py"
LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def test_the_options_page_is_what_the_declarations_give() -> None:
    committed = (ROOT / "docs" / "options.md").read_text(encoding="utf-8")
    assert committed == optionsdoc.render(), "docs/options.md is stale: run `make docs` and commit it"


def test_the_options_page_lists_every_declared_option() -> None:
    page = optionsdoc.render()
    for option in (*table.OPTIONS, *broker_settings.OPTIONS, *influx_settings.OPTIONS):
        assert f"| `{option.flag}` |" in page
        assert not option.file or f"| `--{option.file}` |" in page


# --- links ---------------------------------------------------------------------------------------


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text (links' text, no code marks), lower case, punctuation dropped."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor GitHub gives ``page``'s headings (a repeated one gets -1, -2...)."""
    seen: dict[str, int] = {}
    found = set()
    for heading in re.findall(r"^#{1,6} (.+?)\s*#*$", FENCE.sub("", page.read_text(encoding="utf-8")), re.M):
        base = slug(heading)
        found.add(f"{base}-{seen[base]}" if base in seen else base)
        seen[base] = seen.get(base, 0) + 1
    return found


def links(page: Path) -> list[str]:
    """The targets of ``page``'s Markdown links, outside code blocks and code spans."""
    prose = re.sub(r"`[^`\n]*`", "", FENCE.sub("", page.read_text(encoding="utf-8")))
    return LINK.findall(prose)


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in links(page):
        if re.match(r"[a-z]+:", target):  # https:, mailto:: not this repository's
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no {resolved.relative_to(ROOT) if resolved.is_relative_to(ROOT) else resolved}")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading #{anchor} in {resolved.name}")
    return broken


def test_slugs_are_githubs() -> None:
    assert slug("Scenarios (`locustfiles/`)") == "scenarios-locustfiles"
    assert slug("Locust's statistics, in bulk") == "locusts-statistics-in-bulk"
    assert slug("Master/slave pairs and PostgreSQL") == "masterslave-pairs-and-postgresql"
    assert slug("The [broker](x.md)'s side") == "the-brokers-side"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_link_resolves(page: Path) -> None:
    assert links(page) or page.name == "ARCHITECTURE.md", "a page that links nowhere is not reachable on"
    assert broken_links(page) == []


def test_a_broken_link_or_anchor_is_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n\n## A heading, in words\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n[ok](other.md#a-heading-in-words) [ok](#page) [gone](missing.md) [bad](other.md#nowhere)\n"
        "[bad](#page-1) `[code](missing.md)`\n\n```sh\n[x](missing.md)\n```\n"
    )
    assert [b.split(":")[0] for b in broken_links(page)] == ["missing.md", "other.md#nowhere", "#page-1"]


def test_every_docs_page_is_in_the_index() -> None:
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"README.md"}
    assert pages <= set(re.findall(r"\]\(([\w.-]+\.md)\)", index))


# --- commands ------------------------------------------------------------------------------------


def test_every_shown_command_is_run_or_says_why_not() -> None:
    unhandled = [f"{page.name}: {c}" for page, c in shown_commands() if not where_run(c) and not why_not_run(c)]
    assert unhandled == [], "add each to tests/doccommands.py: RUN_HERE (and a test) or NOT_RUN with the reason"


def test_each_run_here_names_the_test_that_runs_it() -> None:
    """RUN_HERE's test exists and asks for its commands by a prefix of theirs."""
    for prefix, named in RUN_HERE.items():
        file, _, name = named.rpartition("::")
        runner = RUNNER.with_name(file) if file else RUNNER
        tests = {node.name: node for node in ast.parse(runner.read_text()).body if isinstance(node, ast.FunctionDef)}
        assert name in tests, named
        asked = [n.value for n in ast.walk(tests[name]) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        assert any(len(a) > 8 and (prefix.startswith(a) or a.startswith(prefix)) for a in asked), (prefix, name)
        assert any(c.startswith(prefix) for _, c in shown_commands()), f"{prefix!r}: no page shows it any more"


def arguments(command: str) -> list[str]:
    """The command's words, the shipped scenarios' folder as `mqusers locustfiles` prints it in a checkout."""
    return shlex.split(command.replace("$(mqusers locustfiles)", "locustfiles"))


def repository_paths(words: list[str]) -> Iterator[str]:
    """Words naming something in the repository: a path whose first part is a top-level entry of it."""
    top = {entry.name for entry in ROOT.iterdir()} - {".", ".."}
    for word in words:
        value = word.split("=", 1)[1] if word.startswith("--") and "=" in word else word
        if "$" not in value and value.split("/")[0] in top and value.split("/")[0] not in ("reports", ".services"):
            yield value


DECLARED = {option.flag for option in (*table.OPTIONS, *broker_settings.OPTIONS, *influx_settings.OPTIONS)} | {
    f"--{option.file}" for option in (*table.OPTIONS, *broker_settings.OPTIONS, *influx_settings.OPTIONS) if option.file
}


@pytest.mark.parametrize(
    ("page", "command"), [pytest.param(p, c, id=f"{p.name}: {c[:50]}") for p, c in shown_commands()]
)
def test_a_shown_command_names_real_files_options_and_commands(page: Path, command: str) -> None:
    words = arguments(command)
    for path in repository_paths(words):
        assert (ROOT / path).exists(), f"{page.name}: {command}: no {path}"
    flags = {word.split("=")[0] for word in words if word.startswith(("--mq-", "--influx-"))}
    assert flags <= DECLARED, f"{page.name}: {command}: unknown {flags - DECLARED}"
    if words[:3] == ["python", "-m", "services"]:
        names = [w for w in words[4:] if not w.startswith("-")]
        assert set(names) <= set(services.SERVICES), f"{command}: unknown services"
    if words[0] == "make":
        assert re.search(rf"^{re.escape(words[1])}:", (ROOT / "Makefile").read_text(), re.M), command
    if words[0] == "mqusers":
        assert words[1] in (*cli.COMMANDS, "locustfiles", "options"), command


@pytest.mark.parametrize("command", [c for _, c in shown_commands() if c.startswith("locust ")], ids=lambda c: c[:60])
def test_a_shown_locust_command_is_accepted_by_locust_and_mqusers(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [n for n in os.environ if n.startswith("LOCUST_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # the report files it names are written here
    (tmp_path / "locustfiles").symlink_to(ROOT / "locustfiles")  # files it reads, from the checkout's root
    options = get_parser().parse_args(arguments(command)[1:])  # exit 2 on an unknown option or a bad value
    if not options.worker:  # a worker takes every option from its master
        read_settings(options, options.host)


# --- commands for a cluster or Docker, not run here ----------------------------------------------


def rendered() -> list[Document]:
    return [doc for overlay in OVERLAYS for doc in render(KUBERNETES / "overlays" / overlay)]


def secret_keys(node: Any) -> Iterator[tuple[str, str]]:
    """(Secret, key) of every secretKeyRef in ``node``."""
    if isinstance(node, dict):
        if "secretKeyRef" in node:
            yield node["secretKeyRef"]["name"], node["secretKeyRef"]["key"]
        for value in node.values():
            yield from secret_keys(value)
    elif isinstance(node, list):
        for value in node:
            yield from secret_keys(value)


def test_the_kubectl_commands_name_what_the_manifests_have() -> None:
    documents = rendered()
    objects = {(doc["kind"].lower(), doc["metadata"]["name"]) for doc in documents}
    wanted = set(secret_keys(documents))
    config_maps = set(re.findall(r"name: (mqusers-[\w-]+)", yaml.safe_dump_all(documents)))
    # The ConfigMaps the operator's LocustTest and the chart's values mount, which the user creates.
    [locust_test] = load_documents(KUBERNETES / "operator" / "locusttest.yaml")
    config_maps.add(locust_test["spec"]["locustfile"]["configMap"]["name"])
    chart_values = yaml.safe_load((ROOT / "deploy" / "helm" / "locust-values.yaml").read_text())
    config_maps.add(chart_values["loadtest"]["locust_locustfile_configmap"])
    shown = [arguments(c.replace("pod=$(", "")) for _, c in shown_commands() if "kubectl" in c]
    assert shown, "the Kubernetes page shows its kubectl commands"
    for words in shown:
        for word in words:
            kind, _, name = word.partition("/")
            if kind in ("job", "service", "deployment", "statefulset") and name:
                assert (kind, name) in objects, word
            if word.startswith("job-name="):
                assert ("job", word.removeprefix("job-name=")) in objects, word
        if "-k" in words and (ROOT / words[words.index("-k") + 1]).is_dir():
            assert render(ROOT / words[words.index("-k") + 1]), words
        if words[1:].count("create") and "secret" in words:
            name = words[words.index("generic") + 1]
            keys = {w.removeprefix("--from-literal=").split("=")[0] for w in words if w.startswith("--from-literal=")}
            assert keys == {key for secret, key in wanted if secret == name}, (name, keys)
        if "configmap" in words and "create" in words:
            assert words[words.index("configmap") + 1] in config_maps, words
    created = {w[w.index("generic") + 1] for w in shown if "generic" in w}
    assert created == {secret for secret, _ in wanted}, "every Secret the manifests read is created as shown"


def test_the_find_max_command_shown_is_the_overlays_job() -> None:
    [shown] = [c for _, c in shown_commands() if c.startswith("mqusers find-max -f /mnt/locust/")]
    [job] = [d for d in render(KUBERNETES / "overlays" / "find-max") if d["kind"] == "Job"]
    assert shlex.split(shown) == job["spec"]["template"]["spec"]["containers"][0]["args"]


def test_the_docker_commands_name_what_compose_has() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    for _, command in shown_commands():
        words = arguments(command)
        if words[:2] == ["docker", "compose"] and "--scale" in words:
            assert words[words.index("--scale") + 1].split("=")[0] in compose["services"], command
        if words[:2] == ["docker", "build"]:
            assert (ROOT / words[words.index("-f") + 1]).is_file(), command
