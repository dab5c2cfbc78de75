"""Models as they are: hybrid layouts, per-sequence recurrent state, Gemma 4 global layers, quantized configs."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tokometer.catalog import model_catalog, quant_catalog
from tokometer.costmodel.memory import kv_bytes_per_token, kv_cache_bytes, weight_bytes
from tokometer.domain.units import GB
from tokometer.errors import IngestError
from tokometer.ingest.architecture import spec_from_config
from tokometer.ingest.hf_config import default_quant, spec_from_hf
from tokometer.usecases.estimate import estimate


def preset_config(name: str) -> dict[str, Any]:
    return copy.deepcopy(model_catalog().get(name).config)


def test_qwen3_next_stores_kv_on_every_fourth_layer_without_layer_types() -> None:
    cfg = preset_config("qwen3-next-80b-a3b")
    assert "layer_types" not in cfg
    spec = spec_from_config(cfg, "q3n")
    kinds = {g.kind: g.n_layers for g in spec.attention}
    assert kinds == {"full": 12, "linear": 36}
    # 12 layers x 2 (K, V) x 2 KV heads x 256 x 2 bytes
    assert kv_bytes_per_token(spec, 2.0) == 12 * 2 * 2 * 256 * 2
    as_if_all_full = spec_from_config({**cfg, "model_type": "qwen3_moe"}, "q3n-as-qwen3-moe")
    assert kv_bytes_per_token(as_if_all_full, 2.0) == 4 * kv_bytes_per_token(spec, 2.0)
    assert 78e9 < spec.total_params < 82e9


def test_explicit_layer_types_give_the_same_layout_as_the_default() -> None:
    cfg = preset_config("qwen3-next-80b-a3b")
    explicit = {**cfg, "layer_types": ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(48)]}
    assert spec_from_config(explicit, "a").attention == spec_from_config(cfg, "b").attention
    shifted = {**cfg, "layer_types": ["full_attention"] * 24 + ["linear_attention"] * 24}
    assert kv_bytes_per_token(spec_from_config(shifted, "c"), 2.0) == 2 * kv_bytes_per_token(spec_from_config(cfg, "b"), 2.0)


def test_recurrent_state_is_a_per_sequence_constant_counted_and_read() -> None:
    spec = model_catalog().get("qwen3-next-80b-a3b").spec
    state_bytes = kv_cache_bytes(spec, 0, 2.0)
    # 36 Gated DeltaNet layers: 32 x 128 x 128 recurrent state + 3 x 8192 conv inputs each
    assert state_bytes == 36 * (32 * 128 * 128 + 3 * (2 * 16 * 128 + 32 * 128)) * 2.0
    per_token = kv_bytes_per_token(spec, 2.0)
    for context in (1_000, 100_000):
        assert kv_cache_bytes(spec, context, 2.0) == pytest.approx(state_bytes + context * per_token)
    short = estimate("qwen3-next-80b-a3b", "h100-sxm", quant="bf16", prompt_tokens=1, output_tokens=1, context_tokens=1)
    assert short.memory.kv_cache_gb * GB >= state_bytes


def test_jamba_is_about_52b_with_four_attention_layers() -> None:
    spec = model_catalog().get("jamba-v0.1").spec
    assert spec.total_params == pytest.approx(52e9, rel=0.02)
    assert spec.active_params() == pytest.approx(12e9, rel=0.05)
    assert {g.kind: g.n_layers for g in spec.attention} == {"full": 4, "linear": 28}
    assert kv_bytes_per_token(spec, 2.0) == 4 * 2 * 8 * 128 * 2


def test_nemotron_h_pattern_drives_the_layers() -> None:
    spec = model_catalog().get("nemotron-3-nano-30b-a3b").spec
    assert {g.kind: g.n_layers for g in spec.attention} == {"full": 6, "linear": 23}
    assert spec.n_experts == 128 and spec.n_experts_per_token == 6
    assert 29e9 < spec.total_params < 33e9
    assert 2.5e9 < spec.active_params() < 4e9
    cfg = preset_config("nemotron-3-nano-30b-a3b")
    with pytest.raises(IngestError, match="hybrid_override_pattern"):
        spec_from_config({**cfg, "hybrid_override_pattern": "M*"}, "bad")
    with pytest.raises(IngestError, match="unknown layer kind"):
        spec_from_config({**cfg, "hybrid_override_pattern": "X" * 52}, "bad")


def test_pure_mamba2_keeps_a_constant_state_and_no_context_limit() -> None:
    cfg = {"model_type": "mamba2", "hidden_size": 2560, "num_hidden_layers": 64, "num_heads": 80, "head_dim": 64,
           "state_size": 128, "n_groups": 1, "conv_kernel": 4, "expand": 2, "vocab_size": 50288}
    spec = spec_from_config(cfg, "mamba2-2.7b")
    assert all(g.kind == "linear" for g in spec.attention)
    assert kv_bytes_per_token(spec, 2.0) == 0
    assert kv_cache_bytes(spec, 10, 2.0) == kv_cache_bytes(spec, 1_000_000, 2.0) > 0
    assert 2.5e9 < spec.total_params < 2.9e9  # Mamba-2 2.7B


def test_falcon_h1_runs_attention_and_mamba_in_every_layer() -> None:
    cfg = {"model_type": "falcon_h1", "hidden_size": 1024, "num_hidden_layers": 36, "num_attention_heads": 8,
           "num_key_value_heads": 2, "head_dim": 64, "intermediate_size": 2048, "mamba_d_conv": 4, "mamba_d_head": 64,
           "mamba_d_ssm": 1536, "mamba_d_state": 128, "mamba_n_groups": 1, "mamba_n_heads": 24, "vocab_size": 32784}
    spec = spec_from_config(cfg, "falcon-h1-0.5b")
    assert {g.kind: g.n_layers for g in spec.attention} == {"full": 36, "linear": 36}
    assert 0.4e9 < spec.total_params < 0.6e9


def test_gemma4_12b_global_layers_store_one_wide_kv_head() -> None:
    spec = model_catalog().get("gemma-4-12b").spec
    groups = {g.kind: g for g in spec.attention}
    assert groups["full"].n_layers == 8 and groups["full"].kv_elements_per_token == 2 * 512
    assert groups["sliding"].n_layers == 40 and groups["sliding"].window_tokens == 1024
    assert spec.total_params == pytest.approx(11.91e9, rel=0.005)


def test_seed_004_gemma4_12b_nvfp4_on_rtx_5060_ti_under_vllm() -> None:
    # seed 004: 7.6 (GiB) of NVFP4 weights, ~254k tokens of KV cache, 45 tok/s measured
    e = estimate("gemma-4-12b", "rtx-5060-ti-16gb", quant="nvfp4", engine="vllm", prompt_tokens=64, output_tokens=256)
    assert e.weights.total / 2**30 == pytest.approx(7.6, rel=0.03)
    assert e.memory.max_context_memory_tokens == pytest.approx(254_000, rel=0.10)
    assert e.estimate_tok_s == pytest.approx(45, rel=0.15)
    assert e.estimate_tok_s < e.ceiling_tok_s


def test_nvfp4_keeps_embeddings_in_bf16_but_ggml_style_bits_still_apply_to_layers() -> None:
    spec = model_catalog().get("gemma-4-12b").spec
    fmt = quant_catalog().get("nvfp4")
    kept = weight_bytes(spec, fmt.bits_per_weight, fmt.unquantized)
    assert kept.embedding == spec.params.embedding * 2
    assert kept.dense == pytest.approx(spec.params.dense * 4.5 / 8)
    everything = weight_bytes(spec, fmt.bits_per_weight)
    assert kept.total - everything.total == pytest.approx(spec.params.embedding * (2 - 4.5 / 8))


NVFP4_QUANT = {
    "quant_method": "compressed-tensors",
    "format": "nvfp4-pack-quantized",
    "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "float", "group_size": 16}}},
    "ignore": ["lm_head"],
}


@pytest.mark.parametrize(
    ("quantization", "expected"),
    [
        (NVFP4_QUANT, "nvfp4"),
        ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "nvfp4"),
        ({"quant_method": "modelopt", "quant_algo": "FP8"}, "fp8"),
        ({"quant_method": "compressed-tensors", "format": "float-quantized"}, "fp8"),
        ({"quant_method": "compressed-tensors", "format": "pack-quantized",
          "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int", "group_size": 128}}}}, "gptq-int4"),
        ({"quant_method": "mxfp4"}, "mxfp4"),
        ({"quant_method": "awq", "bits": 4}, "awq-int4"),
        ({"quant_method": "gptq", "bits": 4}, "gptq-int4"),
    ],
)
def test_quantization_config_names_the_format(quantization: dict[str, Any], expected: str) -> None:
    assert default_quant({"torch_dtype": "bfloat16", "quantization_config": quantization}) == (expected, None)


def test_a_config_json_alone_of_an_nvfp4_checkpoint_is_estimated_as_nvfp4(tmp_path: Path) -> None:
    cfg = {"model_type": "gemma4_unified", "text_config": preset_config("gemma-4-12b"), "quantization_config": NVFP4_QUANT}
    spec = spec_from_hf(cfg, name="g4-nvfp4", source="config.json", model_id=None)
    assert spec.default_quant == "nvfp4"
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    e = estimate(str(path), "rtx-5060-ti-16gb", engine="vllm")
    assert e.weights.total / 2**30 == pytest.approx(7.6, rel=0.03)


@pytest.mark.parametrize(("name", "total_b", "active_b"), [("llama-4-scout", 107.8, 17.0), ("llama-4-maverick", 400.7, 17.0)])
def test_llama4_moe_interleave_shared_expert_and_chunked_attention(name: str, total_b: float, active_b: float) -> None:
    spec = model_catalog().get(name).spec
    assert spec.total_params / 1e9 == pytest.approx(total_b, rel=0.01)
    assert spec.active_params() / 1e9 == pytest.approx(active_b, rel=0.06)
    groups = {g.kind: g for g in spec.attention}
    assert groups["full"].n_layers == 12 and groups["sliding"].n_layers == 36
    assert groups["sliding"].window_tokens == 8192
    # past the chunk, only the 12 global layers keep growing
    assert kv_bytes_per_token(spec, 2.0, 1e6) == 12 * 2 * 8 * 128 * 2


def test_qwen3_5_moe_text_config_is_a_gated_delta_net_hybrid() -> None:
    spec = model_catalog().get("qwen3.6-35b-a3b").spec
    assert spec.architecture == "qwen3_5_moe"
    assert {g.kind: g.n_layers for g in spec.attention} == {"full": 10, "linear": 30}
    assert spec.n_experts == 256 and spec.n_experts_per_token == 8
    nested = {"model_type": "qwen3_5_moe", "text_config": {**preset_config("qwen3.5-35b-a3b"), "model_type": "qwen3_5_moe_text"}}
    assert spec_from_config(nested, "nested").params == spec.params


def test_gemma4_family_moe_block_kv_sharing_and_per_layer_embeddings() -> None:
    big = model_catalog().get("gemma-4-31b").spec
    assert {g.kind: (g.n_layers, g.kv_elements_per_token) for g in big.attention} == {"full": (10, 2 * 4 * 512), "sliding": (50, 2 * 16 * 256)}
    moe = model_catalog().get("gemma-4-26b-a4b").spec
    assert moe.total_params / 1e9 == pytest.approx(25.2, rel=0.01)
    assert moe.active_params() / 1e9 == pytest.approx(3.8, rel=0.03)
    small = model_catalog().get("gemma-4-e4b").spec
    # the last 18 of 42 layers reuse earlier KV: 24 layers store it (4 global, 20 sliding)
    assert sum(g.n_layers for g in small.attention) == 24
    # per-layer embeddings are held, not read in full per token
    assert small.params.resident == pytest.approx(262144 * 42 * 256)
    assert small.active_params() < small.total_params - small.params.resident + 1


def test_deepseek_v32_stores_the_indexer_keys_and_says_sparse_reads_are_not_credited() -> None:
    v3 = model_catalog().get("deepseek-v3").spec
    v32 = model_catalog().get("deepseek-v3.2").spec
    assert v32.attention[0].kv_elements_per_token == v3.attention[0].kv_elements_per_token + 128
    assert 0 < v32.total_params - v3.total_params < 1.5e9  # 61 lightning indexers
    assert any("Sparse Attention" in w for w in v32.warnings)


def test_gemma4_kv_shared_layers_read_the_cache_they_do_not_store() -> None:
    """Gemma 4 E4B's last 18 layers attend over earlier layers' caches: stored once, read by 42 layers."""
    import numpy as np

    from tokometer.costmodel.memory import kv_cache_bytes, kv_read_bytes
    from tokometer.costmodel.roofline import attention_flops_per_token, decode_score_elements
    from tokometer.costmodel.vector import ModelArrays, decode_grid

    small = model_catalog().get("gemma-4-e4b").spec
    # 42 layers, every 6th global: 7 global (4 store, 3 share) and 35 sliding (20 store, 15 share)
    assert {g.kind: (g.n_layers, g.shared_layers) for g in small.attention} == {"full": (4, 3), "sliding": (20, 15)}
    depth = 32768
    stored = kv_cache_bytes(small, depth, 2.0)
    read = kv_read_bytes(small, depth, 2.0)
    # global layers: 2 KV heads x 512 (K and V) = 2048 elements; sliding: 2 x 256 x 2 = 1024, window 512
    assert stored == pytest.approx(2.0 * (4 * 2048 * depth + 20 * 1024 * 512))
    assert read == pytest.approx(2.0 * (7 * 2048 * depth + 35 * 1024 * 512))
    assert attention_flops_per_token(small, depth) == pytest.approx(4.0 * (7 * 8 * 512 * depth + 35 * 8 * 256 * 512))
    assert decode_score_elements(small, depth) > 1.7 * sum(g.n_layers * 8 * g.cached_tokens(depth) for g in small.attention)
    # the vectorised step (what the fit runs) reads the same bytes
    arrays = ModelArrays.from_specs([small])
    grid = decode_grid(
        arrays, weight_scale=0.5, bandwidth_gb_per_s=400.0, bandwidth_fraction=0.8, compute_fraction=0.5, peak_tflops=10.0,
        layer_overhead_us=0.0, step_overhead_us=0.0, batch=1, depth_tokens=depth, kv_bytes_per_element=2.0,
    )
    assert float(grid.kv_read_bytes.ravel()[0]) == pytest.approx(read)
    assert float(arrays.kv_cached_elements(np.asarray([float(depth)])).ravel()[0]) * 2.0 == pytest.approx(stored)
    # a model without KV sharing reads what it stores
    big = model_catalog().get("gemma-4-31b").spec
    assert kv_read_bytes(big, depth, 2.0) == pytest.approx(kv_cache_bytes(big, depth, 2.0))
