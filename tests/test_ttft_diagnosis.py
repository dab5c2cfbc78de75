"""`scripts/ttft_diagnosis.py`: every scored published TTFT row with its simulated parts (issue 29)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def diag():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("ttft_diagnosis", ROOT / "scripts" / "ttft_diagnosis.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rows_carry_measured_predicted_and_the_simulated_parts(diag) -> None:  # type: ignore[no-untyped-def]
    rows = diag.diagnose(["VLLM-FP8KV"])
    assert rows, "VLLM-FP8KV has scored median TTFT rows"
    for r in rows:
        assert r["source"] == "VLLM-FP8KV" and r["engine"] == "vllm"
        assert r["metric"].startswith("ttft") and r["measured"] > 0 and r["predicted"] > 0
        assert r["ratio"] == pytest.approx(r["predicted"] / r["measured"])
        # the mean simulated TTFT holds its mean queue and at least one prefill step's worth beyond it
        assert r["ttft_mean_ms"] >= r["queue_ms"] > 0
        assert r["lone_ms"] > 0
        # vLLM's eager floor (1,726 us a layer, above its 512-token graphs) is charged to MoE models only
        assert (r["eager_ms"] > 0) == r["moe"]
        assert r["lone_ms"] >= r["eager_ms"]  # the 20k-token prompts are past the graphs: floored
        assert r["recv"] == 1 and not r["disagg"]


def test_the_grouping_prints_every_key(diag, capsys) -> None:  # type: ignore[no-untyped-def]
    assert diag.main(["--source", "VLLM-FP8KV"]) == 0
    out = capsys.readouterr().out
    for key in ("by source", "by engine", "by family", "by disagg", "by band", "VLLM-FP8KV"):
        assert key in out
