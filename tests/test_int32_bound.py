"""llama.cpp's INT32 bound (issue 25, docs/PHYSICS.md section 4, "The INT32 bound"): its quantized GEMMs unpack
weights on the SM's INT32 lanes, so where the tensor rate is 15-16x the INT32 rate (A100, Hopper through
mma.sync, Orin) the peak is min(peak, K x INT32 rate). K is one number of the engine's kernels, found by a
profile over candidates at the engine level of the fit and kept by every level below."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tokometer.catalog import engine_catalog, hardware_catalog
from tokometer.costmodel.layout import IDEAL
from tokometer.costmodel.roofline import compute_peak, int32_cap, int32_rate_tflops
from tokometer.fitting.calibration import INT32_GRID, fit_int32, fit_table
from tokometer.fitting.features import Features, int32_limited, predicted_time
from tokometer.fitting.rows import Case

CASE = Case(row_id="x", line=2, raw={}, metric="pp", value=1.0, n_devices=1, batch=1, prompt_tokens=1, gen_tokens=0, flag="")
PRIOR = replace(IDEAL, prefill_efficiency_max=0.5, prefill_half_tokens=128.0, prefill_chunk_tokens=4096)
NO_OVERHEADS = {"layer_overhead_us": 0.0, "step_overhead_us": 0.0}
FLOPS_PER_TOKEN = 16e9  # an 8B model: 2 FLOPs per weight


def _rows(peak: float, int32: float, true_k: float | None, group: str = "llama-cpp/cuda/hbm-gpu",
          eta: float = 0.6, half: float = 150.0) -> list[Features]:
    """Prompt rows on one device of `peak` TFLOPS and `int32` INT32 tera-ops, measured as if its kernels were
    bounded at `true_k` x the INT32 rate."""
    realised = min(peak, true_k * int32) if true_k and int32 else peak
    rows = []
    for tokens in (64, 256, 512, 1024, 2048, 4096):
        matmul_s = tokens * FLOPS_PER_TOKEN / (peak * 1e12)
        t = tokens * FLOPS_PER_TOKEN / (realised * 1e12) / (eta * tokens / (tokens + half))
        rows.append(Features(
            case=CASE, group=group, engine_id="llama-cpp", backend="cuda", hardware_id=f"h{peak:g}", prior=PRIOR,
            t_measured_s=t, matmul_s=matmul_s, prompt_tokens=tokens, n_layers=1, quantized=True,
            peak_tflops=peak, int32_tflops=int32,
        ))
    return rows


def test_the_profile_finds_the_bound_that_made_the_rows() -> None:
    # a GDDR card the bound never reaches (its tensor rate 8x its INT32 rate) and an A100-like one it does
    rows = _rows(165.0, 0.0, 8.0, "llama-cpp/cuda/gddr-gpu") + _rows(312.0, 19.5, 8.0)
    k, fitted = fit_int32(rows, PRIOR, NO_OVERHEADS, ridge=1e-6)
    assert k == pytest.approx(8.0, rel=0.08)  # the grid is 15 % apart
    eff = replace(PRIOR, **fitted, int32_flop_per_op=k)
    for f in rows:
        assert predicted_time(f, eff) == pytest.approx(f.t_measured_s, rel=0.06)
    # without the bound, one eta cannot serve both devices: the A100 rows read 1.9x slow for the GDDR card's eta
    unbounded = replace(PRIOR, **fit_int32(rows, PRIOR, NO_OVERHEADS, ridge=1e-6, candidates=(None,))[1])
    worst = max(abs(predicted_time(f, unbounded) / f.t_measured_s - 1.0) for f in rows)
    assert worst > 0.25


def test_rows_that_reach_the_full_peak_keep_no_bound() -> None:
    rows = _rows(165.0, 0.0, None, "llama-cpp/cuda/gddr-gpu") + _rows(312.0, 19.5, None)
    assert fit_int32(rows, PRIOR, NO_OVERHEADS, ridge=1e-6)[0] is None


def test_a_held_bound_is_fitted_as_it_is() -> None:
    rows = _rows(165.0, 0.0, 8.0, "llama-cpp/cuda/gddr-gpu")  # no row the bound could reach
    assert fit_int32(rows, PRIOR, NO_OVERHEADS, candidates=(12.0,))[0] == 12.0
    assert fit_int32(rows, PRIOR, NO_OVERHEADS)[0] is None  # the grid skips candidates that bound nothing


def test_the_bound_is_fitted_once_at_the_engine_and_kept_below() -> None:
    rows = _rows(165.0, 0.0, 8.0, "llama-cpp/cuda/gddr-gpu") + _rows(312.0, 19.5, 8.0)
    table = fit_table(rows)
    assert {key: eff.int32_flop_per_op for key, eff in table.items()} == dict.fromkeys(table, table["llama-cpp/*/*"].int32_flop_per_op)
    assert table["llama-cpp/*/*"].int32_flop_per_op in INT32_GRID


def test_features_and_estimate_price_the_same_peak() -> None:
    f = _rows(312.0, 19.5, 8.0)[0]
    limited = int32_limited(f, 9.0)
    assert limited.matmul_s == pytest.approx(f.matmul_s * 312.0 / (9.0 * 19.5))
    assert int32_limited(limited, 9.0) == limited  # applied once
    assert int32_limited(f, 20.0) is f  # 20 x 19.5 > 312: no bound
    a100 = hardware_catalog().get("a100-80gb-sxm")
    assert a100.int32_tops == pytest.approx(19.5)
    peak = compute_peak(a100, "fp16", wgmma=False, int32_flop_per_op=9.0)
    assert peak.tflops == pytest.approx(9.0 * 19.5) and peak.dtype == "fp16-int32"
    assert compute_peak(a100, "int8", wgmma=False, int32_flop_per_op=9.0).tflops == pytest.approx(2 * 9.0 * 19.5)
    assert compute_peak(a100, "fp16", wgmma=True, int32_flop_per_op=9.0).tflops == pytest.approx(312.0)  # vLLM, TensorRT-LLM
    assert compute_peak(a100, "fp16", wgmma=False).tflops == pytest.approx(312.0)  # no fitted bound
    rtx = hardware_catalog().get("rtx-4090")
    assert int32_rate_tflops(rtx, compute_peak(rtx, "fp16")) == 0.0  # no INT32 rate in the catalog: unbounded


def test_the_shipped_table_bounds_llama_cpp_on_an_a100_and_not_vllm() -> None:
    from tokometer.catalog.efficiency import efficiency_for
    from tokometer.usecases.estimate import estimate

    a100 = hardware_catalog().get("a100-80gb-sxm")
    k = efficiency_for(engine_catalog().get("llama-cpp"), a100).int32_flop_per_op
    assert k is not None and 4.0 <= k <= 40.0
    bounded = estimate("llama-3.1-8b", "a100-80gb-sxm", quant="q4_k_m", engine="llama-cpp")
    assert bounded.peak.tflops == pytest.approx(min(312.0, k * 19.5)) and bounded.peak.dtype.endswith("-int32")
    assert estimate("llama-3.1-8b", "a100-80gb-sxm", quant="fp16", engine="vllm").peak.tflops == pytest.approx(312.0)
    assert int32_cap(a100, bounded.peak, k) == bounded.peak  # already at the bound
