"""A run killed mid-way keeps every request that completed: SIGKILL leaves it `incomplete`,
SIGTERM and SIGHUP finish it like Ctrl-C. Real `tokometer bench` subprocesses, synthetic server."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench_fixtures import bench_home, run_cli, synthetic  # noqa: F401
from tokometer.catalog import tokometer_home
from tokometer.store import open_store

pytestmark = pytest.mark.timeout(120)
SRC = Path(__file__).resolve().parents[1] / "src"


def _start_bench(url: str, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "TOKOMETER_HOME": str(tokometer_home()), "PYTHONPATH": str(SRC)}
    args = [sys.executable, "-m", "tokometer", "bench", url, "--max-tokens", "20", "--prompt-tokens", "0", "--runs", "500", "--json", *extra]
    # its own session, so a test can kill it together with any worker processes it started
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _stored_requests(at_least: int, proc: subprocess.Popen[str], timeout_s: float = 60.0) -> int:
    """Wait until the live run has `at_least` requests in the database; return how many."""
    path = tokometer_home() / "runs.db"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        if path.exists():
            try:
                with sqlite3.connect(path, timeout=5) as db:
                    count = int(db.execute("SELECT COUNT(*) FROM requests").fetchone()[0])
            except sqlite3.OperationalError:  # tables not created yet
                count = 0
            if count >= at_least:
                return count
        time.sleep(0.05)
    raise AssertionError("the benchmark stored no requests in time")


def test_sigkill_leaves_an_incomplete_run_with_every_completed_request() -> None:
    with synthetic(tok_s=400.0, ttft_s=0.005) as server:
        proc = _start_bench(server.url)
        seen = _stored_requests(4, proc)
        proc.kill()
        proc.wait(10)
        assert proc.returncode == -signal.SIGKILL
    with open_store() as store:
        runs = store.list_runs()
        assert [r.status for r in runs] == ["incomplete"]
        stored = store.get_run(runs[0].id)
    assert len(stored.requests) >= seen
    assert all(r["ok"] for r in stored.requests)
    code, out, err = run_cli(["runs", "show", str(runs[0].id)])
    assert code == 0, err
    assert "[incomplete]" in out and "ended without finishing" in out
    code, out, _ = run_cli(["runs", "show", str(runs[0].id), "--json"])
    shown = json.loads(out)
    assert shown["summary"]["requests_ok"] >= seen - 1  # the cold run is not a measured request
    assert shown["summary"]["decode_tps"]["median"] == pytest.approx(400.0, rel=0.25)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_finish_the_run_like_ctrl_c(signum: int) -> None:
    with synthetic(tok_s=400.0, ttft_s=0.005) as server:
        proc = _start_bench(server.url)
        seen = _stored_requests(4, proc)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signum, err
    assert "Traceback" not in err
    shown = json.loads(out)
    assert shown["status"] == "interrupted"
    assert any(signal.Signals(signum).name in note for note in shown["notes"])
    with open_store() as store:
        run = store.get_run(shown["id"])
    assert run.status == "interrupted"
    assert len(run.requests) >= seen
    assert run.summary.requests_ok == shown["summary"]["requests_ok"] >= seen - 1


def test_an_incomplete_run_is_summarised_on_the_web_too() -> None:
    from starlette.testclient import TestClient

    from tokometer.domain.runrecord import RunRecord
    from tokometer.web.app import create_app

    with synthetic(tok_s=400.0, ttft_s=0.005) as server:
        from tokometer.bench.runner import BenchConfig, Runner

        result = Runner(BenchConfig(server.url, max_tokens=10, prompt_tokens=0, runs=3)).run()
    with open_store() as store:
        run_id = store.begin_run(RunRecord(started_at="2025-01-01T00:00:00+00:00", status="incomplete", mode="speed"))
        store.add_requests(run_id, [r.to_dict() for r in result.records])
    shown = TestClient(create_app()).get(f"/api/runs/{run_id}").json()
    assert shown["status"] == "incomplete" and shown["summary"]["requests_ok"] == 3
    assert any("ended without finishing" in n for n in shown["notes"])


def test_local_workers_write_as_they_go_and_sigkill_keeps_their_requests() -> None:
    with synthetic(tok_s=400.0, ttft_s=0.005) as server:
        proc = _start_bench(server.url, "--concurrency", "2", "--workers", "2")
        try:
            seen = _stored_requests(6, proc, timeout_s=90)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)  # the coordinator and its workers
            proc.wait(10)
    with open_store() as store:
        runs = store.list_runs()
        assert [r.status for r in runs] == ["incomplete"]
        assert len(store.get_run(runs[0].id).requests) >= seen


def test_sigterm_stops_local_workers_like_ctrl_c_and_stores_the_merged_run() -> None:
    with synthetic(tok_s=400.0, ttft_s=0.005) as server:
        proc = _start_bench(server.url, "--concurrency", "2", "--workers", "2")
        try:
            seen = _stored_requests(6, proc, timeout_s=90)
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 128 + signal.SIGTERM, err
    shown = json.loads(out)
    assert shown["status"] == "interrupted" and "2 local-process workers" in shown["notes"][-1]
    with open_store() as store:
        run = store.get_run(shown["id"])
    assert run.status == "interrupted" and len(run.requests) >= seen
