"""A real headless Chromium for page tests: Debian's ``chromium`` driven by Playwright, offline.

Playwright (a dev extra) drives the system browser, so nothing is downloaded; ``make test`` installs
``chromium`` as it installs ``faketime``. ``offline=True`` makes any network fetch fail, which
proves a page needs none.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"


def unavailable_reason() -> str | None:
    if shutil.which(CHROMIUM) is None:
        return f"{CHROMIUM} is not installed (apt-get install -y chromium)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[dev]')"
    return None


@dataclass
class Opened:
    page: Any
    #: Console errors and uncaught exceptions, in order.
    errors: list[str] = field(default_factory=list)


@contextmanager
def opened(target: Path | str, width: int = 1200, height: int = 900) -> Iterator[Opened]:
    """A file (``Path``, offline) or a loopback URL loaded in a browser, its console errors collected.

    A URL's page may reach its own server only: a fetch anywhere else fails and is an error.
    """
    # Imported here: collecting the tests must work where playwright is missing (they are skipped).
    from playwright.sync_api import sync_playwright

    local = isinstance(target, str)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            context = browser.new_context(offline=not local, viewport={"width": width, "height": height})
            if isinstance(target, str):
                own = "/".join(target.split("/", 3)[:3]) + "/"  # scheme://host:port/
                context.route(
                    "**/*", lambda route: route.continue_() if route.request.url.startswith(own) else route.abort()
                )
            page = context.new_page()
            result = Opened(page)
            page.on("console", lambda message: message.type == "error" and result.errors.append(message.text))
            page.on("pageerror", lambda error: result.errors.append(str(error)))
            page.on("requestfailed", lambda request: result.errors.append(f"request failed: {request.url}"))
            page.goto(target if isinstance(target, str) else target.as_uri())
            page.wait_for_load_state("load")
            yield result
        finally:
            browser.close()
