"""Locust first: gevent must patch before anything imports sockets or ssl."""

import locust  # noqa: F401
