"""Every test runs with its own empty tokometer home, so no test touches a user's data; the browser
tests share one headless Chromium per module."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tokometer.catalog import clear_caches


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path_factory.mktemp("tokometer-home")
    monkeypatch.setenv("TOKOMETER_HOME", str(home))
    clear_caches()
    yield home
    clear_caches()


def browser_missing(message: str) -> None:
    """A browser test that cannot run skips on a developer's machine and fails in CI, where
    scripts/ci/browser.sh must have installed Chromium."""
    if os.environ.get("CI") == "true":
        pytest.fail(message + " (CI=true: browser tests must run; see scripts/ci/browser.sh)")
    pytest.skip(message)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright (never a downloaded browser), with web_helpers' launch args."""
    from web_helpers import CHROMIUM, CHROMIUM_ARGS

    if not Path(CHROMIUM).exists():
        browser_missing(f"{CHROMIUM} is not installed")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        browser_missing("the playwright package is not installed")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()
