"""``--mq-payload``: what each kind's bodies are, their sizes, and what is refused before load."""

from __future__ import annotations

import json
import os
import re
import zlib
from pathlib import Path

import pytest

from mqusers.options.parsing import MAX_SIZE, OptionError
from mqusers.options.payloadspec import GENERATED, PayloadSpec, parse_payload
from mqusers.users.payloads import VARIANTS, bodies, describe


@pytest.mark.parametrize("kind", GENERATED)
@pytest.mark.parametrize("size", [1, 2, 22, 23, 100, 1024, 100_000])
def test_a_generated_body_is_exactly_the_size_asked(kind: str, size: int) -> None:
    made = bodies(PayloadSpec(kind), size)
    assert {len(body) for body in made} == {size}
    if kind == "json":
        for body in made:
            json.loads(body)  # every size is a JSON document, down to one byte
    if kind == "printable":
        assert all(re.fullmatch(rb"[A-Za-z0-9]*", body) for body in made)


def test_each_kind_compresses_as_it_says() -> None:
    def ratio(kind: str) -> float:
        body = bodies(PayloadSpec(kind), 65536)[0]
        return len(body) / len(zlib.compress(body, 6))

    assert ratio("random") < 1.0  # incompressible: zlib's framing makes it larger
    assert 1.2 < ratio("printable") < 1.4  # 62 symbols: about 6 bits a byte
    assert ratio("text") > 2.5 and ratio("json") > 2.5


def test_a_process_makes_a_few_different_bodies_and_bounds_their_bytes() -> None:
    small = bodies(PayloadSpec("random"), 1024)
    assert len(small) == VARIANTS == len(set(small))
    assert len(bodies(PayloadSpec("text"), 256 * 1024)) == 4  # about 1 MiB of them
    assert len(bodies(PayloadSpec("printable"), 8 * 1024 * 1024)) == 1
    assert bodies(PayloadSpec("json"), 1024) is bodies(PayloadSpec("json"), 1024)  # made once per process


def test_a_template_fills_its_fields_per_body(tmp_path: Path) -> None:
    template = tmp_path / "order.json"
    template.write_text(
        '{"order": "{{uuid}}", "n": {{int}}, "price": {{ float }}, "item": "{{word}}", "v": {{variant}}}'
    )
    spec = parse_payload(f"template:{template}")
    made = [json.loads(body) for body in bodies(spec, 1024)]
    assert len(made) == VARIANTS and [m["v"] for m in made] == list(range(VARIANTS))
    assert len({m["order"] for m in made}) == VARIANTS and all(len(m["order"]) == 36 for m in made)
    assert all(isinstance(m["n"], int) and isinstance(m["price"], float) and m["item"].isalpha() for m in made)
    assert re.fullmatch(r"\d+-\d+ B template messages", describe(spec, 1024))


def test_files_are_sent_as_they_are(tmp_path: Path) -> None:
    (tmp_path / "b.bin").write_bytes(b"\x00\x01binary\xff")
    (tmp_path / "a.txt").write_bytes(b"hello")
    (tmp_path / "sub").mkdir()  # a folder in the folder is not a body
    spec = parse_payload(f"files:{tmp_path}")
    assert bodies(spec, 1024) == (b"hello", b"\x00\x01binary\xff")
    assert describe(spec, 1024) == "5-9 B messages from 2 files"
    one = parse_payload(f"files:{tmp_path / 'a.txt'}")
    assert bodies(one, 1) == (b"hello",) and describe(one, 1) == "5 B messages from 1 file"
    assert describe(PayloadSpec("json"), 2048) == "2,048 B json messages"


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("gzip", "'gzip' is not one of printable, random, text, json, template:FILE, files:PATH"),
        ("json:x", "'json:x' is not one of"),
        ("template:", "'template:' is not one of"),
        ("template:/no/such/file", "cannot read template /no/such/file"),
        ("files:/no/such/folder", "cannot read /no/such/folder"),
    ],
)
def test_bad_payloads_are_refused_in_one_line(value: str, says: str) -> None:
    with pytest.raises(OptionError, match=re.escape(says)) as refused:
        parse_payload(value)
    assert "\n" not in str(refused.value) and str(refused.value).startswith("--mq-payload: ")


def test_what_a_template_or_folder_cannot_be(tmp_path: Path) -> None:
    template = tmp_path / "t.txt"
    template.write_text("{{uuid}} {{seq}} {{nope}}")
    with pytest.raises(OptionError, match=r"unknown field \{\{nope\}\}, \{\{seq\}\} \(known: uuid, int"):
        parse_payload(f"template:{template}")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(OptionError, match="holds no regular file"):
        parse_payload(f"files:{empty}")
    huge = tmp_path / "huge.bin"
    with open(huge, "wb") as sparse:
        sparse.truncate(MAX_SIZE + 1)
    with pytest.raises(OptionError, match="over the 67,108,864-byte message limit"):
        parse_payload(f"files:{huge}")
    assert os.path.getsize(huge) == MAX_SIZE + 1
