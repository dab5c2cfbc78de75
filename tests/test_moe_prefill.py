"""MoE prefill: a routed expert multiplies only its share (k / E) of a chunk's tokens, so at the same
prompt its matmuls run further below the peak than a dense layer's (costmodel.roofline.prefill_matmul_time)."""

from __future__ import annotations

import math
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from tokometer.catalog import model_catalog
from tokometer.costmodel.roofline import (
    expert_token_share,
    prefill_matmul_time,
    routed_matmul_share,
)


def _dense_eta(chunk: float, eta_max: float, half: float) -> float:
    return eta_max * chunk / (chunk + half)


@settings(max_examples=60, deadline=None)
@given(
    flops=st.floats(1e9, 1e15),
    chunk=st.floats(1, 8192),
    eta_max=st.floats(0.05, 1.0),
    half=st.floats(0, 2000),
)
def test_a_dense_model_keeps_the_saturating_eta(flops: float, chunk: float, eta_max: float, half: float) -> None:
    got = prefill_matmul_time(flops, 0.0, 1.0, chunk, eta_max, half)
    assert math.isclose(got, flops / _dense_eta(chunk, eta_max, half), rel_tol=1e-9)


@settings(max_examples=60, deadline=None)
@given(chunk=st.floats(16, 4096), share=st.floats(0.01, 0.5), half=st.floats(1, 1000), routed=st.floats(0.05, 1.0))
def test_routed_matmuls_see_k_over_e_of_the_chunk(chunk: float, share: float, half: float, routed: float) -> None:
    flops, eta_max = 1e12, 0.6
    got = prefill_matmul_time(flops, routed, share, chunk, eta_max, half)
    expected = (1 - routed) * flops / _dense_eta(chunk, eta_max, half) + routed * flops / _dense_eta(chunk * share, eta_max, half)
    assert math.isclose(got, expected, rel_tol=1e-9)
    assert got > prefill_matmul_time(flops, 0.0, 1.0, chunk, eta_max, half)  # slower than dense at the same chunk
    # without a half-saturation length (a fit that found none) routing changes nothing
    assert math.isclose(prefill_matmul_time(flops, routed, share, chunk, eta_max, 0.0), flops / eta_max, rel_tol=1e-12)


def test_mixtral_routes_two_of_eight_experts_and_spends_most_matmul_flops_in_them() -> None:
    mixtral = model_catalog().get("mixtral-8x7b").spec
    assert expert_token_share(mixtral) == 2 / 8
    assert 0.5 < routed_matmul_share(mixtral) < 1.0
    dense = replace(mixtral, n_experts=0, n_experts_per_token=0)
    assert routed_matmul_share(dense) == 0.0 and expert_token_share(dense) == 1.0


def test_an_moe_prefill_is_predicted_slower_when_the_engine_needs_columns_to_saturate() -> None:
    from tokometer.catalog import hardware_catalog
    from tokometer.costmodel.layout import IDEAL
    from tokometer.usecases.estimate import estimate
    from tokometer.usecases.request import EstimateRequest

    hw = hardware_catalog().get("h100-sxm")
    base = replace(IDEAL, prefill_chunk_tokens=512)
    fast = estimate(EstimateRequest(hw=hw, model="mixtral-8x7b", prompt_tokens=512), efficiency=base)
    slow = estimate(EstimateRequest(hw=hw, model="mixtral-8x7b", prompt_tokens=512), efficiency=replace(base, prefill_half_tokens=128.0))
    assert fast.prefill is not None and slow.prefill is not None
    # dense layers at eta(512) = 0.8, experts at eta(128) = 0.5 of the same max: realised share between them
    assert 0.5 * base.prefill_efficiency_max < slow.prefill.efficiency < 0.8 * base.prefill_efficiency_max
    assert slow.prefill.compute_time_s > fast.prefill.compute_time_s
