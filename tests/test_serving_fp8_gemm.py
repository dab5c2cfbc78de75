"""The FP8 GEMM fraction (`SchedulerPolicy.fp8_gemm_fraction`): engines that quantise activations
dynamically before every FP8 linear layer realise less than the FP8 tensor peak's 2x over BF16.
The fraction scales the GEMM peak of FP8-compute steps only; BF16 steps, attention at the KV
cache's own precision and engines without the prior are untouched (docs/PHYSICS.md, "FP8 GEMM rate")."""

from __future__ import annotations

import pytest

from tokometer.catalog.serving import check_policy, serving_engines
from tokometer.costmodel.serving import SchedulerPolicy, ServingEfficiency, step_cost
from tokometer.errors import InputError
from tokometer.usecases.estimate import estimate

EFF = ServingEfficiency(compute_fraction_max=0.6, compute_half_tokens=64.0, layer_step_overhead_us=30.0)
FRACTION = 0.68


def _setup(quant: str):  # type: ignore[no-untyped-def]
    setup = estimate("llama-3.1-8b", "h100-sxm", quant=quant, engine="vllm", advise=False).setup
    assert setup is not None
    return setup


def test_fp8_steps_run_at_the_fraction_of_the_fp8_peak() -> None:
    setup = _setup("fp8")
    assert setup.peak.dtype == "fp8"
    base, slow = step_cost(setup, EFF), step_cost(setup, EFF, fp8_gemm_fraction=FRACTION)
    assert slow.peak_flops == pytest.approx(base.peak_flops * FRACTION)
    # a long prefill is compute-bound: it takes longer, by at most 1 / fraction
    t0 = base.time_s(8192, 0.0, 8192.0 * 8192 / 2, 1, prefill_tokens=8192)
    t1 = slow.time_s(8192, 0.0, 8192.0 * 8192 / 2, 1, prefill_tokens=8192)
    assert t0 < t1 <= t0 / FRACTION * (1 + 1e-9)
    # a one-sequence decode step is bandwidth-bound: unchanged
    assert slow.time_s(1, 1000.0, 1000.0, 1) == pytest.approx(base.time_s(1, 1000.0, 1000.0, 1), rel=1e-3)


def test_attention_keeps_its_own_rate() -> None:
    """Attention FLOPs are expressed in GEMM-peak FLOPs: with a slower GEMM peak the scale drops, so
    the attention's own time (at the BF16 cache's rate) is the same."""
    setup = _setup("fp8")
    base, slow = step_cost(setup, EFF), step_cost(setup, EFF, fp8_gemm_fraction=FRACTION)
    assert base.attention_flops_per_pair / base.peak_flops == pytest.approx(
        slow.attention_flops_per_pair / slow.peak_flops, rel=1e-9)


def test_bf16_steps_are_not_touched() -> None:
    setup = _setup("bf16")
    assert setup.peak.dtype != "fp8"
    assert step_cost(setup, EFF, fp8_gemm_fraction=FRACTION) == step_cost(setup, EFF)


def test_catalog_priors_and_checks() -> None:
    engines = serving_engines()
    assert engines["vllm"].policy.fp8_gemm_fraction == pytest.approx(1.36 / 2)  # vllm-project/vllm#17126
    assert engines["sglang"].policy.fp8_gemm_fraction == pytest.approx(1.36 / 2)
    assert engines["tensorrt-llm"].policy.fp8_gemm_fraction == 1.0
    for bad in (0.0, -0.1, 1.5, float("nan")):
        with pytest.raises(InputError, match="FP8 GEMM"):
            check_policy(SchedulerPolicy(engine="x", max_num_seqs=8, max_num_batched_tokens=64, fp8_gemm_fraction=bad))
