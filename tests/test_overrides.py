"""Every hardware number a user gives takes effect (issue #14, item 6): with or without `--hw`, memory,
bandwidth and TFLOPS reach the memory plan and the prefill peak."""

from __future__ import annotations

import pytest

from tokometer.catalog import hardware_catalog
from tokometer.usecases.estimate import estimate
from tokometer.usecases.policy import DEFAULT_HARDWARE


def test_memory_and_tflops_without_hw_override_the_default_device() -> None:
    base = estimate()
    e = estimate(memory_gb=16, tflops=100)
    assert e.hardware.id == DEFAULT_HARDWARE and "custom numbers" in e.hardware.name
    assert e.memory.device_memory_gb == 16 and e.memory.available_gb < base.memory.available_gb
    assert e.peak.tflops == 100 and base.peak.tflops != 100
    assert e.prefill is not None and base.prefill is not None and e.prefill.tok_s < base.prefill.tok_s


def test_tflops_wins_over_the_fp16_accumulate_figure() -> None:
    card = hardware_catalog().get("rtx-4090")
    assert card.fp16_acc16_tflops and card.fp16_acc16_tflops != 100  # the figure that used to win
    e = estimate("llama-3.1-8b", "rtx-4090", engine="llama.cpp", tflops=100)
    assert e.peak.tflops == 100 and e.peak.dtype == "fp16"


def test_narrower_peaks_keep_their_ratio_to_the_given_fp16_peak() -> None:
    card = hardware_catalog().get("h100-sxm")
    assert card.fp8_tflops and card.fp16_tflops
    e = estimate("llama-3.1-8b", "h100-sxm", quant="fp8", tflops=card.fp16_tflops / 2)
    assert e.peak.dtype == "fp8" and e.peak.tflops == pytest.approx(card.fp8_tflops / 2)


def test_bandwidth_alone_is_a_custom_device_and_with_hw_an_override() -> None:
    assert estimate(bandwidth_gb_per_s=500).hardware.id == "custom"
    e = estimate("llama-3.1-8b", "rtx-4090", bandwidth_gb_per_s=500)
    assert e.hardware.id == "rtx-4090" and e.hardware.memory_bandwidth_gb_per_s == 500
