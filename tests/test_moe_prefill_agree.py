"""One MoE prompt physics for `estimate` and `simulate` (issue 29).

A routed expert of a MoE prompt multiplies only the c k / E tokens it receives, so its GEMM runs at that
token count's efficiency: the single-stream prefill (`roofline.prefill_matmul_time`) and the serving step
(`StepCost.prefill_gemm_scale`) use the same form; a grouped-kernel engine (vLLM, SGLang, TensorRT-LLM)
pays a chunk one token's tau_expert per MoE layer, not every touched expert's; and the estimate's TTFT
carries the serving engine's eager-prefill floor and per-request latency, the priors the simulator runs
(`usecases.estimate.serving_stack`). DeepSeek-R1 FP8 on 8 H200 under vLLM read 457 ms of TTFT in
`estimate` against 40 ms in `simulate` at 512 tokens before.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokometer.catalog.serving import serving_engine
from tokometer.costmodel.roofline import expert_dispatch_time_s, prefill, prefill_matmul_time
from tokometer.costmodel.serving.cost import step_cost
from tokometer.domain.serving_specs import ServingEfficiency
from tokometer.domain.units import TFLOP
from tokometer.report.json import explanation
from tokometer.usecases.estimate import estimate
from tokometer.usecases.simulate import deploy

# estimate / simulate lone-prompt time within this factor: the two paths share the physics but not their
# fitted constants (single-device efficiency.toml against serving_efficiency.json: plateaus, per-layer and
# per-step overheads, SGLang's eager-prefill floor, which only the serving policy carries)
AGREE = 1.8

SETUPS = [
    ("deepseek-r1", "h200", dict(quant="fp8", engine="vllm", tp=8)),
    ("deepseek-r1", "h200", dict(quant="fp8", engine="sglang", tp=8)),
    ("deepseek-r1", "b200", dict(quant="fp8", engine="tensorrt-llm", tp=8)),
    ("mixtral-8x7b", "h100-sxm", dict(engine="vllm", tp=2)),
    ("qwen3-30b-a3b", "h100-sxm", dict(engine="vllm")),
    ("gpt-oss-120b", "h100-sxm", dict(engine="vllm")),
]


@pytest.mark.parametrize(("model", "hw", "kw"), SETUPS)
@pytest.mark.parametrize("prompt", [512, 2048])
def test_estimate_and_simulator_agree_on_a_lone_moe_prompt(model: str, hw: str, kw: dict, prompt: int) -> None:
    est = estimate(model, hw, prompt_tokens=prompt, **kw)
    assert est.prefill is not None
    cost = deploy(model, hw, **kw).cost
    p = float(prompt)
    sim_s = cost.time_s(p, 0.0, p * p / 2.0, 1.0, prefill_tokens=p)
    ratio = est.prefill.time_s / sim_s
    assert 1.0 / AGREE < ratio < AGREE, (model, kw, prompt, est.prefill.time_s, sim_s)


def test_a_grouped_engine_pays_one_tokens_experts_per_chunk() -> None:
    """The 8-H200 DeepSeek-R1 prefill is no longer 370 ms of per-expert dispatch (24.7 us x 256 x 58)."""
    est = estimate("deepseek-r1", "h200", prompt_tokens=512, quant="fp8", engine="vllm", tp=8)
    assert est.prefill is not None
    eff = est.efficiency
    assert eff.grouped_experts and eff.expert_overhead_us > 0
    charged = est.model.expert_slots(1.0) * eff.expert_overhead_us * 1e-6
    touched = est.model.expert_slots(512.0) * eff.expert_overhead_us * 1e-6
    assert est.prefill.overhead_time_s < touched / 4  # far below every touched expert's charge
    assert est.prefill.overhead_time_s >= charged  # one token's experts are still charged
    # an engine that runs its experts one by one (llama.cpp, MLX) still pays every expert a chunk touches
    ungrouped = replace(eff, grouped_experts=False)
    assert math.isclose(expert_dispatch_time_s(est.model, ungrouped, 512.0), touched, rel_tol=1e-9)
    assert math.isclose(expert_dispatch_time_s(est.model, eff, 512.0), charged, rel_tol=1e-9)


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


def _ds(engine: str, prompt: int, hw: str = "h200"):  # type: ignore[no-untyped-def]
    return estimate("deepseek-r1", hw, prompt_tokens=prompt, quant="fp8", engine=engine, tp=8)


@pytest.mark.parametrize(("engine", "prompt"), [("sglang", 128), ("sglang", 1024), ("vllm", 1024), ("vllm", 4096)])
def test_the_estimates_ttft_holds_the_engines_eager_prefill_floor(engine: str, prompt: int) -> None:
    """SGLang prefills eagerly at every length, vLLM above its largest CUDA graph (512 tokens): a lone MoE
    prompt's TTFT is at least n_layers x the engine's host time per layer, plus the first decode step."""
    est = _ds(engine, prompt)
    pol = serving_engine(engine).policy
    floor = est.model.n_layers * pol.eager_prefill_layer_us * 1e-6
    assert floor > 0.05  # 61 layers x 1.3-1.7 ms
    assert est.prefill is not None and est.ttft_s is not None
    first = est.ttft_s - max(est.prefill.time_s, floor)
    assert first > 0  # the first decode step comes after the floored prefill
    assert est.ttft_s == pytest.approx(max(est.prefill.time_s, floor) + first)
    assert est.ttft_s >= floor
    if est.prefill.time_s < floor:
        assert est.stack is not None and est.stack.floor_s == pytest.approx(floor)
        assert any("without CUDA graphs" in line for line in explanation(est))


def test_vllm_inside_its_cuda_graphs_and_dense_models_pay_no_floor() -> None:
    inside = _ds("vllm", 512)  # 512 tokens: the largest captured step, replayed
    assert inside.stack is None
    dense = estimate("llama-3.1-70b", "h200", prompt_tokens=2048, quant="fp8", engine="sglang", tp=8)
    assert dense.stack is None  # no MoE layer: the floor is a MoE layer's kernel count (docs/PHYSICS.md)
    llama = estimate("qwen3-30b-a3b", "rtx-4090", prompt_tokens=2048, quant="q4_k_m")
    assert llama.stack is None  # llama.cpp has no serving-stack terms


def test_tensorrt_llms_request_latency_is_added_once() -> None:
    est = _ds("tensorrt-llm", 1024, hw="b200")
    lag = serving_engine("tensorrt-llm").policy.request_latency_ms * 1e-3
    assert est.stack is not None and est.stack.lag_s == pytest.approx(lag) and lag > 0
    without = est.ttft_s - lag
    assert est.prefill is not None and without > est.prefill.time_s  # prefill + the first step remain
    assert any("serving stack per request" in line for line in explanation(est))
    assert est.e2e_s == pytest.approx(est.ttft_s + (est.workload.output_tokens - 1) * est.tpot_s)


def test_the_json_says_what_the_serving_stack_added() -> None:
    from tokometer.report.json import estimate_sections

    lat = estimate_sections(_ds("sglang", 256))["latency"]  # a prompt whose prefill the floor outlasts
    stack = lat["serving_stack"]
    assert stack["engine"] == "sglang" and stack["eager_prefill_floor_s"] > 0.05 and stack["request_latency_s"] == 0.0
    assert 0 < stack["added_to_ttft_s"] < stack["eager_prefill_floor_s"] <= lat["ttft_s"]
    assert estimate_sections(estimate("llama-3.1-8b", "rtx-4090"))["latency"]["serving_stack"] is None
