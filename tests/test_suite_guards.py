"""The test suite guards itself (issue 28): it never reads or writes the user's tokometer home, at
collection or at run time; every test has a time limit; the process has a memory ceiling. A runaway
test then fails in seconds with its name instead of hanging CI and the machine."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tokometer.home import tokometer_home

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def _plant_local_profile(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What `tokometer probe` leaves in a user's home: a `local` hardware entry."""
    from test_bench_probe import fake_result
    from tokometer.bench.probe import save_local_profile

    monkeypatch.setenv("TOKOMETER_HOME", str(home))
    save_local_profile(fake_result(42.0), home)


def _collect(path: str, home: Path) -> tuple[int, str]:
    env = {**os.environ, "TOKOMETER_HOME": str(home), "XDG_DATA_HOME": str(home.parent), "HOME": str(home.parent)}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", path],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
    )  # fmt: skip
    return proc.returncode, proc.stdout + proc.stderr


def _collected(output: str) -> list[str]:
    return sorted(line for line in output.splitlines() if "::" in line)


@pytest.mark.timeout(600)
def test_a_local_profile_in_the_users_home_does_not_change_collection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/test_web_i18n.py builds its cases at collection time (an estimate with `--hw local`
    must be refused with 422): after `tokometer probe` had saved a profile in the user's home the
    README's test command stopped at collection. The whole suite is collected twice, with that
    profile planted in the home and with an empty one: the same cases, and nothing written there."""
    planted = tmp_path / "planted" / "tokometer"
    planted.mkdir(parents=True)
    _plant_local_profile(planted, monkeypatch)
    before = sorted(p.name for p in planted.iterdir())
    empty = tmp_path / "empty" / "tokometer"
    empty.mkdir(parents=True)

    code, output = _collect("tests", planted)
    assert code == 0, output[-3000:]
    empty_code, empty_output = _collect("tests", empty)
    assert empty_code == 0, empty_output[-3000:]
    assert _collected(output) == _collected(empty_output) and len(_collected(output)) > 2000
    assert sorted(p.name for p in planted.iterdir()) == before  # nothing written there either


def test_this_session_never_uses_the_users_home() -> None:
    from conftest import SESSION_HOME

    real = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "tokometer"
    assert tokometer_home() != real
    assert SESSION_HOME.is_dir() and str(SESSION_HOME) != os.environ["TOKOMETER_HOME"]  # per-test home on top


def test_every_test_has_a_default_time_limit(pytestconfig: pytest.Config) -> None:
    limit = pytestconfig.getini("timeout")
    assert limit and 0 < float(limit) <= 300


def test_the_test_process_has_a_memory_ceiling() -> None:
    resource = pytest.importorskip("resource")
    if sys.platform != "linux":
        pytest.skip("RLIMIT_AS is enforced on Linux only")
    from conftest import MEMORY_CEILING_GB

    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    assert soft != resource.RLIM_INFINITY and soft <= MEMORY_CEILING_GB * 2**30


@pytest.mark.timeout(300)
def test_a_runaway_test_fails_in_seconds_with_its_name(tmp_path: Path) -> None:
    """A sleeper and a memory hog, run with this suite's conftest and a 3 s limit: both fail, each
    named, long before they could hang anything."""
    if sys.platform != "linux":
        pytest.skip("RLIMIT_AS is enforced on Linux only")
    runaway = tmp_path / "test_runaway.py"
    runaway.write_text(textwrap.dedent("""
        import time
        import numpy as np

        def test_sleeps_forever():
            time.sleep(1000)

        def test_allocates_sixty_four_gib():
            np.zeros(64 * 2**30, dtype=np.uint8)  # calloc: no page is touched if it were allowed
    """))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest", "-c", str(ROOT / "pyproject.toml"),
         "--rootdir", str(tmp_path), "-o", "timeout=3", str(runaway)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=240,
    )  # fmt: skip
    elapsed = time.monotonic() - start
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output[-3000:]
    assert re.search(r"FAILED .*test_sleeps_forever", output) and "Timeout" in output, output[-3000:]
    assert re.search(r"FAILED .*test_allocates_sixty_four_gib", output) and "MemoryError" in output, output[-3000:]
    assert elapsed < 120
