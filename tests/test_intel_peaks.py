"""Intel Arc compute peaks: the vector (FP32 shader) rate beside the XMX matrix rate, and BF16 under
llama.cpp held to the vector rate (no BF16 XMX path in its SYCL or Vulkan kernels; docs/PHYSICS.md section 5)."""

from __future__ import annotations

import pytest

from tokometer.catalog import engine_catalog, hardware_catalog, quant_catalog
from tokometer.usecases.estimate import estimate
from tokometer.usecases.resolve import bf16_on_vector_alus, format_peak

ARC = ("arc-a750", "arc-a770-8gb", "arc-a770-16gb", "arc-b570", "arc-b580", "arc-pro-b70")


@pytest.mark.parametrize("hw_id", ARC)
def test_arc_vector_rate_is_an_eighth_of_its_xmx_rate(hw_id: str) -> None:
    """Xe-HPG (16 x 256-bit vector engines) and Xe2 (8 x 512-bit) both do 256 FP32 FLOPs per clock per
    core against 2048 FP16 XMX ops: at one clock the two peaks are 8x apart."""
    hw = hardware_catalog().get(hw_id)
    assert hw.fp32_tflops and hw.fp16_tflops
    assert hw.fp16_tflops / hw.fp32_tflops == pytest.approx(8.0, rel=0.01)
    assert hw.fp32_tflops == pytest.approx(hw.compute_units * 256 * (hw.fp16_tflops / (hw.compute_units * 2048)), rel=0.01)


def test_bf16_under_llama_cpp_on_arc_runs_at_the_vector_rate() -> None:
    b70 = hardware_catalog().get("arc-pro-b70")
    bf16, q4 = quant_catalog().get("bf16"), quant_catalog().get("q4_k_m")
    llama, server, vllm = (engine_catalog().get(e) for e in ("llama-cpp", "llama-server", "vllm"))
    assert format_peak(b70, bf16, llama).tflops == b70.fp32_tflops
    assert format_peak(b70, bf16, server).tflops == b70.fp32_tflops  # same kernels
    assert format_peak(b70, q4, llama).tflops == b70.fp16_tflops  # quantized: dequantized to fp16, XMX GEMM
    assert format_peak(b70, bf16, vllm).tflops == b70.fp16_tflops  # vLLM's XPU kernels have a BF16 XMX GEMM
    rtx = hardware_catalog().get("rtx-4090")
    assert not bf16_on_vector_alus(rtx, bf16, llama)


def test_bf16_prefill_on_b70_reads_the_vector_rate_not_xmx() -> None:
    """A BF16 prompt on a B70 is predicted several times slower than the same model's Q8_0 (which
    llama.cpp multiplies on XMX): measured 911 against 2522 tok/s at pp512 for Qwen3.5 9B (KYUZ0-B70)."""
    kw = dict(engine="llama-cpp", prompt_tokens=512, output_tokens=1)
    bf16 = estimate("qwen3-8b", "arc-pro-b70", quant="bf16", **kw)
    q8 = estimate("qwen3-8b", "arc-pro-b70", quant="q8_0", **kw)
    assert bf16.prefill is not None and q8.prefill is not None
    assert bf16.peak.dtype == "fp32-vector"
    assert q8.prefill.tok_s > 2.0 * bf16.prefill.tok_s
