"""MLA decode with absorbed projections (DeepSeek, Kimi K2): a decoded token attends over the cached latent.

Prefill expands the latent into per-head keys and values (n_heads x (nope + rope) query-key width);
decode scores each head's query against the kv_lora_rank + rope latent and mixes the kv_lora_rank
latent values, so its FLOPs per context token are 2 n_heads (kv_lora + rope) + 2 n_heads kv_lora,
while the bytes it reads stay the latent's kv_lora + rope elements per token per layer.
"""

from __future__ import annotations

import numpy as np
import pytest

from tokometer.catalog import hardware_catalog, model_catalog
from tokometer.costmodel.roofline import attention_flops_per_token, decode_score_elements
from tokometer.costmodel.serving.cost import step_cost
from tokometer.costmodel.vector import ModelArrays
from tokometer.domain.serving_specs import ServingEfficiency
from tokometer.usecases.estimate import estimate


def _config(model_id: str) -> dict[str, int]:
    preset = model_catalog().get(model_id)
    return dict(preset.config)


@pytest.mark.parametrize("model_id", ["deepseek-v3", "kimi-k2"])
def test_mla_decode_flops_follow_the_absorbed_form_over_the_latent(model_id: str) -> None:
    spec = model_catalog().get(model_id).spec
    cfg = _config(model_id)
    heads, kv_lora, rope, nope = (cfg[k] for k in ("num_attention_heads", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim"))
    (group,) = spec.attention
    assert group.kind == "mla"
    assert group.kv_elements_per_token == kv_lora + rope  # the bytes: the latent and the rope key
    assert group.attention_dim == heads * (nope + rope)  # prefill: the expanded (MHA) form
    depth = 4096.0
    absorbed = spec.n_layers * (2 * heads * (kv_lora + rope) + 2 * heads * kv_lora) * depth
    assert attention_flops_per_token(spec, depth) == pytest.approx(absorbed)
    expanded = 4.0 * spec.n_layers * group.attention_dim * depth
    assert attention_flops_per_token(spec, depth) > 2.0 * expanded  # 2.8x for DeepSeek-V3's 512 + 64 over 128 heads
    # the unfused-attention score count stays one score per head per context token
    assert decode_score_elements(spec, depth) == pytest.approx(spec.n_layers * heads * depth)


def test_gqa_models_decode_as_they_prefill() -> None:
    spec = model_catalog().get("llama-3.1-8b").spec
    assert all(g.decode_dim == g.attention_dim for g in spec.attention)


def test_the_vector_step_carries_the_absorbed_decode_flops() -> None:
    spec = model_catalog().get("deepseek-v3").spec
    arrays = ModelArrays.from_specs([spec])
    depth = 2048.0
    per_token = float(np.sum(arrays.attention_coef[0] * np.minimum(depth, arrays.windows[0])))
    assert per_token == pytest.approx(attention_flops_per_token(spec, depth))
    scores = float(np.sum(arrays.score_coef[0] * np.minimum(depth, arrays.windows[0])))
    assert scores == pytest.approx(decode_score_elements(spec, depth))


def test_serving_decode_steps_pay_the_absorbed_attention_and_prefill_the_expanded_one() -> None:
    est = estimate("deepseek-v3", "h200", quant="fp8", tp=8, advise=False)
    assert est.setup is not None
    cost = step_cost(est.setup, ServingEfficiency())
    (group,) = est.setup.model.attention
    assert cost.decode_attention_flops_per_pair / cost.attention_flops_per_pair == pytest.approx(group.decode_dim / group.attention_dim)
    pairs = 256 * 8192.0  # 256 streams at 8k context: attention-bound on an H200
    decode = cost.split(256, pairs, pairs, 256)[3]
    as_prefill = cost.split(256, pairs, pairs, 256, prefill_tokens=256)[3]
    assert decode == pytest.approx(as_prefill * group.decode_dim / group.attention_dim)
    assert cost.time_s(256, pairs, pairs, 256) >= cost.time_s(256, pairs, pairs, 256, decode_pairs=0.0)


def test_absorbed_decode_is_compute_bound_under_attention_dp_with_an_fp8_latent() -> None:
    """DP-attention: each GPU holds its own streams' latents (1/8 of the bytes) and runs all heads on them;
    at 2 x 128 x (576 + 512) FLOPs per 576-byte FP8 latent token that is above an H200's FP8 ridge."""
    est = estimate("deepseek-v3", "h200", quant="fp8", kv_dtype="fp8", tp=1, dp=8, ep=8, advise=False)
    assert est.setup is not None
    cost = step_cost(est.setup, ServingEfficiency())
    pairs = 512 * 8192.0
    weights, matmul, kv, attention, _ = cost.split(512, pairs, pairs, 512)
    assert attention > kv  # the absorbed form's FLOPs, not the latent's bytes, set the attention time
    assert cost.time_s(512, pairs, pairs, 512) > cost.time_s(512, pairs, pairs, 512, decode_pairs=0.0)


def test_a_gqa_model_has_no_separate_decode_attention_cost() -> None:
    est = estimate("llama-3.1-70b", hardware_catalog().get("h100-sxm"), quant="fp8", tp=4, advise=False)
    assert est.setup is not None
    assert step_cost(est.setup, ServingEfficiency()).decode_attention_flops_per_pair == 0.0


@pytest.mark.parametrize("quant, kv_dtype, scale, engine", [
    ("bf16", None, 1.0, None),  # 16-bit weights and cache: one peak
    ("fp8", "bf16", 2.0, None),  # FP8 weights, BF16 cache: attention at the BF16 tensor rate, half the FP8 one
    ("fp8", "fp8", 1.0, None),  # an FP8 cache runs FP8 attention
    # FP4 GEMMs (ModelOpt NVFP4 under vLLM; llama.cpp's block kernels run FP4 at the fp16 rate), FP8 attention
    ("nvfp4", "fp8", 2.0, "vllm"),
])
def test_attention_runs_at_the_kv_caches_precision_not_the_weights(
    quant: str, kv_dtype: str | None, scale: float, engine: str | None
) -> None:
    from tokometer.costmodel.serving.cost import attention_peak_scale

    on = {"engine": engine} if engine else {}
    est = estimate("llama-3.1-8b", "b200", quant=quant, kv_dtype=kv_dtype, advise=False, **on)
    assert est.setup is not None
    assert attention_peak_scale(est.setup) == pytest.approx(scale, rel=0.01)
    base = estimate("llama-3.1-8b", "b200", quant=quant, kv_dtype="fp8", advise=False, **on).setup
    assert base is not None
    per_pair = step_cost(est.setup, ServingEfficiency()).attention_flops_per_pair
    assert per_pair == pytest.approx(scale / attention_peak_scale(base) * step_cost(base, ServingEfficiency()).attention_flops_per_pair)
