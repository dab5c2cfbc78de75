"""Product policy: the defaults a bare `tokometer estimate` uses, the quant ladder, the engine a setup
gets when none is named, and which formats an engine and device can run.

Choices, not physics: they live apart from the model so that changing one is a visible decision.
"""

from __future__ import annotations

from tokometer.catalog import engine_catalog, quant_catalog
from tokometer.domain.specs import EngineSpec, HardwareSpec, QuantFormat
from tokometer.usecases.formats import engine_support

DEFAULT_MODEL = "llama-3.1-8b"
DEFAULT_HARDWARE = "rtx-4090"
DEFAULT_QUANT = "q4-k-m"  # what llama.cpp-family engines run when no format is named (see `default_quant`)
DEFAULT_CPU_HARDWARE = "ddr5-dual-channel"  # dual-channel DDR5-5600 desktop, 89.6 GB/s
DEFAULT_ACCEPTANCE = 0.7
DEFAULT_DRAFT_TOKENS = 4
# `tokometer fit` and the "drop a quant step" advice walk this ladder, best quality first
QUANT_LADDER = ("bf16", "fp8", "q8-0", "q6-k", "q5-k-m", "q4-k-m", "q3-k-m", "q2-k")
# "drop a quant step" walks this one, keeping the steps the engine runs: QUANT_LADDER's GGUF steps in
# their order, with each other engine's formats at their place by bits per weight
ADVICE_LADDER = (
    "bf16", "fp8", "q8-0", "mlx-8bit", "int8", "q6-k", "q5-k-m", "int4-g32", "q4-k-m", "mlc-q4f16-1",
    "mlx-4bit", "awq-int4", "exl2-4bpw", "q3-k-m", "q2-k",
)
# when the hardware's usual engine cannot run the format asked for, the first of these that can
ENGINE_PREFERENCE = (
    "llama-cpp", "vllm", "sglang", "tensorrt-llm", "mlx", "exllamav2", "mlc-llm", "gpt-fast", "transformers",
)


# A bare family name means its most common variant, and the estimate names the others (`resolve.variant_note`).
# Keyed by the catalog entry the name finds: these are the catch-all entries kept for calibration sources that
# do not say which variant they ran, never what a user who types the family name gets.
FAMILY_VARIANTS = {
    "m2-ultra": "m2-ultra-60c",  # the base Mac Studio (64 GB, 60-core GPU), the configuration most sold
    "a100": "a100-80gb-sxm",  # what clouds rent most (as H100 means the SXM5 card)
}


# macOS's default GPU working set (Metal's recommendedMaxWorkingSetSize) on Apple silicon: about 2/3 of
# RAM up to 36 GB, 3/4 above. Sources: 128 GB -> ~96 GB, 64 -> ~48, 32 -> ~21-24 (https://stencel.io/posts/
# apple-silicon-limitations-with-usage-on-local-llm%20.html); "~65-70 % up to 36 GB, ~75 % above" (https://www.
# thinkdifferent.blog/blog/the-macbook-pro-setting-that-doubles-your-ai-performance/); 75 % as GPUStack reads it
# (https://github.com/gpustack/gpustack/issues/1375); an 8 GB Mac ~5.3 GB (https://github.com/SceneWorks/
# SceneWorks/pull/1552). macOS 26 on a 128 GiB M5 Max measured 107.5 GiB (https://github.com/antirez/ds4/pull/893):
# newer systems may give more, hence the override (--memory-gb).
APPLE_WORKING_SET_SMALL = 2.0 / 3.0
APPLE_WORKING_SET_LARGE = 0.75
APPLE_WORKING_SET_SPLIT_GB = 36.0


def gpu_memory_gb(hardware: HardwareSpec) -> float:
    """The memory the device's GPU may use: a user-given limit; on Apple GPUs macOS's default working set
    (2/3 of RAM up to 36 GB, 3/4 above, sources above); else all of it."""
    if hardware.gpu_memory_limit_gb is not None:
        return hardware.gpu_memory_limit_gb
    if hardware.vendor == "apple" and hardware.kind != "cpu":
        share = APPLE_WORKING_SET_SMALL if hardware.memory_gb <= APPLE_WORKING_SET_SPLIT_GB else APPLE_WORKING_SET_LARGE
        return hardware.memory_gb * share
    return hardware.memory_gb


def quant_runs(quant: QuantFormat, hardware: HardwareSpec, engine: EngineSpec) -> bool:
    """Whether `tokometer fit`, the quant advice and the default engine offer this pair: the engine
    lists the format (`usecases/formats.py`, not experimentally), and FP8 needs hardware FP8."""
    if engine_support(engine, quant) != "yes":
        return False
    if quant.id == "fp8":
        return hardware.fp8_tflops is not None
    return True


DEFAULT_PRECISION_RULE = (
    "Without --quant/--bits/--weights-gb: a model file counts its own bytes; otherwise the hardware picks the "
    "engine (llama.cpp on consumer GPUs, Apple and CPUs; vLLM on datacenter GPUs) and the engine the format: "
    "Q4_K_M under llama.cpp-family engines (or the model's own format when it is published at 4 bits, like "
    "gpt-oss in MXFP4), the model's published dtype (BF16) under the others."
)


def runs_gguf(engine: EngineSpec) -> bool:
    """llama.cpp and the engines built on it (Ollama, LM Studio) run GGUF files."""
    return (engine.based_on or engine.id) == "llama-cpp"


def default_quant(engine: EngineSpec, model_default: str | None) -> str:
    """The one default precision rule (`DEFAULT_PRECISION_RULE`): GGUF engines get Q4_K_M, the people's
    download, unless the model is published in a format at least as small that the engine runs as it is
    (gpt-oss in MXFP4); the others the model's published dtype (BF16 unless the model says otherwise)."""
    if not runs_gguf(engine):
        return model_default or "bf16"
    published = quant_catalog().find(model_default) if model_default else None
    q4 = quant_catalog().get(DEFAULT_QUANT)
    if published is not None and published.bits_per_weight <= q4.bits_per_weight and engine_support(engine, published) == "yes":
        return published.id
    return DEFAULT_QUANT


def engine_for_hardware(hardware: HardwareSpec) -> EngineSpec:
    """The hardware's usual engine, before any format is chosen: vLLM on datacenter GPUs, else llama.cpp."""
    consumer = hardware.vendor == "apple" or hardware.kind in ("cpu", "apu") or hardware.segment != "datacenter"
    return engine_catalog().get("llama-cpp" if consumer else "vllm")


def _usual_engine(hardware: HardwareSpec, quant: QuantFormat | None) -> EngineSpec:
    """The hardware's usual engine for a format: llama.cpp on Apple, CPUs, APUs, laptops and consumer
    GPUs, and for ggml formats (or a model file's own bytes, `quant` None) anywhere; vLLM for other
    formats on datacenter GPUs."""
    engines = engine_catalog()
    # plain floats (fp16, bf16) run everywhere: on a datacenter GPU they go to vLLM, as when no format is named
    ggml = quant is None or quant.kind in ("block", "mix") or (quant.ggml_type is not None and quant.kind != "plain")
    if hardware.vendor == "apple" or hardware.kind in ("cpu", "apu") or hardware.segment == "laptop":
        return engines.get("llama-cpp")
    if hardware.segment == "datacenter" and not ggml:
        return engines.get("vllm")
    return engines.get("llama-cpp")


def default_engine(hardware: HardwareSpec, quant: QuantFormat | None) -> EngineSpec:
    """The engine a setup gets when none is named: the hardware's usual engine (`_usual_engine`) when it
    runs `quant`, else the first engine of `ENGINE_PREFERENCE` with the hardware's backend that does;
    the usual one when none does (the caller then picks a format)."""
    usual = _usual_engine(hardware, quant)
    if quant is None or quant_runs(quant, hardware, usual):
        return usual
    for engine_id in ENGINE_PREFERENCE:
        engine = engine_catalog().find(engine_id)
        if engine is not None and hardware.backend in engine.backends and quant_runs(quant, hardware, engine):
            return engine
    return usual
