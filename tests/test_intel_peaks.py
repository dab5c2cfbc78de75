"""Intel Arc compute peaks: the vector (FP32 shader) rate beside the XMX matrix rate, and the
single-stream matvec arithmetic charged at the vector rate (docs/PHYSICS.md section 5)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tokometer.catalog import hardware_catalog
from tokometer.costmodel.roofline import alu_peak_tflops
from tokometer.usecases.estimate import estimate

ARC = ("arc-a750", "arc-a770-8gb", "arc-a770-16gb", "arc-b570", "arc-b580", "arc-pro-b70")


@pytest.mark.parametrize("hw_id", ARC)
def test_arc_vector_rate_is_an_eighth_of_its_xmx_rate(hw_id: str) -> None:
    """Xe-HPG (16 x 256-bit vector engines) and Xe2 (8 x 512-bit) both do 256 FP32 FLOPs per clock per
    core against 2048 FP16 XMX ops: at one clock the two peaks are 8x apart."""
    hw = hardware_catalog().get(hw_id)
    assert hw.fp32_tflops and hw.fp16_tflops
    assert hw.fp16_tflops / hw.fp32_tflops == pytest.approx(8.0, rel=0.01)
    assert hw.fp32_tflops == pytest.approx(hw.compute_units * 256 * (hw.fp16_tflops / (hw.compute_units * 2048)), rel=0.01)


def test_arc_matvec_arithmetic_runs_at_the_vector_rate_not_xmx() -> None:
    """Single-stream decode dequantizes and multiplies on the vector engines (the matrix engines idle at
    batch 1), so `k_alu`'s rate on an Arc card is its FP32 vector peak, not the 8x higher XMX figure it
    was charged at before the catalog gave Arc entries a vector rate."""
    for hw_id in ARC:
        hw = hardware_catalog().get(hw_id)
        assert alu_peak_tflops(hw) == hw.fp32_tflops
        assert alu_peak_tflops(hw) < hw.fp16_tflops / 4
    shipped = estimate("llama-3.1-8b", "arc-a770-16gb", quant="q4_k_m").efficiency
    k_alu = 8.0  # ops per weight; the shipped fit may read 0 for this entry, so the term is set here
    est = estimate("llama-3.1-8b", "arc-a770-16gb", quant="q4_k_m", efficiency=replace(shipped, decode_alu_flops_per_weight=k_alu))
    assert est.step.alu_time_s > 0
    assert est.step.alu_time_s == pytest.approx(k_alu * est.model.matmul_params_per_token() / (17.2e12))
