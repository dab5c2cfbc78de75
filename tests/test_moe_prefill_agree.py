"""One MoE prompt GEMM physics for `estimate` and `simulate` (issue 29).

A routed expert of a MoE prompt multiplies only the c k / E tokens it receives, so its GEMM runs at that
token count's efficiency: the single-stream prefill (`roofline.prefill_matmul_time`) and the serving step
(`StepCost.prefill_gemm_scale`) use the same form. (The estimate's per-touched-expert tau_expert on a
prefill chunk is not changed: docs/PHYSICS.md says why.)
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokometer.costmodel.roofline import prefill, prefill_matmul_time
from tokometer.costmodel.serving.cost import step_cost
from tokometer.domain.serving_specs import ServingEfficiency
from tokometer.domain.units import TFLOP
from tokometer.usecases.simulate import deploy


@settings(max_examples=80, deadline=None)
@given(tokens=st.floats(1.0, 16384.0), routed=st.floats(0.0, 0.95), share=st.floats(1 / 512, 0.5), half=st.floats(1.0, 2000.0))
def test_the_serving_step_scale_is_the_single_stream_form(tokens: float, routed: float, share: float, half: float) -> None:
    cost = deploy("qwen3-30b-a3b", "h100-sxm", engine="vllm").cost
    cost = replace(cost, prefill_routed_share=routed, expert_tokens_per_token=share, prefill_half_tokens=half)
    single = prefill_matmul_time(1.0, routed, share, tokens, 1.0, half)  # per FLOP at eta_max 1
    dense = (tokens + half) / tokens
    assert math.isclose(cost.prefill_gemm_scale(tokens) * dense, single, rel_tol=1e-9)
    arr = cost.prefill_gemm_scale(np.array([tokens, tokens]))
    assert np.allclose(arr, cost.prefill_gemm_scale(tokens))


def test_a_moe_prompt_step_is_slower_than_its_dense_form_and_decode_is_untouched() -> None:
    cost = deploy("deepseek-r1", "h200", quant="fp8", engine="vllm", tp=8).cost
    assert 0.3 < cost.prefill_routed_share < 0.9  # DeepSeek-R1: most active GEMM FLOPs are routed experts
    dense = replace(cost, prefill_routed_share=0.0)
    p = 1024.0
    assert cost.gemm_s(p, p) > 2.0 * dense.gemm_s(p, p)  # 32 tokens per expert, far below the plateau
    assert cost.gemm_s(64.0, 0.0) == dense.gemm_s(64.0, 0.0)  # a decode step keeps its own curve
    dense_model = deploy("llama-3.1-8b", "h100-sxm", engine="vllm").cost
    assert dense_model.prefill_routed_share == 0.0 and dense_model.prefill_gemm_scale(512.0) == 1.0


@pytest.mark.parametrize(("model", "engine"), [("qwen3-30b-a3b", "vllm"), ("mixtral-8x7b", "vllm"), ("qwen3-30b-a3b", "sglang")])
def test_a_moe_prompt_step_computes_its_gemms_as_single_stream_prefill_does(model: str, engine: str) -> None:
    """Without a fitted prompt plateau, one prompt's GEMM seconds in the serving step are the single-stream
    prefill's matmul time, experts at their own token count included: the same formula, not a tolerance."""
    setup = deploy(model, "h100-sxm", engine=engine, check_fit=False).setup  # one device: the matmuls alone
    eff = ServingEfficiency(compute_fraction_max=0.6, compute_half_tokens=64.0, layer_step_overhead_us=30.0)
    cost = step_cost(setup, eff)
    assert cost.prefill_routed_share > 0
    for c in (256, 2048):
        single = prefill(setup.model, setup.weights, setup.hardware, setup.efficiency, c, setup.peak, setup.quantized)
        assert single is not None and single.n_chunks == 1
        assert cost.gemm_s(float(c), prefill_tokens=float(c)) == pytest.approx(
            single.matmul_flops / (single.efficiency * setup.peak.tflops * TFLOP), rel=1e-9)
