"""Every test runs with its own empty tokometer home, so no test touches a user's data; the browser
tests share one headless Chromium per module; a runaway test meets a memory ceiling.

The home is moved twice. At import of this file (before pytest imports any test module, so before
any case is built at collection time, e.g. tests/test_web_i18n.py's server lines), `TOKOMETER_HOME`
points at a fresh temporary folder for the whole session: a `local` profile that `tokometer probe`
saved in the user's real home can no longer change what is collected. Then each test gets its own
empty home from the autouse `isolated_home` fixture.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# before anything imports tokometer's catalogs: the session's home, never the user's
SESSION_HOME = Path(tempfile.mkdtemp(prefix="tokometer-session-home-"))
os.environ["TOKOMETER_HOME"] = str(SESSION_HOME)

import pytest  # noqa: E402

from tokometer.catalog import clear_caches  # noqa: E402

# the memory ceiling of the test process (address space), generous: the suite's largest tests use
# well under 2 GB; a runaway allocation fails with MemoryError in its own test instead of taking
# the machine down. TOKOMETER_TEST_MEMORY_GB=0 turns it off (e.g. under a sanitizer).
MEMORY_CEILING_GB = float(os.environ.get("TOKOMETER_TEST_MEMORY_GB", "8"))


def _set_memory_ceiling(gigabytes: float) -> int | None:
    """Lower RLIMIT_AS to `gigabytes` (never raise it); the new soft limit in bytes, or None where
    the platform has no such limit (Windows, or macOS, where RLIMIT_AS is not enforced)."""
    if gigabytes <= 0:
        return None
    try:
        import resource
    except ImportError:
        return None
    if not hasattr(resource, "RLIMIT_AS") or os.uname().sysname == "Darwin":
        return None
    wanted = int(gigabytes * 2**30)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft <= wanted:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))
    except (ValueError, OSError):
        return None
    return wanted


def _lift_memory_ceiling() -> tuple[int, int] | None:
    """Raise the soft address-space limit back to the hard one; the old pair to restore, or None."""
    try:
        import resource
    except ImportError:
        return None
    if not hasattr(resource, "RLIMIT_AS"):
        return None
    old = resource.getrlimit(resource.RLIMIT_AS)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (old[1], old[1]))
    except (ValueError, OSError):
        return None
    return old


# a test marked slow or browser gets this limit when it names none itself: they build llama.cpp,
# start servers and browsers; every other test gets pyproject's default `timeout`
SLOW_TIMEOUT_S = 900


def pytest_configure(config: pytest.Config) -> None:
    _set_memory_ceiling(MEMORY_CEILING_GB)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("timeout") is None and (item.get_closest_marker("slow") or item.get_closest_marker("browser")):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Browsers, Ray and llama.cpp servers reserve far more address space than they use (V8 alone
    reserves tens of GB): the tests marked browser or slow, and what they start, run without the
    ceiling."""
    lifted = None
    if item.get_closest_marker("slow") or item.get_closest_marker("browser"):
        lifted = _lift_memory_ceiling()
    try:
        yield
    finally:
        if lifted is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, lifted)


def pytest_unconfigure(config: pytest.Config) -> None:
    import shutil

    shutil.rmtree(SESSION_HOME, ignore_errors=True)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path_factory.mktemp("tokometer-home")
    monkeypatch.setenv("TOKOMETER_HOME", str(home))
    clear_caches()
    yield home
    clear_caches()


@pytest.fixture(scope="session")
def calibrated_by_cli(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path], int, str]:
    """`tokometer calibrate --out FILE` on the shipped evidence, run once for the session (a full fit with its
    bands and multi-device hold-outs: minutes on 2 cores) in a home of its own: (the file written, the files
    the fit read, as `rows.read_cases` saw them, the exit code, stderr). Tests of what it read and of what it
    wrote share this one run."""
    import contextlib
    import io

    from tokometer.cli import main
    from tokometer.fitting import rows

    out = tmp_path_factory.mktemp("calibrated") / "efficiency.toml"
    opened: list[Path] = []
    real = rows.read_cases

    def spy(path: str | Path) -> list[rows.Case]:
        opened.append(Path(path))
        return real(path)

    err = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stderr(err):
        patch.setenv("TOKOMETER_HOME", str(tmp_path_factory.mktemp("calibrate-home")))
        patch.setattr(rows, "read_cases", spy)
        clear_caches()
        try:
            main(["calibrate", "--out", str(out)])
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        finally:
            clear_caches()
    return out, opened, code, err.getvalue()


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
