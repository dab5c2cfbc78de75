"""Shared fixtures for the bench and store tests (imported by name; there is no tests/conftest.py).

`bench_home` (autouse wherever it is imported) points TOKOMETER_HOME at a temporary directory,
clears the catalog caches and the API-key variables, so no test reads or writes the user's real
runs database or hardware profile, or sends their key. Tests that need the directory call
`tokometer.catalog.tokometer_home()`.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tokometer.bench.synthetic import SyntheticConfig, SyntheticServer, serve_in_thread


@pytest.fixture(autouse=True)
def bench_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    from tokometer.catalog import clear_caches

    home = tmp_path_factory.mktemp("tokometer-home")
    monkeypatch.setenv("TOKOMETER_HOME", str(home))
    for name in ("TOKOMETER_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    clear_caches()
    yield home
    clear_caches()


@contextlib.contextmanager
def synthetic(**options: object) -> Iterator[SyntheticServer]:
    """A synthetic server on 127.0.0.1 for one `with` block (see `tokometer.bench.synthetic`)."""
    with serve_in_thread(SyntheticConfig(**options)) as server:  # type: ignore[arg-type]
        yield server


class FakeClock:
    """A clock that advances by `step` seconds every time it is read."""

    def __init__(self, start: float = 100.0, step: float = 0.01) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def run_cli(args: list[str]) -> tuple[int, str, str]:
    """Run `tokometer ARGS` in-process: (exit code, stdout, stderr)."""
    from tokometer.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            returned = main(args)  # the console script does sys.exit(main())
            code = returned if isinstance(returned, int) else 0
        except SystemExit as exc:
            code = int(exc.code or 0) if not isinstance(exc.code, str) else 1
    return code, out.getvalue(), err.getvalue()


def python() -> str:
    return sys.executable
