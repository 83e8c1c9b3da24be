"""A worker parses Locust's option defaults once, not once per option of every spawn message."""

from __future__ import annotations

from locust import argument_parser

import pytest

from mqusers.wiring.spawncost import parse_defaults_once


def test_the_defaults_are_parsed_once_and_each_caller_gets_its_own_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    original = argument_parser.default_args_dict

    def counted() -> dict[str, object]:
        calls.append(1)
        return original()

    monkeypatch.setattr(argument_parser, "default_args_dict", counted)
    parse_defaults_once()
    parse_defaults_once()  # idempotent: not wrapped twice
    # The comprehension of Locust's WorkerRunner.handle_message: the call once per option of a spawn message.
    options = {**original(), "mq_destination": "/queue/x", "mq_rate": 5.0}
    custom = {k: v for k, v in options.items() if k not in argument_parser.default_args_dict()}
    assert custom == {"mq_destination": "/queue/x", "mq_rate": 5.0}
    assert len(calls) == 1
    first = argument_parser.default_args_dict()
    first["host"] = "changed"
    assert argument_parser.default_args_dict() == original() and len(calls) == 1
