"""Product policy: the defaults a bare `tokometer estimate` uses, the quant ladder, the engine a setup
gets when none is named, and which formats an engine and device can run.

Choices, not physics: they live apart from the model so that changing one is a visible decision.
"""

from __future__ import annotations

from tokometer.catalog import engine_catalog
from tokometer.specs import EngineSpec, HardwareSpec, QuantFormat
from tokometer.usecases.formats import engine_support

DEFAULT_MODEL = "llama-3.1-8b"
DEFAULT_HARDWARE = "rtx-4090"
DEFAULT_QUANT = "q4-k-m"
DEFAULT_CPU_HARDWARE = "ddr5-dual-channel"  # dual-channel DDR5-5600 desktop, 89.6 GB/s
DEFAULT_ACCEPTANCE = 0.7
DEFAULT_DRAFT_TOKENS = 4
# `tokometer fit` and the "drop a quant step" advice walk this ladder, best quality first
QUANT_LADDER = ("bf16", "fp8", "q8-0", "q6-k", "q5-k-m", "q4-k-m", "q3-k-m", "q2-k-file")
# "drop a quant step" walks this one, keeping the steps the engine runs: QUANT_LADDER's GGUF steps in
# their order, with each other engine's formats at their place by bits per weight
ADVICE_LADDER = (
    "bf16", "fp8", "q8-0", "mlx-8bit", "int8", "q6-k", "q5-k-m", "int4-g32", "q4-k-m", "mlc-q4f16-1",
    "mlx-4bit", "awq-int4", "exl2-4bpw", "q3-k-m", "q2-k-file",
)
# when the hardware's usual engine cannot run the format asked for, the first of these that can
ENGINE_PREFERENCE = (
    "llama-cpp", "vllm", "sglang", "tensorrt-llm", "mlx", "exllamav2", "mlc-llm", "gpt-fast", "transformers",
)


def quant_runs(quant: QuantFormat, hardware: HardwareSpec, engine: EngineSpec) -> bool:
    """Whether `tokometer fit`, the quant advice and the default engine offer this pair: the engine
    lists the format (`usecases/formats.py`, not experimentally), and FP8 needs hardware FP8."""
    if engine_support(engine, quant) != "yes":
        return False
    if quant.id == "fp8":
        return hardware.fp8_tflops is not None
    return True


def _usual_engine(hardware: HardwareSpec, quant: QuantFormat | None) -> EngineSpec:
    engines = engine_catalog()
    ggml = quant is None or quant.kind in ("block", "mix") or quant.ggml_type is not None
    if hardware.vendor == "apple" or hardware.kind in ("cpu", "apu") or hardware.segment == "laptop":
        return engines.get("llama-cpp")
    if hardware.segment == "datacenter" and not ggml:
        return engines.get("vllm")
    return engines.get("llama-cpp")


def default_engine(hardware: HardwareSpec, quant: QuantFormat | None) -> EngineSpec:
    """The hardware's usual engine (llama.cpp on desktops, laptops and Macs; vLLM for non-GGUF formats
    in a datacenter) when it runs `quant`, else the first engine of `ENGINE_PREFERENCE` with the
    hardware's backend that does; the usual one when none does (the caller then picks a format)."""
    usual = _usual_engine(hardware, quant)
    if quant is None or quant_runs(quant, hardware, usual):
        return usual
    for engine_id in ENGINE_PREFERENCE:
        engine = engine_catalog().find(engine_id)
        if engine is not None and hardware.backend in engine.backends and quant_runs(quant, hardware, engine):
            return engine
    return usual
