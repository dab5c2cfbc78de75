"""The typed run: one JSON shape in and out, closed sets refused when misspelt, stored as typed."""

from __future__ import annotations

import pytest

from bench_fixtures import bench_home, synthetic  # noqa: F401
from tokometer.bench.runner import BenchConfig, Runner
from tokometer.domain.runrecord import FAILURE_KINDS, RunRecord
from tokometer.store import StoreError, open_store


def test_a_run_survives_the_store_unchanged() -> None:
    with synthetic(tok_s=1000.0, ttft_s=0.002) as server:
        record = Runner(BenchConfig(server.url, max_tokens=6, prompt_tokens=0, runs=2)).run().to_record()
    with open_store() as store:
        run_id = store.save_run(record)
        back = store.get_run(run_id)
    assert back.with_(id=None, tokometer_version=None, definitions={}) == record.with_(definitions={})
    assert RunRecord.from_dict(record.to_dict()) == record


def test_a_misspelt_status_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown run status 'completed'"):
        RunRecord.from_dict({"started_at": "x", "status": "completed", "mode": "speed"})
    with open_store() as store, pytest.raises(StoreError, match="not a run"):
        store.save_run({"started_at": "x", "status": "done"})


def test_every_failure_kind_the_client_names_is_in_the_closed_set() -> None:
    import inspect

    from tokometer.bench import client

    source = inspect.getsource(client)
    named = {kind for kind in FAILURE_KINDS if f'"{kind}"' in source}
    assert {"html", "redirect", "overrun", "line-too-long", "too-large", "invalid", "implausible"} <= named


def test_summary_and_levels_are_typed_and_write_back_the_shape_they_were_read_from() -> None:
    """Every key the summariser writes (SLO goodput, throughput, per-level aggregate) has a typed home,
    and `to_dict()` gives back the same keys in the same order."""
    from tokometer.domain.runrecord import Level, RunSummary

    with synthetic(tok_s=400.0, ttft_s=0.002) as server:
        config = BenchConfig(server.url, max_tokens=6, concurrency=(1, 2), runs=1, slo_ttft_ms=500.0)
        result = Runner(config).run()
    summary = result.summary()
    typed = RunSummary.from_dict(summary)
    assert typed.extra == {}  # nothing fell through to the untyped rest
    assert typed.goodput is not None and typed.goodput.slo_ttft_ms == 500.0
    assert typed.throughput is not None and typed.decode_tps.n == summary["decode_tps"]["n"]
    assert list(typed.to_dict().items()) == list(summary.items())
    for level in result.levels():
        back = Level.from_dict(level)
        assert back.kind == "concurrency" and back.summary is not None and back.summary.aggregate_tps is not None
        assert list(back.to_dict().items()) == list(level.items())


def test_unknown_token_sources_and_levels_are_refused() -> None:
    from tokometer.domain.runrecord import Level, RunSummary

    with pytest.raises(ValueError, match="unknown output token source 'guess'"):
        RunSummary.from_dict({"output_tokens_source": "guess"})
    with pytest.raises(ValueError, match="unknown level 'batch=4'"):
        Level.from_dict({"label": "batch=4", "summary": {}})
    with open_store() as store, pytest.raises(StoreError, match="not a run"):
        store.save_run({"started_at": "x", "summary": {"requests_ok": 1, "output_tokens_source": "guess"}})
