"""One declaration per option, and the two things done with declarations: register them, read them.

An :class:`Option` says everything about one ``--flag``: the settings field it fills, its parser,
default, help, and whether the web UI shows it and masks it. :func:`register` puts declarations on
Locust's parser; :func:`read` turns parsed options into the keyword arguments of a settings object.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from mqusers.options.parsing import OptionError, utf8
from mqusers.options.paths import read_secret_file


def _dest(name: str) -> str:
    return name.replace("-", "_")


@dataclass(frozen=True)
class Option:
    """``--NAME``, its env var ``LOCUST_NAME``, and the settings field it fills."""

    name: str  # the flag without "--", e.g. "mq-size"
    field: str
    parse: Callable[[str, str], Any]  # (text, flag) -> the field's value; raises OptionError
    help: str
    # Registered as it is, so the web UI re-types an edit by it; an empty value leaves the field's
    # own default, which the unit tests hold equal to this default's reading.
    default: str = ""
    ui: bool = True
    secret: bool = False
    # For a secret: an option naming a file that holds it, read instead when given.
    file: str = ""
    file_help: str = ""
    strip: bool = True  # False: spaces at either end may belong to the value (a password)
    # A path only the master (or a local runner) writes, a command only it runs: a worker's own disk
    # and executables do not matter.
    master_writes: bool = False
    # Given any number of times; the field is the tuple of the parsed values. Never in the web UI.
    repeat: bool = False
    # An earlier name still taken (its flag, env var and locust.conf key), never in the web UI.
    alias: str = ""

    @property
    def flag(self) -> str:
        return "--" + self.name

    @property
    def dest(self) -> str:
        return _dest(self.name)


def env_var(name: str) -> str:
    return "LOCUST_" + _dest(name).upper()


def _add(group: Any, name: str, help_text: str, *, default: str, ui: bool, secret: bool, repeat: bool = False) -> None:
    # A string in the parser whatever the field's type: the web UI re-types edits by the default's type.
    given: dict[str, Any] = {"action": "append"} if repeat else {"default": default}
    action = group.add_argument("--" + name, type=str, env_var=env_var(name), help=help_text, **given)
    # Locust reads these attributes to build the web UI's custom parameters; an argument group's
    # add_argument, unlike Locust's parser's, does not take them as keywords.
    action.include_in_web_ui = ui
    action.is_secret = secret
    action.is_required = False
    action.is_multiple = False


def register(group: Any, options: Iterable[Option]) -> None:
    """Each of ``options`` (and its secret's file option) on an argument group of Locust's parser."""
    for option in options:
        _add(group, option.name, option.help, default=option.default, ui=option.ui and not option.repeat,
             secret=option.secret, repeat=option.repeat)  # fmt: skip
        if option.file:
            # Never in the web UI, as the secret it names is not.
            _add(group, option.file, option.file_help, default="", ui=False, secret=False)
        if option.alias:
            _add(group, option.alias, alias_help(option), default="", ui=False, secret=option.secret)


def alias_help(option: Option) -> str:
    return f"an alias of {option.flag}, its earlier name"


def text_of(parsed: Any, name: str, *, strip: bool = True) -> str:
    """The value of option ``--name`` in ``parsed``, checked to be UTF-8; "" when unset."""
    value = str(getattr(parsed, _dest(name), "") or "")
    return utf8(value.strip() if strip else value, "--" + name)


def _text(parsed: Any, option: Option) -> tuple[str, str]:
    """The text of ``option`` and the flag it came from: a secret's file, when given, wins."""
    path = text_of(parsed, option.file) if option.file else ""
    if path:
        return read_secret_file(path, "--" + option.file), "--" + option.file
    text = text_of(parsed, option.name, strip=option.strip)
    aliased = text_of(parsed, option.alias, strip=option.strip) if option.alias else ""
    if not aliased:
        return text, option.flag
    if text not in ("", option.default, aliased):
        raise OptionError(f"{option.flag} {text!r} and its alias --{option.alias} {aliased!r} differ: give one")
    return aliased, "--" + option.alias


def read(parsed: Any, options: Iterable[Option]) -> dict[str, Any]:
    """``{field: value}`` of ``options`` in ``parsed``; an empty option leaves its field out (its default)."""
    worker = bool(getattr(parsed, "worker", False))
    values: dict[str, Any] = {}
    for option in options:
        if option.repeat:
            texts = [utf8(t.strip(), option.flag) for t in getattr(parsed, option.dest, None) or [] if t.strip()]
            if texts and not (worker and option.master_writes):
                values[option.field] = tuple(option.parse(t, option.flag) for t in texts)
            continue
        text, flag = _text(parsed, option)
        if text:
            values[option.field] = text if worker and option.master_writes else option.parse(text, flag)
    return values
