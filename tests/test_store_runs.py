"""The runs database: migrations, save/list/get, recomputation from timestamps, atomic writes."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bench_fixtures import bench_home, synthetic  # noqa: F401
from tokometer.bench.runner import BenchConfig, Runner
from tokometer.catalog import tokometer_home
from tokometer.domain.runrecord import Stats
from tokometer.store import RunNotFound, StoreError, default_path, open_store
from tokometer.store.migrations import MIGRATIONS, applied, migrate
from tokometer.usecases.benchmark import recompute


def minimal_run(**extra: Any) -> dict[str, Any]:
    run: dict[str, Any] = {
        "started_at": "2025-01-01T00:00:00+00:00",
        "url": "http://x",
        "model": "m",
        "mode": "speed",
        "config": {},
        "summary": {"decode_tps": {"median": 10.0}, "ttft_ms": {"median": 5.0}, "requests_ok": 1, "requests_failed": 0},
        "requests": [{"seq": 0, "phase": "decode", "ok": True, "t0_s": 1.0, "event_times_s": [0.1, 0.2]}],
    }
    run.update(extra)
    return run


def test_default_path_follows_tokometer_home() -> None:
    home = tokometer_home()
    assert default_path() == home / "runs.db"
    with open_store() as store:
        assert store.path == home / "runs.db"
    assert (home / "runs.db").is_file()


def test_migrations_are_recorded_once_in_order(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with open_store(path):
        pass
    db = sqlite3.connect(path)
    assert applied(db) == [fn.__name__ for fn in MIGRATIONS]
    assert migrate(db) == []  # idempotent
    names = [fn.__name__ for fn in MIGRATIONS]
    assert names == sorted(names) and len(set(names)) == len(names)
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"runs", "requests", "_migrations"} <= tables


def test_save_list_get_delete(tmp_path: Path) -> None:
    with open_store(tmp_path / "r.db") as store:
        first = store.save_run(minimal_run())
        second = store.save_run(minimal_run(model="other", prediction={"ceiling_tok_s": 20.0, "estimate_tok_s": 12.0, "estimate": {"big": 1}}, hardware="local"))
        listed = store.list_runs()
        assert [r.id for r in listed] == [second, first]
        assert listed[0].prediction == {"ceiling_tok_s": 20.0, "estimate_tok_s": 12.0}
        assert listed[1].prediction is None
        assert listed[0].hardware == "local"
        assert set(listed[0].to_dict()) >= {"id", "started_at", "url", "model", "hardware", "mode", "summary", "prediction"}
        assert listed[0].summary is not None and listed[0].summary.decode_tps.median == 10.0
        assert store.list_runs(model="other")[0].id == second
        run = store.get_run(second)
        assert run.prediction is not None and run.prediction["estimate"] == {"big": 1}
        assert run.requests[0]["event_times_s"] == [0.1, 0.2]
        store.delete_run(first)
        with pytest.raises(RunNotFound):
            store.get_run(first)
        assert store.count() == 1


def test_a_failed_save_leaves_the_database_unchanged(tmp_path: Path) -> None:
    with open_store(tmp_path / "r.db") as store:
        store.save_run(minimal_run())
        broken = minimal_run(requests=[{"seq": 0, "phase": "decode", "ok": True}, {"phase": "no seq"}])
        with pytest.raises(KeyError):
            store.save_run(broken)
        assert store.count() == 1
        assert store.db.execute("SELECT COUNT(*) FROM requests").fetchone()[0] == 1


def test_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "runs.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="cannot open the runs database"):
        open_store(bad)


def test_non_finite_numbers_are_stored_as_null(tmp_path: Path) -> None:
    with open_store(tmp_path / "r.db") as store:
        run_id = store.save_run(minimal_run(summary={"decode_tps": {"median": float("nan")}, "x": float("inf")}))
        summary = store.get_run(run_id).summary
        assert summary is not None and summary.decode_tps == Stats() and summary.extra == {"x": None}


def test_stored_timestamps_recompute_the_same_summary() -> None:
    with synthetic(tok_s=300.0, ttft_s=0.01, flavor="llamacpp") as server:
        result = Runner(BenchConfig(server.url, max_tokens=20, prompt_tokens=100, runs=2)).run()
    run = result.to_dict()
    with open_store() as store:
        run_id = store.save_run(run)
        again = recompute(store, run_id)
        stored = store.get_run(run_id)
    assert again is not None and stored.summary is not None
    for key in ("decode_tps", "ttft_ms", "prefill_tps", "tpot_ms", "itl_ms", "server_decode_tps"):
        for stat in ("median", "mean", "min", "max"):
            assert getattr(getattr(again, key), stat) == pytest.approx(getattr(getattr(stored.summary, key), stat)), (key, stat)
    assert again.requests_ok == stored.summary.requests_ok == 4
    assert stored.server is not None and stored.server["engine"] == "llama.cpp"
    assert stored.requests[1]["server_timings"]["predicted_n"] == 20


def test_the_writer_stores_each_request_and_flush_waits_for_it(tmp_path: Path) -> None:
    from tokometer.domain.runrecord import RunRecord
    from tokometer.store.writer import RunWriter

    path = tmp_path / "live.db"
    writer = RunWriter(path, RunRecord(started_at="2025-01-01T00:00:00+00:00", status="complete", mode="speed"))
    for seq in range(5):
        writer.put(lambda seq=seq: {"seq": seq, "phase": "decode", "ok": True, "t0_s": float(seq)})
    writer.put(lambda: 1 / 0)  # a record that cannot be built is reported, the others are kept
    writer.flush()
    with open_store(path) as store:
        run = store.get_run(writer.run_id)
        assert run.status == "incomplete" and [r["seq"] for r in run.requests] == [0, 1, 2, 3, 4]
    writer.close()
    assert writer.written == 5 and "could not be recorded" in (writer.error or "")


def test_the_writer_holds_parsing_while_requests_are_in_flight(tmp_path: Path) -> None:
    """Open-loop runs: a finished stream is parsed in a quiet moment, or once BATCH_MAX rows wait."""
    import threading

    from tokometer.domain.runrecord import RunRecord
    from tokometer.store.writer import BATCH_MAX, RunWriter

    writer = RunWriter(tmp_path / "live.db", RunRecord(started_at="2025-01-01T00:00:00+00:00", mode="rate"))
    parsed = threading.Event()

    def row() -> dict[str, Any]:
        parsed.set()
        return {"seq": 0, "phase": "rate", "ok": True, "t0_s": 0.0}

    writer.quiet(False)
    writer.put(row)
    assert not parsed.wait(0.5)  # held: streams are still being timed
    writer.quiet(True)
    assert parsed.wait(10.0)
    writer.quiet(False)  # a full batch is written even while busy: a kill loses at most that much
    done = [threading.Event() for _ in range(BATCH_MAX)]
    for seq, event in enumerate(done, start=1):
        writer.put(lambda seq=seq, event=event: (event.set(), {"seq": seq, "phase": "rate", "ok": True})[1])
    assert all(event.wait(10.0) for event in done)
    writer.close()
    assert writer.written == BATCH_MAX + 1
