"""MoE prefill: a routed expert multiplies only its share (k / E) of a chunk's tokens, so at the same
prompt its matmuls run further below the peak than a dense layer's (costmodel.roofline.prefill_matmul_time)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
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
def test_a_dense_model_keeps_the_saturating_eta(
    flops: float, chunk: float, eta_max: float, half: float
) -> None:
    got = prefill_matmul_time(flops, 0.0, 1.0, chunk, eta_max, half)
    assert math.isclose(got, flops / _dense_eta(chunk, eta_max, half), rel_tol=1e-9)


@settings(max_examples=60, deadline=None)
@given(
    chunk=st.floats(16, 4096),
    share=st.floats(0.01, 0.5),
    half=st.floats(1, 1000),
    routed=st.floats(0.05, 1.0),
)
def test_routed_matmuls_see_k_over_e_of_the_chunk(
    chunk: float, share: float, half: float, routed: float
) -> None:
    flops, eta_max = 1e12, 0.6
    got = prefill_matmul_time(flops, routed, share, chunk, eta_max, half)
    expected = (1 - routed) * flops / _dense_eta(
        chunk, eta_max, half
    ) + routed * flops / _dense_eta(chunk * share, eta_max, half)
    assert math.isclose(got, expected, rel_tol=1e-9)
    assert got > prefill_matmul_time(
        flops, 0.0, 1.0, chunk, eta_max, half
    )  # slower than dense at the same chunk
    # without a half-saturation length (a fit that found none) routing changes nothing
    assert math.isclose(
        prefill_matmul_time(flops, routed, share, chunk, eta_max, 0.0),
        flops / eta_max,
        rel_tol=1e-12,
    )


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
    fast = estimate(
        EstimateRequest(hw=hw, model="mixtral-8x7b", prompt_tokens=512), efficiency=base
    )
    slow = estimate(
        EstimateRequest(hw=hw, model="mixtral-8x7b", prompt_tokens=512),
        efficiency=replace(base, prefill_half_tokens=128.0),
    )
    assert fast.prefill is not None and slow.prefill is not None
    # dense layers at eta(512) = 0.8, experts at eta(128) = 0.5 of the same max: realised share between them
    assert (
        0.5 * base.prefill_efficiency_max
        < slow.prefill.efficiency
        < 0.8 * base.prefill_efficiency_max
    )
    assert slow.prefill.compute_time_s > fast.prefill.compute_time_s


def test_a_parent_without_a_half_saturation_length_does_not_pin_its_children_at_zero(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tokometer.costmodel.layout import IDEAL
    from tokometer.fitting import calibration
    from tokometer.fitting.calibration import fit_prefill
    from tokometer.fitting.features import Features
    from tokometer.fitting.rows import Case

    case = Case(
        row_id="x",
        line=2,
        raw={},
        metric="pp",
        value=1.0,
        n_devices=1,
        batch=1,
        prompt_tokens=1,
        gen_tokens=0,
        flag="",
    )
    prior = replace(
        IDEAL, prefill_efficiency_max=0.5, prefill_half_tokens=0.0, prefill_chunk_tokens=4096
    )
    true_half, eta_max = 200.0, 0.5
    rows = []
    for tokens in (16, 32, 64, 128, 256, 512, 1024, 2048):
        matmul_s = tokens * 1e-4
        t = matmul_s / (eta_max * tokens / (tokens + true_half))
        rows.append(
            Features(
                case=case,
                group="e/b/c",
                engine_id="e",
                backend="b",
                hardware_id="h",
                prior=prior,
                t_measured_s=t,
                matmul_s=matmul_s,
                prompt_tokens=tokens,
                n_layers=1,
            )
        )
    overheads = {"layer_overhead_us": 0.0, "step_overhead_us": 0.0}
    fitted = fit_prefill(rows, prior, overheads)
    assert (
        80.0 < fitted["prefill_half_tokens"] < 250.0
    )  # toward the rows' 200 (8 rows against a ridge), not the parent's 0
    monkeypatch.setattr(
        calibration, "HALF_TOKENS_SCALE", 1e-9
    )  # a zero-width ridge: what a prior of 0 used to be
    assert calibration.fit_prefill(rows, prior, overheads)["prefill_half_tokens"] < 1.0
