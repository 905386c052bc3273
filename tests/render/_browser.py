"""Driving the HTML report in headless Chromium: the one place the browser tests and docs/make_screenshot.py
share, so the screenshot in the README is made exactly the way the tests look at the page.

Playwright for Python drives Debian's Chromium (`executable_path`); `playwright install` (which downloads a browser
build) is never needed. Playwright rather than Selenium because it reports console messages and uncaught page errors
as events (the tests assert there are none), waits for elements by itself, and takes full-page screenshots, with no
driver binary whose version must match the browser's.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("TRIALRUN_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
]


def require() -> None:
    """Skip the test when the browser cannot run here, saying why; in CI (`CI` set) FAIL instead: the browser tests
    must run there (.ci/run installs Debian's Chromium)."""
    reason = missing()
    if reason:
        import pytest

        if os.environ.get("CI"):
            pytest.fail(f"{reason}; the browser tests must run in CI", pytrace=False)
        pytest.skip(reason)


def missing() -> str | None:
    """Why the browser cannot run here (a sentence for pytest.skip), or None when it can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install playwright; its browser download is not needed)"
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        return f"headless Chromium not found at {CHROMIUM} (apt-get install -y chromium chromium-driver)"
    return None


@dataclass
class Page:
    """An open report page and everything the browser complained about while it was open."""

    page: Any
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    load_ms: float = 0.0

    @property
    def problems(self) -> list[str]:
        """Console errors, uncaught exceptions, dialogs (an injected alert) and any request beyond the file itself."""
        return [*self.console_errors, *self.page_errors, *(f"dialog: {d}" for d in self.dialogs),
                *(f"request: {r}" for r in self.requests)]

    def node_count(self) -> int:
        return int(self.page.evaluate("document.getElementsByTagName('*').length"))

    def screenshot(self, path: Path, *, full_page: bool = True) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(path), full_page=full_page)
        return path

    # -- what a person does on the page --------------------------------------------------------------------
    def expand_case(self, name: str) -> Any:
        """Open a case's row (searching for it when it is not on the current page) and return its detail row."""
        button = self.page.locator(f'button.expander[data-case="{name}"]')
        if button.count() == 0:
            self.page.fill("#filter-text", name)
        button.click()
        detail = self.page.locator("tr.detail-row").first
        detail.wait_for()
        return detail

    def expand_trial(self, detail: Any, trial: int) -> Any:
        """Open trial `trial` of an expanded case (a no-op when it is open already) and return its element."""
        element = detail.locator(f'details.trial[data-trial="{trial}"]').first
        if element.get_attribute("open") is None:
            element.locator("summary").click()
        element.locator(".trial-body").wait_for()
        return element


@contextmanager
def chromium() -> Iterator[Any]:
    """Headless Chromium (Debian's), closed afterwards. One per process at a time: Playwright's sync API allows one."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield launched
        finally:
            launched.close()


def new_context(launched: Any, *, width: int = 1280, height: int = 900, javascript: bool = True) -> Any:
    """A fresh browsing context: light colour scheme, fixed viewport, JavaScript on or off."""
    return launched.new_context(viewport={"width": width, "height": height}, color_scheme="light",
                                device_scale_factor=1, java_script_enabled=javascript)


def open_report(context: Any, html_file: Path, *, fragment: str = "", wait_ready: bool = True) -> Page:
    """Open a report file and wait until its script has drawn the table (unless `wait_ready` is off, for a page
    opened without JavaScript); records console errors, page errors, dialogs and requests."""
    return open_url(context, html_file.resolve().as_uri() + fragment,
                    ready="html[data-ready='1']" if wait_ready else None, same_origin=False)


def open_url(context: Any, url: str, *, ready: str | None = None, same_origin: bool = True,
             watch: Any = None) -> Page:
    """Open `url` (a file or a page `trialrun view` serves) and wait for the `ready` selector when given; records
    console errors, page errors, dialogs and requests (beyond the page itself, or, with `same_origin`, to any other
    origin than the page's). `watch(page)` is called before the page is opened (to listen to its navigations)."""
    page = context.new_page()
    opened = Page(page)
    if watch is not None:
        watch(page)
    page.on("console", lambda msg: opened.console_errors.append(f"console {msg.type}: {msg.text}")
            if msg.type in ("error", "warning") else None)
    page.on("pageerror", lambda exc: opened.page_errors.append(f"page error: {exc}"))

    def on_dialog(dialog: Any) -> None:
        opened.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    origin = url.split("/", 3)[:3]

    def foreign(request_url: str) -> bool:
        if same_origin:
            return request_url.split("/", 3)[:3] != origin
        return request_url.split("#")[0] != url.split("#")[0]

    page.on("request", lambda request: opened.requests.append(request.url) if foreign(request.url) else None)
    started = time.perf_counter()
    page.goto(url, wait_until="load")
    if ready:
        page.wait_for_selector(ready, state="attached", timeout=30_000)
    opened.load_ms = (time.perf_counter() - started) * 1000
    return opened


def screenshot_report(html_file: Path, png: Path, *, case: str | None = None, trial: int | None = None,
                      width: int = 1280) -> Path:
    """Open a report, optionally expand one case and one of its trials, and save a full-page PNG."""
    with chromium() as launched:
        opened = open_report(new_context(launched, width=width), html_file)
        if case is not None:
            detail = opened.expand_case(case)
            if trial is not None:
                opened.expand_trial(detail, trial)
        if opened.problems:
            raise RuntimeError(f"the report page reported problems: {opened.problems}")
        return opened.screenshot(png)
