"""Split runs: shares add up to the whole, merging keeps every duration, and a run split across
local processes or Ray workers measures what one process measures."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from bench_fixtures import bench_home, run_cli, synthetic  # noqa: F401
from tokometer.bench.client import RequestRecord
from tokometer.bench.distributed import merge, plan_shares, run_local, run_ray
from tokometer.bench.runner import BenchConfig, BenchResult, Runner
from tokometer.bench.trace import TraceRequest
from tokometer.errors import InputError
from tokometer.store import open_store

pytestmark = pytest.mark.timeout(300)


def test_shares_add_up_to_the_whole_run() -> None:
    config = BenchConfig("http://x", concurrency=(3, 8), rate_rps=None)
    shares = plan_shares(config, 3)
    assert [s.concurrency for s in shares] == [(1, 3), (1, 3), (1, 2)]
    assert all(s.level_names == ("concurrency=3", "concurrency=8") for s in shares)
    rate = plan_shares(BenchConfig("http://x", rate_rps=6.0, requests=7), 2)
    assert [(s.rate_rps, s.requests) for s in rate] == [(3.0, 4), (3.0, 3)]
    trace = tuple(TraceRequest(float(i), 10, 5) for i in range(5))
    parts = plan_shares(BenchConfig("http://x", trace=trace), 2)
    assert sorted(r.arrival_s for p in parts for r in p.trace) == [r.arrival_s for r in trace]


@pytest.mark.parametrize(
    ("config", "words"),
    [
        (BenchConfig("http://x"), "use them with --concurrency"),
        (BenchConfig("http://x", concurrency=(1, 4)), "at least --workers (2)"),
        (BenchConfig("http://x", rate_rps=1.0, requests=1), "fewer than --workers"),
    ],
)
def test_a_split_that_cannot_work_is_refused(config: BenchConfig, words: str) -> None:
    with pytest.raises(InputError, match=words.replace("(", r"\(").replace(")", r"\)")):
        plan_shares(config, 2)


def _result(records: list[RequestRecord], sync: dict[str, float]) -> BenchResult:
    return BenchResult(BenchConfig("http://x", concurrency=(2,)), None, tuple(records), "complete", "a", "b", sync_times=sync)


def test_merging_keeps_durations_and_rebases_on_each_barrier() -> None:
    def record(t0: float) -> RequestRecord:
        return RequestRecord(seq=0, phase="concurrency", label="concurrency=2", ok=True, t0=t0, t_headers=t0 + 0.1, event_times=(t0 + 0.25, t0 + 0.35))

    first = _result([record(100.0)], {"level0/round0": 99.9})
    second = _result([record(5000.02)], {"level0/round0": 5000.0})  # another machine's clock
    merged = merge(BenchConfig("http://x", concurrency=(2,)), [first, second], "test")
    assert [r.seq for r in merged.records] == [0, 1]
    # the second worker's request came 20 ms after its barrier: on the first worker's timeline, 99.92
    assert [r.t0 for r in merged.records] == pytest.approx([99.9 + 0.02, 100.0])
    for r in merged.records:
        assert r.event_times[0] - r.t0 == pytest.approx(0.25) and r.t_headers is not None and r.t_headers - r.t0 == pytest.approx(0.1)
    assert merged.status == "complete" and "2 test workers" in merged.notes[-1]
    assert merge(BenchConfig("http://x", concurrency=(2,)), [replace(first, status="interrupted"), second], "t").status == "interrupted"


def _level(result: BenchResult) -> dict[str, float]:
    level = result.levels()[0]["summary"]
    return {"decode": level["decode_tps"]["median"], "ttft": level["ttft_ms"]["median"], "ok": level["requests_ok"]}


def test_two_local_processes_measure_what_one_process_measures() -> None:
    with synthetic(tok_s=50.0, ttft_s=0.25) as server:
        config = BenchConfig(server.url, max_tokens=40, concurrency=(8,), runs=2, prompt_tokens=0)
        single = _level(Runner(config).run())
        split = run_local(config, 2)
    merged = _level(split)
    assert merged["ok"] == single["ok"] == 16
    assert merged["decode"] == pytest.approx(single["decode"], rel=0.02)
    assert merged["ttft"] == pytest.approx(single["ttft"], rel=0.03)
    assert merged["decode"] == pytest.approx(50.0, rel=0.02) and merged["ttft"] == pytest.approx(250.0, rel=0.03)


def test_cli_workers_store_one_merged_run() -> None:
    with synthetic(tok_s=200.0, ttft_s=0.01) as server:
        code, out, err = run_cli(["bench", server.url, "--concurrency", "4", "--runs", "1", "--max-tokens", "10", "--workers", "2", "--json"])
    assert code == 0, err
    shown = json.loads(out)
    assert shown["levels"][0]["label"] == "concurrency=4" and shown["levels"][0]["summary"]["requests_ok"] == 4
    assert "2 local-process workers" in shown["notes"][-1]
    with open_store() as store:
        assert len(store.get_run(shown["id"]).requests) == 6  # 4 measured + each worker's cold run


def test_cli_workers_without_streams_to_split_is_one_line() -> None:
    code, out, err = run_cli(["bench", "http://127.0.0.1:9", "--workers", "2"])
    assert code == 2 and err.startswith("error: --workers and --ray split concurrent streams") and not out


def test_cli_ray_without_ray_installed_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import tokometer.bench.distributed as distributed

    def missing() -> None:
        raise InputError("--ray needs Ray: pip install 'tokometer[ray]'")

    monkeypatch.setattr(distributed, "_ray", missing)
    with synthetic(tok_s=500.0, ttft_s=0.005) as server:
        code, _, err = run_cli(["bench", server.url, "--concurrency", "2", "--ray", "--workers", "2"])
    assert code == 2 and "pip install 'tokometer[ray]'" in err


@pytest.mark.slow
def test_a_local_ray_head_with_two_workers_measures_what_one_process_measures() -> None:
    if os.environ.get("CI") != "true":  # CI installs the ray extra (scripts/test.sh): never skip there
        pytest.importorskip("ray")
    with synthetic(tok_s=50.0, ttft_s=0.25) as server:
        config = BenchConfig(server.url, max_tokens=40, concurrency=(8,), runs=2, prompt_tokens=0)
        single = _level(Runner(config).run())
        split = run_ray(config, 2, "local")
    merged = _level(split)
    assert merged["ok"] == single["ok"] == 16
    assert merged["decode"] == pytest.approx(single["decode"], rel=0.02)
    assert merged["ttft"] == pytest.approx(single["ttft"], rel=0.03)
    assert "2 Ray workers" in split.notes[-1]


@pytest.mark.slow
def test_ray_workers_write_each_request_into_the_live_run(tmp_path: Path) -> None:
    """The rows reach the database through the actor on this node before the run is merged and finished."""
    if os.environ.get("CI") != "true":
        pytest.importorskip("ray")
    from tokometer.domain.runrecord import RunRecord
    from tokometer.store.writer import RunWriter
    from tokometer.usecases.benchmark import LiveRun

    path = tmp_path / "live.db"
    header = RunWriter(path, RunRecord(started_at="2025-01-01T00:00:00+00:00", status="incomplete", mode="concurrency"))
    header.close()
    with synthetic(tok_s=200.0, ttft_s=0.01) as server:
        config = BenchConfig(server.url, max_tokens=10, concurrency=(4,), runs=2, prompt_tokens=0)
        split = run_ray(config, 2, "local", LiveRun(path, header.run_id))
    with open_store(path) as store:
        live = store.get_run(header.run_id)
    assert live.status == "incomplete"  # nothing finished the run: these rows came from the workers
    assert len(live.requests) == len(split.records) == 10  # 8 measured + each worker's cold run
    assert sorted(r["phase"] for r in live.requests).count("concurrency") == 8
