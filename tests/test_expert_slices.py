"""Tensor-parallel experts: a prompt's routed GEMMs run on slices of each expert (issue 29).

Under TP without EP every routed expert is split `tp * dp / ep` ways along its intermediate dimension,
so each GPU multiplies its tokens by a narrow slice (DeepSeek-V3: 2,048 / 8 = 256 columns), which a
matrix unit's tile runs short on as it runs short on few tokens. `roofline.expert_slice_scale` charges
it, for `simulate`'s step (`StepCost.expert_slice_scale`) and `estimate`'s prefill (`layout_prefill`)
alike; EP keeps experts whole and is not charged.
"""

from __future__ import annotations

import json
import math

import pytest
from tests.helpers import cli

from tokometer.catalog import model_catalog
from tokometer.costmodel.roofline import expert_slice_scale
from tokometer.usecases.estimate import estimate
from tokometer.usecases.simulate import deploy


def _lone_prompt_s(model: str, hw: str, prompt: float, **kw: object) -> float:
    cost = deploy(model, hw, **kw).cost
    return cost.time_s(prompt, 0.0, prompt * prompt / 2.0, 1.0, prefill_tokens=prompt)


def test_deepseek_over_eight_gpus_reads_256_wide_slices() -> None:
    spec = model_catalog().get("deepseek-r1").spec
    width = spec.params.routed_experts / (spec.moe_layer_count * spec.n_experts * 3 * spec.hidden_size)
    assert width == pytest.approx(2048, rel=1e-3)  # moe_intermediate_size in DeepSeek-V3's config
    half = 256.0
    assert expert_slice_scale(spec, 8, half) == pytest.approx((2048 / 2304) / (256 / 512), rel=1e-3)
    assert expert_slice_scale(spec, 1, half) == 1.0


def test_the_scale_grows_with_the_ways_and_is_one_for_dense_models() -> None:
    spec = model_catalog().get("deepseek-r1").spec
    scales = [expert_slice_scale(spec, ways, 183.0) for ways in (1, 2, 4, 8, 16)]
    assert scales == sorted(scales) and scales[0] == 1.0 and scales[-1] > 2.0
    assert expert_slice_scale(model_catalog().get("llama-3.1-70b").spec, 8, 183.0) == 1.0


def test_simulate_charges_tp_experts_and_not_ep_ones() -> None:
    tp = deploy("deepseek-r1", "h200", quant="fp8", engine="sglang", tp=8).cost
    ep = deploy("deepseek-r1", "h200", quant="fp8", engine="sglang", tp=8, ep=8).cost
    assert tp.expert_slice_scale > 1.5 and ep.expert_slice_scale == 1.0
    # an 8k prompt alone: the TP layout's GEMMs take longer (EP pays its all-to-all elsewhere in the step)
    t = 8192.0
    gemm_tp = tp.split(t, 0.0, t * t / 2.0, 1.0, t)[1]
    gemm_ep = ep.split(t, 0.0, t * t / 2.0, 1.0, t)[1]
    assert gemm_tp > 1.3 * gemm_ep


def test_estimate_prefill_under_tp_is_slower_than_under_ep_and_single_device_is_untouched() -> None:
    kw = dict(quant="fp8", engine="sglang", prompt_tokens=8192)
    tp = estimate("deepseek-r1", "h200", tp=8, **kw).prefill
    ep = estimate("deepseek-r1", "h200", tp=8, ep=8, **kw).prefill
    assert tp is not None and ep is not None
    assert tp.time_s > 1.15 * ep.time_s
    # one device holds whole experts: the single-device prefill is what it was (no slices)
    one = estimate("qwen3-30b-a3b", "h100-sxm", engine="vllm", prompt_tokens=2048).prefill
    deploy_cost = deploy("qwen3-30b-a3b", "h100-sxm", engine="vllm").cost
    assert one is not None and deploy_cost.expert_slice_scale == 1.0


@pytest.mark.parametrize("prompt", [1024, 8192])
def test_estimate_and_simulate_agree_on_the_sliced_prompt(prompt: int) -> None:
    """The same charge on both paths: their ratio under TP stays their ratio under EP (within 15 %)."""
    ratios = []
    for extra in ({}, {"ep": 8}):
        est = estimate("deepseek-r1", "b200", quant="fp8", engine="vllm", tp=8, prompt_tokens=prompt, **extra).prefill
        assert est is not None
        sim = _lone_prompt_s("deepseek-r1", "b200", float(prompt), quant="fp8", engine="vllm", tp=8, **extra)
        ratios.append(est.time_s / sim)
    assert math.isclose(ratios[0], ratios[1], rel_tol=0.15), ratios


def test_simulate_says_why_and_the_json_carries_the_scale(capsys: pytest.CaptureFixture[str]) -> None:
    base = ("simulate", "deepseek-r1", "--hw", "h200", "-q", "fp8", "-e", "sglang", "--tp", "8",
            "--concurrency", "4", "--prompt", "2048", "--output", "64", "-n", "20")
    code, out, _ = cli(capsys, *base)
    assert code == 0 and "splits every routed expert 8 ways" in out and "1.78x" in out
    code, out, _ = cli(capsys, *base, "--ep", "8")
    assert code == 0 and "splits every routed expert" not in out
    code, out, _ = cli(capsys, *base, "--json")
    assert code == 0 and json.loads(out)["deployment"]["expert_slice_scale"] == pytest.approx(16 / 9, rel=1e-6)
