"""Invariants of the cost model, checked over many random setups (Hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tokometer.catalog import model_catalog
from tokometer.costmodel.memory import kv_cache_bytes
from tokometer.usecases.estimate import estimate

MODELS = ["llama-3.1-8b", "qwen3-30b-a3b", "gemma-3-12b", "deepseek-v3", "gpt-oss-20b", "mistral-7b-v0.1"]
# (engine, weight format) pairs the engine runs: an impossible pair is an input error (usecases/formats.py)
ENGINE_QUANTS = (
    [("llama.cpp", q) for q in ("fp16", "q8_0", "q4_k_m", "q4_0")]
    + [("vllm", q) for q in ("fp16", "fp8", "awq", "q4_k_m")]
    + [("mlx", q) for q in ("fp16", "mlx-4bit", "mlx-8bit")]
    + [("transformers", q) for q in ("fp16", "fp8", "bnb-nf4", "gptq")]
)
HARDWARE = ["rtx-4090", "h100-sxm", "m2-ultra-76c", "rtx-3060", "ddr5-dual-channel", "mi300x"]

setups = st.builds(
    lambda pair, rest: {"engine": pair[0], "quant": pair[1], **rest},
    st.sampled_from(ENGINE_QUANTS),
    st.fixed_dictionaries(
        {
            "model": st.sampled_from(MODELS),
            "hw": st.sampled_from(HARDWARE),
            "context_tokens": st.integers(0, 200_000),
            "batch": st.integers(1, 256),
        }
    ),
)


@settings(max_examples=150, deadline=None)
@given(setups)
def test_ceiling_is_never_below_the_estimate(setup: dict) -> None:
    e = estimate(**setup)
    assert e.ceiling_tok_s >= e.estimate_tok_s > 0
    assert e.estimate_interval.low <= e.estimate_tok_s <= e.estimate_interval.high <= e.ceiling_tok_s


@settings(max_examples=100, deadline=None)
@given(setups, st.floats(50, 10_000), st.floats(1.01, 10))
def test_more_bandwidth_is_never_slower(setup: dict, bandwidth: float, factor: float) -> None:
    slow = estimate(**setup, bandwidth_gb_per_s=bandwidth)
    fast = estimate(**setup, bandwidth_gb_per_s=bandwidth * factor)
    # equal, to rounding, once the compute units' bytes in flight set the stream (Little's-law limit)
    assert fast.estimate_tok_s >= slow.estimate_tok_s * (1.0 - 1e-12)
    assert fast.ceiling_tok_s >= slow.ceiling_tok_s


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["llama-3.1-8b", "qwen2.5-7b", "deepseek-v3", "llama-2-7b"]), st.integers(1, 1_000_000), st.integers(2, 8))
def test_kv_bytes_grow_linearly_with_context(name: str, context: int, k: int) -> None:
    spec = model_catalog().get(name).spec
    one = kv_cache_bytes(spec, context, 2.0)
    assert one > 0
    assert kv_cache_bytes(spec, context * k, 2.0) == k * one


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(MODELS), st.integers(1, 100_000), st.integers(1, 100_000), st.integers(1, 64), st.integers(1, 64))
def test_memory_grows_with_context_and_sessions(name: str, c1: int, c2: int, s1: int, s2: int) -> None:
    lo_c, hi_c = sorted((c1, c2))
    lo_s, hi_s = sorted((s1, s2))
    small = estimate(name, "h100-sxm", context_tokens=lo_c, prompt_tokens=lo_c, output_tokens=1, sessions=lo_s)
    big = estimate(name, "h100-sxm", context_tokens=hi_c, prompt_tokens=hi_c, output_tokens=1, sessions=hi_s)
    assert big.memory.total_gb >= small.memory.total_gb
    assert big.memory.kv_cache_gb >= small.memory.kv_cache_gb


def test_sliding_window_layers_stop_growing() -> None:
    spec = model_catalog().get("gemma-3-12b").spec
    short = kv_cache_bytes(spec, 512, 2.0)
    long = kv_cache_bytes(spec, 65_536, 2.0)
    # 8 of 48 layers are global: far less than 128x growth for a 128x longer context
    assert long / short < 128 / 4
