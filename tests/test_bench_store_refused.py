"""Nothing measured is lost: when the runs database refuses a bench (disk full, read-only), `bench`
still prints the whole result, writes it to a JSON file and says where and why, exits 3; `runs
import` of that file stores it later, and the database stays sound (`PRAGMA integrity_check`).

Real SQLite throughout: "disk full" is SQLite's own `max_page_count` set on every connection the
store opens (the file may not grow by a page), "read-only" is a `mode=ro` connection.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tokometer.store as store_module
from bench_fixtures import bench_home, run_cli, synthetic  # noqa: F401
from tokometer.catalog import tokometer_home
from tokometer.store import open_store, store_reason

pytestmark = pytest.mark.timeout(120)
CONNECT = sqlite3.connect


def _full_disk(path: str, *args: Any, **kwargs: Any) -> sqlite3.Connection:
    db = CONNECT(path, *args, **kwargs)
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages}")  # not one page more: SQLITE_FULL on growth
    return db


def _read_only(path: str, *args: Any, **kwargs: Any) -> sqlite3.Connection:
    return CONNECT(f"file:{path}?mode=ro", *args, **{**kwargs, "uri": True})


def _integrity_ok() -> None:
    with CONNECT(tokometer_home() / "runs.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.mark.parametrize(("connect", "reason"), [(_full_disk, "the disk is full"), (_read_only, "read-only")], ids=["disk-full", "read-only"])
def test_a_refused_store_keeps_the_run_in_a_file_that_imports_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, connect: Callable[..., sqlite3.Connection], reason: str
) -> None:
    with open_store():  # the database exists with its schema; from now on it cannot take a run
        pass
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(store_module.sqlite3, "connect", connect)
    with synthetic(tok_s=300.0, ttft_s=0.005) as server:
        code, out, err = run_cli(["bench", server.url, "--max-tokens", "20", "--prompt-tokens", "50", "--runs", "3", "--json"])
    monkeypatch.setattr(store_module.sqlite3, "connect", CONNECT)
    assert code == 3, err
    shown = json.loads(out)
    assert shown["summary"]["requests_ok"] >= 3 and shown["summary"]["decode_tps"]["median"] > 0
    assert reason in err and "Traceback" not in err and len(err.strip().splitlines()) <= 3
    saved = [p for p in tmp_path.glob("tokometer-run-*.json")]
    assert len(saved) == 1 and str(saved[0]) in err
    _integrity_ok()
    code, out, err = run_cli(["runs", "import", str(saved[0]), "--json"])
    assert code == 0, err
    with open_store() as store:
        run = store.get_run(json.loads(out)[0]["id"])
    assert len(run.requests) == shown["requests_recorded"]
    assert run.summary is not None and run.summary.decode_tps.median == pytest.approx(shown["summary"]["decode_tps"]["median"])
    _integrity_ok()


def test_store_reasons_are_words() -> None:
    assert store_reason(sqlite3.OperationalError("database or disk is full")) == "the disk is full"
    assert store_reason(sqlite3.OperationalError("attempt to write a readonly database")) == "the runs database is read-only"
    assert store_reason(sqlite3.OperationalError("database is locked")) == "the runs database is locked by another process"
    assert store_reason(OSError("something else")) == "something else"
