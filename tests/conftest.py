"""Every test runs with its own empty tokometer home, so no test touches a user's data."""

from __future__ import annotations

import pytest

from tokometer.catalog import clear_caches


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path_factory.mktemp("tokometer-home")
    monkeypatch.setenv("TOKOMETER_HOME", str(home))
    clear_caches()
    yield home
    clear_caches()
