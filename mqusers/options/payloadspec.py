"""``--mq-payload``: what the producers' bodies are made of, checked before any load.

``printable`` (random letters and digits, the default), ``random`` (random bytes: incompressible,
NULs included), ``text`` (words: compressible like prose), ``json`` (an object of records) are
made at ``--mq-size``; ``template:FILE`` fills a text or JSON template's ``{{uuid}}``, ``{{int}}``,
``{{float}}``, ``{{word}}`` and ``{{variant}}`` fields; ``files:PATH`` sends a file's bytes, or each
regular file's of a folder in turn. Templates and files have their own sizes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mqusers.options.parsing import MAX_SIZE, OptionError

GENERATED = ("printable", "random", "text", "json")
KINDS = (*GENERATED, "template:FILE", "files:PATH")
#: What a template's ``{{name}}`` may be; anything else is refused rather than sent as it stands.
FIELDS = ("uuid", "int", "float", "word", "variant")
PLACEHOLDER = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
#: Files read at most: each producer process holds every body once.
MAX_FILES = 1000
MAX_TEMPLATE = 1 << 20


@dataclass(frozen=True)
class PayloadSpec:
    kind: str = "printable"
    #: The template's or the files' path as given.
    source: str = ""
    #: A template's text (``template``).
    template: str = ""
    #: The files whose bytes are the bodies (``files``), in name order.
    files: tuple[Path, ...] = ()

    def __str__(self) -> str:
        """As ``--mq-payload`` is written: what the report's options and the web UI show."""
        return f"{self.kind}:{self.source}" if self.source else self.kind

    @property
    def sized(self) -> bool:
        """Whether ``--mq-size`` sets the bodies' size (a template's and files' are their own)."""
        return self.kind in GENERATED


def parse_payload(value: str, option: str = "--mq-payload") -> PayloadSpec:
    kind, _, argument = value.partition(":")
    if kind in GENERATED and not argument:
        return PayloadSpec(kind)
    if kind == "template" and argument:
        return PayloadSpec(kind, argument, template=_template(Path(argument), option))
    if kind == "files" and argument:
        return PayloadSpec(kind, argument, files=_files(Path(argument), option))
    raise OptionError(f"{option}: {value!r} is not one of {', '.join(KINDS)}")


def _template(path: Path, option: str) -> str:
    try:
        if path.stat().st_size > MAX_TEMPLATE:
            raise OptionError(f"{option}: {path} is over {MAX_TEMPLATE:,} bytes, too large for a template")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise OptionError(f"{option}: cannot read template {path}: {error}") from None
    if unknown := sorted({name for name in PLACEHOLDER.findall(text) if name not in FIELDS}):
        names = ", ".join("{{" + name + "}}" for name in unknown)
        raise OptionError(f"{option}: {path}: unknown field {names} (known: {', '.join(FIELDS)})")
    if not text:
        raise OptionError(f"{option}: template {path} is empty")
    return text


def _files(path: Path, option: str) -> tuple[Path, ...]:
    try:
        found = tuple(sorted(p for p in path.iterdir() if p.is_file())) if path.is_dir() else (path,)
        sizes = [p.stat().st_size for p in found[: MAX_FILES + 1]]
    except OSError as error:
        raise OptionError(f"{option}: cannot read {path}: {error.strerror or error}") from None
    if not found:
        raise OptionError(f"{option}: {path} holds no regular file")
    if len(found) > MAX_FILES:
        raise OptionError(f"{option}: {path} holds more than {MAX_FILES:,} files")
    if (largest := max(sizes)) > MAX_SIZE:
        raise OptionError(f"{option}: a file of {largest:,} bytes is over the {MAX_SIZE:,}-byte message limit")
    return found
