"""Prefill that follows prompt length: quadratic attention, unfused score traffic, pipeline overlap,
derived-peak bands, and the accuracy it reaches on the calibration rows held out by device."""

from __future__ import annotations

import csv
import math
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokometer.calibration_data import MEASUREMENTS_CSV
from tokometer.catalog import hardware_catalog, model_catalog
from tokometer.costmodel.pipeline import layer_split_counts, pipeline_prefill_factor
from tokometer.costmodel.roofline import (
    DERIVED_PEAK_LOG_SD,
    Peak,
    compute_peak,
    prefill_log_sd,
    prefill_score_elements,
)
from tokometer.usecases.estimate import estimate


def test_score_elements_are_heads_times_causal_pairs_per_layer() -> None:
    model = model_catalog().get("llama-3.1-8b").spec
    t = 4096
    # 32 layers x 32 heads x T^2 / 2
    assert prefill_score_elements(model, t) == pytest.approx(32 * 32 * t * t / 2)
    assert prefill_score_elements(model, 2 * t) == pytest.approx(4 * prefill_score_elements(model, t))


@settings(max_examples=40, deadline=None)
@given(st.floats(1.0, 4.0), st.sampled_from(["llama.cpp", "vllm"]))
def test_tokens_per_second_fall_as_the_prompt_grows(chunks: float, engine: str) -> None:
    """Beyond one chunk (the matmul already sees full chunks) a 4x longer prompt prefills at a lower
    rate: attention grows with T^2."""
    chunk = estimate(model="llama-3.1-8b", hw="rtx-4090", engine=engine).efficiency.prefill_chunk_tokens
    prompt = int(chunks * chunk)
    short = estimate(model="llama-3.1-8b", hw="rtx-4090", quant="fp16", engine=engine, prompt_tokens=prompt)
    long = estimate(model="llama-3.1-8b", hw="rtx-4090", quant="fp16", engine=engine, prompt_tokens=4 * prompt)
    assert short.prefill and long.prefill
    assert long.prefill.tok_s < short.prefill.tok_s


def test_an_unfused_attention_pays_for_its_score_traffic() -> None:
    from tokometer.catalog import engine_catalog
    from tokometer.catalog.efficiency import efficiency_for

    unfused = efficiency_for(engine_catalog().get("llama-cpp"), hardware_catalog().get("rtx-4090"), unfused_decode_attention=True)
    base = estimate(model="llama-3.1-8b", hw="rtx-4090", quant="q4_k_m", engine="llama.cpp", prompt_tokens=8192, efficiency=unfused)
    assert base.prefill and base.prefill.score_bytes > 0 and base.prefill.score_time_s > 0
    # today's llama.cpp runs flash attention: an estimate moves no scores through memory
    fused = estimate(model="llama-3.1-8b", hw="rtx-4090", quant="q4_k_m", engine="llama.cpp", prompt_tokens=8192)
    assert fused.prefill and fused.prefill.score_bytes == 0
    assert fused.prefill.time_s == pytest.approx(base.prefill.time_s - base.prefill.score_time_s, rel=1e-9)


@pytest.mark.parametrize(
    ("notes", "version", "date", "unfused"),
    [
        ("llama-bench -fa 1", "b5000", "2025-04-01", False),  # flash attention stated on
        ("llama-bench -fa 0", "b7000", "2026-01-01", True),  # stated off on a build whose default is on
        ("", "b4000", "2024-12-01", True),  # before flash attention became llama.cpp's default
        ("", "b7000", "2026-01-01", False),
    ],
)
def test_prefill_rows_pay_score_traffic_only_without_flash_attention(tmp_path: object, notes: str, version: str, date: str, unfused: bool) -> None:
    from pathlib import Path

    from tokometer.fitting.features import features
    from tokometer.fitting.rows import read_cases

    row = {
        "row_id": "T-1", "source_id": "T", "engine": "llama.cpp (llama-bench)", "engine_version": version,
        "hardware_id": "rtx-4090", "n_devices": "1", "model": "llama-3.1-8b", "quant": "Q4_K_M", "batch_size": "1",
        "prompt_tokens": "8192", "gen_tokens": "0", "metric": "pp", "unit": "tok/s", "value": "6000",
        "measured_date": date, "notes": notes,
    }
    path = Path(str(tmp_path)) / "rows.csv"
    path.write_text(",".join(row) + "\n" + ",".join(row.values()) + "\n", encoding="utf-8")
    found = features(read_cases(path)[0])
    assert found is not None and found.attention_s > 0
    assert (found.score_s > 0) is unfused


@pytest.mark.parametrize(
    ("chunks", "stages", "expected"),
    [(1, 4, 1.0), (2, 4, 5 / 8), (8, 4, 11 / 32), (16, 2, 17 / 32), (8, 1, 1.0), (8, 8, 11 / 32)],
)
def test_pipeline_overlaps_every_chunk_of_the_prompt(chunks: int, stages: int, expected: float) -> None:
    # even stages: (1 + (m - 1) * max(1/p, 1/w)) / m with w = 2048 / 512 = 4 ubatches in flight; the
    # pipeline is not drained between 2048-token batches, and 8 stages are held to the 4-wide window
    assert pipeline_prefill_factor(chunks, 512, 2048, stages) == pytest.approx(expected)


def test_llama_cpp_layer_split_gives_the_first_gpu_the_extra_layers() -> None:
    # the output layer counts as one more slot: 32 layers over 4 GPUs are 9, 8, 8, 7
    assert layer_split_counts(32, 4) == (9, 8, 8, 7)
    assert layer_split_counts(80, 4) == (21, 20, 20, 19)
    assert sum(layer_split_counts(61, 6)) == 61


def test_the_largest_stage_sets_the_pipeline_rate() -> None:
    even = pipeline_prefill_factor(16, 512, 2048, 4)
    uneven = pipeline_prefill_factor(16, 512, 2048, 4, n_layers=32)
    assert uneven == pytest.approx((1 + 15 * 9 / 32) / 16)
    assert uneven > even


def test_several_gpus_prefill_a_long_prompt_faster_and_a_short_one_not() -> None:
    def tok_s(prompt: int, pp: int) -> float:
        e = estimate(model="llama-3.1-8b", hw="rtx-4090", quant="fp16", engine="llama.cpp", prompt_tokens=prompt, pp=pp)
        assert e.prefill
        return e.prefill.tok_s

    assert tok_s(512, 4) <= tok_s(512, 1)
    assert 2.0 < tok_s(4096, 4) / tok_s(4096, 1) < 32 / 11
    # every ubatch of the prompt is in the pipeline: 16 chunks overlap better than 8
    assert tok_s(8192, 4) / tok_s(8192, 1) > tok_s(4096, 4) / tok_s(4096, 1)
    # at most 4 ubatches in flight: 8 GPUs do not reach 4x
    assert tok_s(8192, 8) / tok_s(8192, 1) < 4.0


def test_a_derived_peak_gets_a_wider_prefill_band() -> None:
    eff = estimate(model="llama-3.1-8b", hw="rtx-4090").efficiency
    datasheet = prefill_log_sd(eff, Peak(100.0, "fp16"))
    derived = prefill_log_sd(eff, Peak(100.0, "fp16", "derived", derived=True))
    assert datasheet == eff.prefill_residual_log_sd
    assert derived == pytest.approx(math.hypot(datasheet, DERIVED_PEAK_LOG_SD))
    apple = next(hw for hw in hardware_catalog() if hw.compute_peak_derived)
    assert estimate(model="llama-3.1-8b", hw=apple.id).peak.derived


def test_a_12k_token_paste_on_a_4090_takes_seconds() -> None:
    """A 12k-token prompt of an 8B Q4 model on an RTX 4090 with llama.cpp: seconds before the first token.
    3-5 s without flash attention (the scores through memory); today's builds run it (llama.cpp's
    `--flash-attn auto`), which saves the score traffic: 1.5-3 s, and never faster than the matmuls alone."""
    e = estimate(model="llama-3.1-8b", hw="rtx-4090", quant="q4_k_m", engine="llama.cpp", prompt_tokens=12_000)
    assert e.prefill and 1.5 <= e.prefill.time_s <= 3.0
    assert e.prefill.score_bytes == 0
    from tokometer.catalog import engine_catalog
    from tokometer.catalog.efficiency import efficiency_for

    unfused = efficiency_for(engine_catalog().get("llama-cpp"), hardware_catalog().get("rtx-4090"), unfused_decode_attention=True)
    old = estimate(model="llama-3.1-8b", hw="rtx-4090", quant="q4_k_m", engine="llama.cpp", prompt_tokens=12_000, efficiency=unfused)
    assert old.prefill and 3.0 <= old.prefill.time_s <= 5.0


def test_prefill_held_out_by_device_meets_its_targets() -> None:
    """Leave-one-hardware-out on every shipped pp row, multi-device ones too: median error <= 15 %
    overall and on single devices, no prompt-length bucket biased beyond +-15 % (long prompts used to
    come out far too fast), and the H100 PCIe, held out, no longer 50 % too fast (mma.sync rate)."""
    from tokometer.fitting.model import leave_one_hardware_out
    from tokometer.fitting.rows import read_cases

    cases = read_cases(MEASUREMENTS_CSV)
    results = leave_one_hardware_out(cases, only=[c for c in cases if c.metric == "pp"])
    scored = [r for r in results if r.scored and r.predicted and r.ape is not None]
    assert len(scored) >= 350
    assert statistics.median(r.ape for r in scored) <= 0.15
    assert statistics.median(r.ape for r in scored if r.case.n_devices == 1) <= 0.15
    with MEASUREMENTS_CSV.open(encoding="utf-8") as handle:
        lengths = {row["row_id"]: int(row["prompt_tokens"]) for row in csv.DictReader(handle)}

    def bias(rows: list) -> float:
        return statistics.median((r.predicted - r.case.value) / r.case.value for r in rows)

    for length in (512, 1024, 4096, 8192):
        assert abs(bias([r for r in scored if lengths[r.case.row_id] == length])) <= 0.15, length
    assert abs(bias([r for r in scored if r.hardware_id == "h100-pcie"])) <= 0.2


def test_llama_cpp_on_hopper_runs_at_the_mma_sync_rate() -> None:
    """Hopper's datasheet tensor peak needs wgmma; llama.cpp's kernels issue mma.sync, about half."""
    h100 = hardware_catalog().get("h100-pcie")
    assert h100.fp16_mma_sync_tflops == pytest.approx(h100.fp16_tflops / 2)
    assert compute_peak(h100, "fp16").tflops == h100.fp16_tflops
    capped = compute_peak(h100, "fp16", fp16_accumulate=True, wgmma=False)
    assert capped.tflops == pytest.approx(h100.fp16_mma_sync_tflops)
    assert compute_peak(h100, "int8", wgmma=False).tflops == pytest.approx(2 * h100.fp16_mma_sync_tflops)
    # an Ampere card has no such split: its peak is what mma.sync reaches
    a100 = hardware_catalog().get("a100-80gb-pcie")
    assert compute_peak(a100, "fp16", wgmma=False) == compute_peak(a100, "fp16")


def test_only_engines_without_wgmma_lose_hoppers_peak() -> None:
    def prefill_tok_s(engine: str, hw: str) -> float:
        e = estimate(model="llama-3.1-8b", hw=hw, quant="fp16", engine=engine, prompt_tokens=2048)
        assert e.prefill
        return e.prefill.tok_s

    llama = estimate(model="llama-3.1-8b", hw="h100-pcie", quant="fp16", engine="llama.cpp", prompt_tokens=2048)
    vllm = estimate(model="llama-3.1-8b", hw="h100-pcie", quant="fp16", engine="vllm", prompt_tokens=2048)
    h100 = hardware_catalog().get("h100-pcie")
    k = llama.efficiency.int32_flop_per_op  # the fitted INT32 bound (test_int32_bound.py) caps mma.sync's rate further
    assert k is not None and h100.int32_tops is not None
    assert llama.peak.tflops == pytest.approx(min(h100.fp16_mma_sync_tflops, k * h100.int32_tops))
    assert vllm.peak.tflops == pytest.approx(hardware_catalog().get("h100-pcie").fp16_tflops)
    # llama.cpp gains from an H100 over an A100 what the SM count and clock give (1.2x), not the datasheet's 2.4x
    ratio = prefill_tok_s("llama.cpp", "h100-pcie") / prefill_tok_s("llama.cpp", "a100-80gb-pcie")
    assert 1.0 < ratio < 1.6


def test_multi_device_prefill_gets_its_own_out_of_sample_band() -> None:
    from tokometer.catalog.efficiency import multi_device_log_sd
    from tokometer.usecases.estimate import prefill_band_log_sd

    eff = estimate(model="llama-3.1-8b", hw="rtx-4090", engine="llama.cpp").efficiency
    peak = Peak(100.0, "fp16")
    multi = multi_device_log_sd("pp")
    assert multi is not None and multi != multi_device_log_sd("tg")
    assert prefill_band_log_sd(eff, peak, 1) == prefill_log_sd(eff, peak)
    assert prefill_band_log_sd(eff, peak, 4) == max(prefill_log_sd(eff, peak), multi)


def test_layer_split_is_closed_form_for_any_layer_count() -> None:
    """A bare model may claim 10^12 layers: the split is counted, not looped over (the web hung on it)."""
    counts = layer_split_counts(10**12, 8)
    assert sum(counts) == 10**12 and max(counts) - min(counts) <= 2
    assert layer_split_counts(32, 4) == (9, 8, 8, 7) and layer_split_counts(0, 3) == (0, 0, 0)


def test_llama_cpp_runs_mxfp4_at_its_block_kernels_rate_not_the_fp4_tensor_peak() -> None:
    """GGUF MXFP4 goes through llama.cpp's tiled block kernels (its native Blackwell FP4 path read 1.27x the
    previous one, PR #17906), so its prefill peak is the fp16 one; an engine with FP4 GEMMs keeps the FP4 rate."""
    hw = hardware_catalog().get("rtx-5090")
    assert hw.fp4_tflops and hw.fp16_acc16_tflops and hw.fp4_tflops > 2 * hw.fp16_acc16_tflops
    lcpp = estimate(model="gpt-oss-20b", hw="rtx-5090", quant="mxfp4", engine="llama.cpp", prompt_tokens=2048)
    assert lcpp.peak.tflops == pytest.approx(hw.fp16_acc16_tflops)
    q4 = estimate(model="gpt-oss-20b", hw="rtx-5090", quant="q4_k_m", engine="llama.cpp", prompt_tokens=2048)
    assert lcpp.peak.tflops == q4.peak.tflops
    vllm = estimate(model="gpt-oss-20b", hw="rtx-5090", quant="mxfp4", engine="vllm", prompt_tokens=2048)
    assert vllm.peak.tflops == pytest.approx(hw.fp4_tflops)


def test_every_engine_on_ggml_block_kernels_says_it_runs_block_fp4_at_the_fp16_rate() -> None:
    """The FP4 block-kernel rule is a catalog property of each engine, not a test of another flag: every engine
    that runs GGUF (llama.cpp and the runtimes built on it) carries `fp4_block_tensor_rate = false`, the
    server engines with FP4 GEMMs keep the default, and the rule reads that property (a llama.cpp-based
    engine told otherwise would run MXFP4 at the FP4 peak)."""
    from dataclasses import replace

    from tokometer.catalog import engine_catalog, quant_catalog
    from tokometer.usecases.resolve import format_peak

    engines = engine_catalog()
    ggml = [e for e in engines if "gguf" in e.weight_formats]
    assert len(ggml) >= 5 and all(not e.fp4_block_tensor_rate for e in ggml), [e.id for e in ggml if e.fp4_block_tensor_rate]
    assert all(engines.get(e).fp4_block_tensor_rate for e in ("vllm", "sglang", "tensorrt-llm"))
    hw, mxfp4 = hardware_catalog().get("rtx-5090"), quant_catalog().get("mxfp4")
    lcpp = engines.get("llama-cpp")
    assert format_peak(hw, mxfp4, lcpp).tflops < format_peak(hw, mxfp4, replace(lcpp, fp4_block_tensor_rate=True)).tflops
