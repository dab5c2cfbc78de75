"""Prefill that follows prompt length: quadratic attention, unfused score traffic, pipeline overlap,
derived-peak bands, and the accuracy it reaches on the calibration rows held out by device."""

from __future__ import annotations

import csv
import math
import statistics
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokometer.calibration_data import MEASUREMENTS_CSV
from tokometer.catalog import hardware_catalog, model_catalog
from tokometer.costmodel.layout import pipeline_prefill_factor
from tokometer.costmodel.roofline import (
    DERIVED_PEAK_LOG_SD,
    Peak,
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
    base = estimate(model="llama-3.1-8b", hw="rtx-4090", quant="q4_k_m", engine="llama.cpp", prompt_tokens=8192)
    assert base.prefill and base.prefill.score_bytes > 0 and base.prefill.score_time_s > 0
    fused_eff = replace(base.efficiency, attention_score_bytes=0.0)
    fused = estimate(model="llama-3.1-8b", hw="rtx-4090", quant="q4_k_m", engine="llama.cpp", prompt_tokens=8192, efficiency=fused_eff)
    assert fused.prefill and fused.prefill.score_bytes == 0
    assert fused.prefill.time_s == pytest.approx(base.prefill.time_s - base.prefill.score_time_s, rel=1e-9)


@pytest.mark.parametrize(
    ("chunks", "stages", "expected"),
    [(1, 4, 1.0), (2, 4, 5 / 8), (8, 4, 7 / 16), (16, 2, 5 / 8), (8, 1, 1.0)],
)
def test_pipeline_overlaps_the_chunks_in_flight(chunks: int, stages: int, expected: float) -> None:
    # llama.cpp: 2048-token batches of 512-token ubatches, so at most 4 chunks in flight
    assert pipeline_prefill_factor(chunks, 512, 2048, stages) == pytest.approx(expected)


def test_several_gpus_prefill_a_long_prompt_faster_and_a_short_one_not() -> None:
    def tok_s(prompt: int, pp: int) -> float:
        e = estimate(model="llama-3.1-8b", hw="rtx-4090", quant="fp16", engine="llama.cpp", prompt_tokens=prompt, pp=pp)
        assert e.prefill
        return e.prefill.tok_s

    assert tok_s(512, 4) <= tok_s(512, 1)
    assert 1.8 < tok_s(4096, 4) / tok_s(4096, 1) < 16 / 7


def test_a_derived_peak_gets_a_wider_prefill_band() -> None:
    eff = estimate(model="llama-3.1-8b", hw="rtx-4090").efficiency
    datasheet = prefill_log_sd(eff, Peak(100.0, "fp16"))
    derived = prefill_log_sd(eff, Peak(100.0, "fp16", "derived", derived=True))
    assert datasheet == eff.prefill_residual_log_sd
    assert derived == pytest.approx(math.hypot(datasheet, DERIVED_PEAK_LOG_SD))
    apple = next(hw for hw in hardware_catalog() if hw.compute_peak_derived)
    assert estimate(model="llama-3.1-8b", hw=apple.id).peak.derived


def test_a_12k_token_paste_on_a_4090_takes_seconds() -> None:
    """A 12k-token prompt of an 8B Q4 model on an RTX 4090 with llama.cpp: about 3-5 s before the first token."""
    e = estimate(model="llama-3.1-8b", hw="rtx-4090", quant="q4_k_m", engine="llama.cpp", prompt_tokens=12_000)
    assert e.prefill and 3.0 <= e.prefill.time_s <= 5.0


def test_prefill_held_out_by_device_meets_its_targets() -> None:
    """Leave-one-hardware-out on the shipped pp rows: median error <= 15 %, and no prompt-length
    bucket biased beyond +-15 % (long prompts used to come out far too fast)."""
    from tokometer.usecases.calibration import leave_one_hardware_out
    from tokometer.usecases.validation import read_cases

    cases = read_cases(MEASUREMENTS_CSV)
    results = leave_one_hardware_out(cases, only=[c for c in cases if c.metric == "pp" and c.n_devices == 1])
    scored = [r for r in results if r.scored and r.predicted]
    assert len(scored) >= 150
    assert statistics.median(r.ape for r in scored if r.ape is not None) <= 0.15
    with MEASUREMENTS_CSV.open(encoding="utf-8") as handle:
        lengths = {row["row_id"]: int(row["prompt_tokens"]) for row in csv.DictReader(handle)}
    for length in (512, 1024, 4096, 8192):
        bucket = [r for r in scored if lengths[r.case.row_id] == length]
        bias = statistics.median((r.predicted - r.case.value) / r.case.value for r in bucket if r.predicted)
        assert abs(bias) <= 0.15, (length, bias)
