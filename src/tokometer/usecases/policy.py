"""Product policy: the defaults a bare `tokometer estimate` uses, the quant ladder, the engine a setup
gets when none is named, and which formats an engine and device can run.

Choices, not physics: they live apart from the model so that changing one is a visible decision.
"""

from __future__ import annotations

from tokometer.catalog import engine_catalog
from tokometer.specs import EngineSpec, HardwareSpec, QuantFormat

DEFAULT_MODEL = "llama-3.1-8b"
DEFAULT_HARDWARE = "rtx-4090"
DEFAULT_QUANT = "q4-k-m"
DEFAULT_CPU_HARDWARE = "ddr5-dual-channel"  # dual-channel DDR5-5600 desktop, 89.6 GB/s
DEFAULT_ACCEPTANCE = 0.7
DEFAULT_DRAFT_TOKENS = 4
# `tokometer fit` and the "drop a quant step" advice walk this ladder, best quality first
QUANT_LADDER = ("bf16", "fp8", "q8-0", "q6-k", "q5-k-m", "q4-k-m", "q3-k-m", "q2-k")


def quant_runs(quant: QuantFormat, hardware: HardwareSpec, engine: EngineSpec) -> bool:
    """Whether `tokometer fit` and the quant advice offer this format: FP8 needs hardware FP8 and an
    engine with FP8 kernels (llama.cpp has no FP8 weight type)."""
    if quant.id == "fp8":
        return hardware.fp8_tflops is not None and (engine.based_on or engine.id) != "llama-cpp"
    return True


def default_engine(hardware: HardwareSpec, quant: QuantFormat | None) -> EngineSpec:
    engines = engine_catalog()
    ggml = quant is None or quant.kind in ("block", "mix") or quant.ggml_type is not None
    if hardware.vendor == "apple" or hardware.kind in ("cpu", "apu") or hardware.segment == "laptop":
        return engines.get("llama-cpp")
    if hardware.segment == "datacenter" and not ggml:
        return engines.get("vllm")
    return engines.get("llama-cpp")
