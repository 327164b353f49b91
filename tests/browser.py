"""A real headless browser for the report.html tests: the operating system's Chromium, driven by Playwright.

One browser for the whole session (starting Chromium costs about a second on 2 cores); each test opens
its pages in a fresh context. The browser is Debian's package at /usr/bin/chromium
(scripts/install_browser.sh installs it); Playwright's own browsers are never downloaded. Without
Chromium or the playwright package every test that asks for the browser is skipped, saying which is
missing.

A page is opened from its file:// URL with every request routed: anything but a ``file:`` or ``data:``
URL is refused and recorded, so a test sees any attempt to reach the network. Console messages of
type error and uncaught exceptions are recorded too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
LOCAL = ("file:", "data:")


def missing_browser() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} not found: install Debian's chromium package (scripts/install_browser.sh)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[test]'); it drives /usr/bin/chromium"
    return None


# The one Playwright and Chromium of the session. Each test module that imports the fixture gets its own
# instance of it, but Playwright's sync API runs one at a time in a thread: the modules share this one,
# and the last instance to end closes it.
_SHARED: dict[str, Any] = {"users": 0}


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """The session's Chromium (skips the test when there is none)."""
    reason = missing_browser()
    if reason is not None:
        pytest.skip(reason)
    if _SHARED["users"] == 0:
        from playwright.sync_api import sync_playwright

        playwright = sync_playwright().start()
        _SHARED["playwright"] = playwright
        _SHARED["chromium"] = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
    _SHARED["users"] += 1
    try:
        yield _SHARED["chromium"]
    finally:
        _SHARED["users"] -= 1
        if _SHARED["users"] == 0:
            _SHARED.pop("chromium").close()
            _SHARED.pop("playwright").stop()


@dataclass
class Opened:
    """A page opened from a file, with what it logged and what it tried to fetch."""

    page: Any
    errors: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    requested: list[str] = field(default_factory=list)


@pytest.fixture
def open_page(browser: Any) -> Iterator[Callable[..., Opened]]:
    """``open_page(path, fragment="", wait="html[data-ready]")``: the page in a fresh context, loaded."""
    contexts = []

    def open_(path: Path, fragment: str = "", wait: str = "html[data-ready]", width: int = 1280) -> Opened:
        context = browser.new_context(viewport={"width": width, "height": 900})
        contexts.append(context)
        page = context.new_page()
        opened = Opened(page)
        page.on("console", lambda message: opened.errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: opened.errors.append(f"uncaught: {error}"))
        page.on("request", lambda request: opened.requested.append(request.url))

        def route(route: Any) -> None:
            if route.request.url.startswith(LOCAL):
                route.continue_()
            else:
                opened.refused.append(route.request.url)
                route.abort()

        context.route("**/*", route)
        page.goto(path.resolve().as_uri() + fragment)
        page.wait_for_selector(wait, state="attached")
        return opened

    yield open_
    for context in contexts:
        context.close()
