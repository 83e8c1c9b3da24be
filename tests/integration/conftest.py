"""Fixtures of the integration tests: a broker per shared-behaviour test, a fresh destination per call.

The helpers they use live in helper modules (``brokers.py``, ``locust_runs.py``), which tests import.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from tests.integration.brokers import Broker, broker_params, started


@pytest.fixture(params=broker_params("activemq", "rabbitmq"))
def broker(request: pytest.FixtureRequest) -> Broker:
    """Each shared-behaviour test runs on ActiveMQ and RabbitMQ; ``@pytest.mark.parametrize("broker",
    on_four(behaviour), indirect=True)`` runs it on the four brokers instead."""
    return started(request.param)


@pytest.fixture
def destination() -> Callable[[str], str]:
    """A fresh destination per call, so no test sees another's messages."""

    def make(kind: str = "queue") -> str:
        return f"/{kind}/mqusers.test.{uuid.uuid4().hex[:10]}"

    return make
