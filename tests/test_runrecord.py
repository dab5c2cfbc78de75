"""The typed run: one JSON shape in and out, closed sets refused when misspelt, stored as typed."""

from __future__ import annotations

import pytest

from bench_fixtures import bench_home, synthetic  # noqa: F401
from tokometer.bench.runner import BenchConfig, Runner
from tokometer.runrecord import FAILURE_KINDS, RunRecord
from tokometer.store import StoreError, open_store


def test_a_run_survives_the_store_unchanged() -> None:
    with synthetic(tok_s=1000.0, ttft_s=0.002) as server:
        record = Runner(BenchConfig(server.url, max_tokens=6, prompt_tokens=0, runs=2)).run().to_record()
    with open_store() as store:
        run_id = store.save_run(record)
        back = store.get_record(run_id)
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
