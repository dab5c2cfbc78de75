"""Expert-only MoE offload (`--offload-experts N|all`, llama.cpp `--n-cpu-moe`): the memory split, the
time per part, monotonicity, N = 0 as no offload, and clear errors for what it cannot do."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tokometer.cli import main
from tokometer.domain.jsontext import to_json
from tokometer.domain.units import GB
from tokometer.errors import InputError
from tokometer.report.json import estimate_json, estimate_warnings
from tokometer.usecases.curves import estimate_curves
from tokometer.usecases.estimate import estimate
from tokometer.usecases.placement import expert_layer_count

BASE = dict(model="gpt-oss-120b", hw="rtx-4090", context_tokens=8192)
MOE = dict(BASE, cpu_hw="ddr5-6000-dual-channel")  # 64 GB of DDR5-6000: room for the experts


def test_all_experts_in_ram_splits_memory_by_weight_class() -> None:
    e = estimate(**MOE, offload_experts="all")
    plan = e.offload
    assert plan is not None and plan.offload.expert_layers == e.model.n_layers
    routed_gb = e.weights.routed_experts / GB
    assert plan.cpu_weights_gb == pytest.approx(routed_gb, rel=1e-12)
    assert plan.gpu_weights_gb == pytest.approx(e.weights.total / GB - routed_gb, rel=1e-12)
    assert e.memory.weights_gb == pytest.approx(plan.gpu_weights_gb, rel=1e-12)  # VRAM holds the rest
    assert plan.cpu_kv_gb == 0 and plan.gpu_kv_gb == pytest.approx(e.memory.kv_cache_gb, rel=1e-12)
    assert e.memory.fits and plan.fits_cpu  # 120B on a 24 GB card, experts in 64 GB of DDR5
    assert not estimate(**BASE).memory.fits


def test_time_adds_per_part_and_the_cpu_reads_the_active_experts() -> None:
    e = estimate(**MOE, offload_experts="all")
    ls = e.lever_step
    assert ls is not None
    k_over_e = e.model.n_experts_per_token / e.model.n_experts
    assert ls.cpu_bytes == pytest.approx(e.weights.routed_experts * k_over_e, rel=1e-9)  # one stream
    assert ls.step.time_s == pytest.approx(ls.gpu_time_s + ls.cpu_time_s + ls.step.overhead_time_s, rel=1e-12)
    assert ls.transfer_time_s > 0 and ls.cpu_time_s > ls.gpu_time_s  # RAM is the slow part
    cpu_bw = e.offload.offload.cpu.memory_bandwidth_gb_per_s * GB
    assert ls.cpu_time_s >= ls.cpu_bytes / cpu_bw  # never faster than the RAM's datasheet bandwidth
    assert e.estimate_tok_s < e.ceiling_tok_s


def test_more_experts_offloaded_means_less_vram_and_slower() -> None:
    n_layers = estimate(**BASE).model.n_layers
    runs = [estimate(**MOE, offload_experts=n) for n in range(0, n_layers + 1, 4)]
    vram = [e.memory.total_gb for e in runs]
    speed = [e.estimate_tok_s for e in runs]
    ceiling = [e.ceiling_tok_s for e in runs]
    assert all(a > b for a, b in zip(vram, vram[1:], strict=False))
    assert all(a > b for a, b in zip(speed, speed[1:], strict=False))
    assert all(a > b for a, b in zip(ceiling, ceiling[1:], strict=False))


def test_expert_curve_matches_the_estimates() -> None:
    e = estimate(**MOE, offload_experts=30)
    points = estimate_curves(e).experts
    assert [p.expert_layers for p in points] == list(range(e.model.n_layers + 1))
    at_30 = points[30]
    assert at_30.estimate_tok_s == pytest.approx(e.estimate_tok_s, rel=1e-12)
    assert at_30.gpu_memory_gb == pytest.approx(e.memory.total_gb, rel=1e-9)
    assert at_30.fits == e.memory.fits
    assert points[0].estimate_tok_s == pytest.approx(estimate(**BASE).estimate_tok_s, rel=1e-12)


def test_zero_experts_offloaded_is_no_offload() -> None:
    plain = estimate(**BASE)
    zero = estimate(**BASE, offload_experts=0)
    assert zero.offload is None
    assert to_json(estimate_json(zero)) == to_json(estimate_json(plain))


def test_json_shows_expert_fields_only_when_used() -> None:
    used = estimate_json(estimate(**MOE, offload_experts="all"))["offload"]
    assert used["active"] and used["expert_layers"] == 36 and len(used["experts_curve"]) == 37
    assert used["gpu_layers"] == used["n_layers"] and used["cpu_layers"] == 0
    layers = estimate_json(estimate("llama-3.1-70b", "rtx-4090", gpu_layers=40))["offload"]
    assert "expert_layers" not in layers and "experts_curve" not in layers


def test_faster_ram_is_faster() -> None:
    slow = estimate(**{**MOE, "cpu_hw": "ddr4-dual-channel"}, offload_experts="all")
    fast = estimate(**{**MOE, "cpu_hw": "ddr4-3200-8-channel"}, offload_experts="all")
    assert fast.estimate_tok_s > slow.estimate_tok_s


def test_prefill_copies_the_experts_in_ram_over_pcie() -> None:
    plain = estimate(**BASE)
    offloaded = estimate(**MOE, offload_experts="all")
    assert plain.prefill is not None and offloaded.prefill is not None
    assert offloaded.prefill.time_s > plain.prefill.time_s


@pytest.mark.parametrize("value", ["abc", "-1", "0.5", "37", "1e3"])
def test_bad_counts_are_input_errors(value: str) -> None:
    with pytest.raises(InputError) as info:
        expert_layer_count(value, 36)
    assert info.value.field == "offload_experts"


def test_counts() -> None:
    assert expert_layer_count("all", 36) == 36 and expert_layer_count(" ALL ", 36) == 36
    assert expert_layer_count("12", 36) == 12 and expert_layer_count(12, 36) == 12
    assert expert_layer_count(None, 36) is None


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"model": "llama-3.1-70b"}, "offload_experts"),  # dense
        ({"gpu_layers": 20}, "offload_experts"),
        ({"tp": 2}, "offload_experts"),
        ({"offload_mode": "stream"}, "offload_mode"),
        ({"hw": "ddr5-dual-channel"}, "offload_experts"),
        ({"cpu_hw": "rtx-3090"}, "cpu_hw"),
    ],
)
def test_what_it_cannot_do_is_a_clear_error(extra: dict, field: str) -> None:
    with pytest.raises(InputError) as info:
        estimate(**{**MOE, **extra}, offload_experts="all")
    assert info.value.field == field


def test_cli_dense_model_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["estimate", "llama-3.1-8b", "--offload-experts", "all"])
    err = capsys.readouterr().err.strip().splitlines()
    assert info.value.code == 2 and len(err) == 1 and "--offload-experts" in err[0] and "dense" in err[0]


def test_other_engines_are_warned_that_this_is_llama_cpp_behaviour() -> None:
    e = estimate(**{**MOE, "hw": "h100-sxm"}, engine="vllm", offload_experts=8)
    assert any("--n-cpu-moe" in w for w in estimate_warnings(e))
    assert not any("--n-cpu-moe" in w for w in estimate_warnings(estimate(**MOE, offload_experts=8)))


def test_advice_speaks_of_experts() -> None:
    e = estimate("qwen3-30b-a3b", "rtx-4090", quant="q4_k_m", offload_experts="all")
    assert e.advice is not None and e.advice.kind == "no-offload-needed" and e.advice.expert_layers
    text = " ".join(estimate_json(e)["warnings"])
    assert "experts of" in text and "None" not in text


README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_worked_example_is_current() -> None:
    """The gpt-oss-120b table in the README is what `estimate` says now, prefill column included."""
    sys.path.insert(0, str(README.parent / "scripts"))
    try:
        import offload_example
    finally:
        sys.path.pop(0)
    block = offload_example.render()
    assert "(fewest that fit)" in block and "does not fit" in block
    assert block in README.read_text(encoding="utf-8"), "run `python scripts/offload_example.py`"


def test_each_part_dispatches_its_own_routed_experts() -> None:
    """The per-routed-expert cost (tau_expert) follows the layers: with one layer of 48 on the CPU, a MoE
    model still pays 47/48 of the GPU's dispatch, so it is never faster than with all 48 on the GPU
    (before the fix, 47 layers read 222 tok/s against 201 for all of them)."""
    setup = dict(model="qwen3-30b-a3b", hw="h100-sxm", engine="llama.cpp", quant="q2_k", context_tokens=0)
    full = estimate(**setup)
    assert full.efficiency.expert_overhead_us > 0  # the shipped fit charges a dispatch cost on this engine
    speeds = [p.estimate_tok_s for p in estimate_curves(estimate(**setup, gpu_layers=0, cpu_hw="ddr5-dual-channel")).offload]
    assert all(b >= a * (1 - 1e-12) for a, b in zip(speeds, speeds[1:], strict=False))
    assert speeds[-1] == pytest.approx(full.estimate_tok_s, rel=1e-12)
