"""GEMMs without a matrix-engine path run at the vector rate (docs/PHYSICS.md section 5, issue 25): BF16
weights under llama.cpp on an Intel GPU, and every GEMM of a SYCL build without GGML_SYCL_F16 (a reading of
the row's source, RESOLVE.toml `[[fp32_gemm_build]]`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokometer.catalog import engine_catalog, hardware_catalog, quant_catalog
from tokometer.errors import CatalogError
from tokometer.fitting.aliases import fp32_gemm_build_for, resolve_table
from tokometer.fitting.evidence import read_evidence
from tokometer.fitting.validation import case_request
from tokometer.usecases.estimate import estimate
from tokometer.usecases.resolve import format_peak, without_matrix_engines


def test_bf16_under_llama_cpp_on_an_arc_card_runs_at_the_vector_rate() -> None:
    b70 = hardware_catalog().get("arc-pro-b70")
    bf16, q8 = quant_catalog().get("bf16"), quant_catalog().get("q8_0")
    llama = engine_catalog().get("llama-cpp")
    assert format_peak(b70, bf16, llama).tflops == b70.fp32_tflops
    assert format_peak(b70, q8, llama).tflops == b70.fp16_tflops  # block formats keep the XMX path
    # the same BF16 file on an NVIDIA card, or under vLLM on the Arc card, keeps its matrix peak
    assert format_peak(b70, bf16, engine_catalog().get("vllm")).tflops == b70.fp16_tflops
    rtx = hardware_catalog().get("rtx-4090")
    assert format_peak(rtx, bf16, llama).tflops not in (None, rtx.fp32_tflops)


def test_bf16_prefill_on_the_b70_is_slower_than_q8_0_as_measured() -> None:
    """KYUZ0-B70: Qwen3.5 9B prefills 911 tok/s in BF16 against 2522 in Q8_0 under SYCL (2.8x)."""
    bf16 = estimate("llama-3.1-8b", "arc-pro-b70", quant="bf16", prompt_tokens=512).prefill
    q8 = estimate("llama-3.1-8b", "arc-pro-b70", quant="q8_0", prompt_tokens=512).prefill
    assert bf16 is not None and q8 is not None
    assert q8.tok_s > 2.0 * bf16.tok_s


def test_a_build_without_matrix_engines_sees_every_peak_at_the_vector_rate() -> None:
    a770 = hardware_catalog().get("arc-a770-16gb")
    plain = without_matrix_engines(a770)
    q4 = quant_catalog().get("q4_0")
    llama = engine_catalog().get("llama-cpp")
    assert format_peak(plain, q4, llama).tflops == a770.fp32_tflops
    assert format_peak(a770, q4, llama).tflops == a770.fp16_tflops
    assert plain.memory_bandwidth_gb_per_s == a770.memory_bandwidth_gb_per_s
    assert plain.id == a770.id  # the same device, its group and fit unchanged


def test_quantized_weights_in_a_vector_gemm_take_the_plain_kernels_efficiency() -> None:
    """Dequantized to FP32 and multiplied by a plain FP32 GEMM: eta_max is the plain weights'."""
    from dataclasses import replace

    a770 = hardware_catalog().get("arc-a770-16gb")
    shipped = estimate("llama-2-7b", a770, quant="q4_0", prompt_tokens=512).efficiency
    eff = replace(shipped, prefill_efficiency_max=0.7, quantized_prefill_efficiency_max=0.2, prefill_half_tokens=50.0)
    vector = estimate("llama-2-7b", without_matrix_engines(a770), quant="q4_0", prompt_tokens=512, efficiency=eff).prefill
    xmx = estimate("llama-2-7b", a770, quant="q4_0", prompt_tokens=512, efficiency=eff).prefill
    assert vector is not None and xmx is not None
    assert vector.efficiency == pytest.approx(0.7 * 512 / (512 + 50.0), rel=0.02)
    assert xmx.efficiency == pytest.approx(0.2 * 512 / (512 + 50.0), rel=0.02)


def test_neoz_sycl_ci_rows_are_predicted_at_the_a770_vector_rate() -> None:
    rows = [c for c in read_evidence() if c.text("source_id") == "NEOZ-SYCLCI" and c.metric == "pp"]
    a770_rows = [c for c in rows if c.text("hardware_id") == "arc-a770-16gb"]
    assert a770_rows
    case = a770_rows[0]
    assert fp32_gemm_build_for(case) is not None
    a770 = hardware_catalog().get("arc-a770-16gb")
    request = case_request(case, a770)
    assert isinstance(request.hw, type(a770))
    assert not request.hw.matrix_gemm
    est = estimate(request)
    assert est.peak.tflops == pytest.approx(17.2)
    # the measured 917 tok/s is 12.3 TFLOPS: under the vector rate, where the XMX rate would put it at 9 %
    flops_per_token = 2 * est.model.matmul_params_per_token()
    assert case.value * flops_per_token / 1e12 < 17.2


def test_other_sources_keep_the_matrix_engines() -> None:
    other = next(c for c in read_evidence() if c.text("source_id") == "KYUZ0-B70" and c.metric == "pp")
    assert fp32_gemm_build_for(other) is None
    b70 = hardware_catalog().get("arc-pro-b70")
    assert case_request(other, b70).hw is b70


def test_an_fp32_gemm_entry_needs_its_source_and_reason(tmp_path: Path) -> None:
    bad = tmp_path / "RESOLVE.toml"
    bad.write_text('[[fp32_gemm_build]]\nsource = "X"\n', encoding="utf-8")
    with pytest.raises(CatalogError, match="fp32_gemm_build"):
        resolve_table(bad)
