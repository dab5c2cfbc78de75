"""The layers that hold routed experts, from each config (`ModelSpec.moe_layer_count`), price the per-expert
dispatch (`roofline.expert_dispatch_time_s`): a model's dense or recurrent layers run no experts."""

from __future__ import annotations

import pytest

from tokometer.costmodel.roofline import expert_dispatch_time_s
from tokometer.domain.specs import Efficiency
from tokometer.usecases.resolve import resolve_model


@pytest.mark.parametrize(
    ("model", "layers", "moe_layers"),
    [
        ("deepseek-v3", 61, 58),  # first_k_dense_replace 3
        ("llama-4-maverick", 48, 24),  # interleave_moe_layer_step 2
        ("nemotron-3-nano-30b-a3b", 52, 23),  # hybrid_override_pattern: 23 E, the rest Mamba-2 and attention
        ("qwen3-30b-a3b", 48, 48),  # every layer
    ],
)
def test_moe_layer_count_follows_the_config(model: str, layers: int, moe_layers: int) -> None:
    spec = resolve_model(model)
    assert spec.n_layers == layers
    assert spec.moe_layer_count == moe_layers
    assert spec.expert_slots(1.0) == pytest.approx(moe_layers * spec.n_experts_per_token)


def test_the_dispatch_cost_scales_with_the_moe_layers_not_all_layers() -> None:
    eff = Efficiency(bandwidth_fraction=1.0, layer_overhead_us=0.0, step_overhead_us=0.0, prefill_efficiency_max=1.0,
                     prefill_half_tokens=0.0, expert_overhead_us=10.0)
    nano = resolve_model("nemotron-3-nano-30b-a3b")
    assert expert_dispatch_time_s(nano, eff) == pytest.approx(10e-6 * 23 * nano.n_experts_per_token)
    assert resolve_model("llama-3.1-8b").moe_layer_count == 32 and resolve_model("llama-3.1-8b").expert_slots() == 0.0
