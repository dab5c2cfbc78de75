"""`scripts/one_stream_check.py`: the single-stream estimate and the serving step on every published one-client run
(docs/PHYSICS.md section 6, "One stream, two answers")."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def script() -> Any:
    spec = importlib.util.spec_from_file_location(
        "one_stream_check", ROOT / "scripts" / "one_stream_check.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rows(script: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = script.check()
    return found


def test_every_run_has_one_client_and_no_speculation_or_pools(script: Any) -> None:
    runs = script.one_client_runs()
    assert len(runs) >= 40
    for run in runs:
        assert all(r.text("concurrency") == "1" for r in run.rows)
        assert run.disagg is None and run.tokens_per_pass == 1 and run.reason is None


def test_rows_carry_both_step_models_in_seconds(rows: list[dict[str, Any]]) -> None:
    assert len(rows) >= 80
    assert {r["source"] for r in rows} >= {"IX-DSR1-API", "SGL-COOKBOOK"}
    for r in rows:
        assert r["metric"].startswith("tpot_")
        # seconds per token, whatever unit the source printed (ms rows scaled): a decode step of 1-100 ms
        assert 1e-3 < r["measured_s"] < 0.1, r
        assert 1e-3 < r["simulate_s"] < 0.1, r
        assert r["estimate_s"] is not None and 1e-3 < r["estimate_s"] < 0.1, r


def test_the_two_step_models_differ_where_the_document_says(rows: list[dict[str, Any]]) -> None:
    """DeepSeek-R1 FP8 on 8 B200 under SGLang, one client: the serving step charges its fitted per-layer overhead
    (61 layers) on top of what the single-stream step charges, so it reads at least 30 % slower."""
    cases = [
        r
        for r in rows
        if r["source"] == "IX-DSR1-API" and r["hw"] == "b200" and r["quant"] == "fp8"
    ]
    assert cases
    for r in cases:
        assert r["simulate_s"] > 1.3 * r["estimate_s"]


def test_main_prints_a_line_per_row_and_the_medians(
    script: Any, rows: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    script.main([])
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith(f"{len(rows)} rows with both: median |error| estimate")
    script.main(["--json"])
    data = json.loads(capsys.readouterr().out)
    assert data and set(data[0]) >= {"measured_s", "estimate_s", "simulate_s", "layout"}
