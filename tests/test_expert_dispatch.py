"""The routed-expert fixed cost tau_expert (docs/PHYSICS.md section 4, "Routed-expert dispatch"):
what it adds to a decode step and a prefill chunk, that dense models never pay it, and that the fit
recovers it from rows that carry it and leaves it at its prior (0) where none do."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from tokometer.catalog import hardware_catalog, make_efficiency, model_catalog
from tokometer.costmodel.layout import IDEAL
from tokometer.costmodel.roofline import Peak, decode_step, expert_dispatch_time_s, prefill
from tokometer.errors import CatalogError
from tokometer.fitting.calibration import fit_decode
from tokometer.fitting.features import Features, predicted_time

MOE = model_catalog().get("qwen3-30b-a3b").spec
DENSE = model_catalog().get("llama-3-70b").spec
BASE = replace(IDEAL, bandwidth_fraction=0.8, layer_overhead_us=20.0, step_overhead_us=300.0)
HW = hardware_catalog().get("m3-max-40c-64gb")


def test_expert_slots_are_k_per_moe_layer_at_batch_one_and_all_experts_for_a_long_chunk() -> None:
    assert MOE.is_moe and MOE.n_experts_per_token > 0
    assert MOE.expert_slots(1) == pytest.approx(MOE.n_layers * MOE.n_experts_per_token)
    assert MOE.expert_slots(2048) == pytest.approx(MOE.n_layers * MOE.n_experts, rel=1e-3)
    assert DENSE.expert_slots(1) == 0.0 and DENSE.expert_slots(512) == 0.0


def test_decode_step_pays_tau_expert_per_routed_expert_it_runs() -> None:
    eff = replace(BASE, expert_overhead_us=10.0)
    with_term = decode_step(MOE, MOE.params, HW, eff, peak=Peak(None, None))
    without = decode_step(MOE, MOE.params, HW, BASE, peak=Peak(None, None))
    want = 10.0e-6 * MOE.n_layers * MOE.n_experts_per_token
    assert with_term.time_s - without.time_s == pytest.approx(want)
    assert with_term.overhead_time_s - without.overhead_time_s == pytest.approx(want)
    assert with_term.memory_time_s == without.memory_time_s  # a fixed cost, not bytes
    # a dense model has no routed experts: the term costs it nothing
    dense_on = decode_step(DENSE, DENSE.params, HW, eff, peak=Peak(None, None))
    dense_off = decode_step(DENSE, DENSE.params, HW, BASE, peak=Peak(None, None))
    assert dense_on.time_s == pytest.approx(dense_off.time_s)
    # a batch touches more distinct experts, each run once per step
    batch8 = expert_dispatch_time_s(MOE, eff, 8)
    assert want < batch8 < 8 * want


def test_prefill_pays_it_once_per_chunk_for_the_experts_the_chunk_touches() -> None:
    eff = replace(BASE, expert_overhead_us=10.0, prefill_chunk_tokens=512)
    peak = Peak(HW.fp16_tflops, "fp16")
    on = prefill(MOE, MOE.params, HW, eff, 2048, peak)
    off = prefill(MOE, MOE.params, HW, replace(eff, expert_overhead_us=0.0), 2048, peak)
    assert on is not None and off is not None
    assert on.n_chunks == 4
    assert on.time_s - off.time_s == pytest.approx(4 * 10.0e-6 * MOE.expert_slots(512))


def test_a_grouped_moe_kernel_pays_one_tokens_experts_whatever_the_decode_batch() -> None:
    eff = replace(BASE, expert_overhead_us=10.0, prefill_chunk_tokens=512)
    grouped = replace(eff, grouped_experts=True)
    one = expert_dispatch_time_s(MOE, eff, 1)
    assert expert_dispatch_time_s(MOE, grouped, 1) == pytest.approx(one)
    for tokens in (8, 256, 512):
        assert expert_dispatch_time_s(MOE, grouped, tokens) == pytest.approx(one)
        assert expert_dispatch_time_s(MOE, eff, tokens) > 2 * one
    # a prefill chunk pays one token's experts too (its small expert GEMMs are in the matmul time, as in the
    # serving step); an engine that runs experts one by one pays every expert the chunk touches
    peak = Peak(HW.fp16_tflops, "fp16")
    for e, slots in ((grouped, MOE.expert_slots(1)), (eff, MOE.expert_slots(512))):
        on = prefill(MOE, MOE.params, HW, e, 2048, peak)
        off = prefill(MOE, MOE.params, HW, replace(e, expert_overhead_us=0.0), 2048, peak)
        assert on is not None and off is not None
        assert on.time_s - off.time_s == pytest.approx(on.n_chunks * 10.0e-6 * slots)


def test_server_engines_run_grouped_moe_kernels_and_llama_cpp_does_not() -> None:
    from tokometer.catalog import engine_catalog
    from tokometer.catalog.efficiency import efficiency_for

    h200 = hardware_catalog().get("h200")
    for engine_id, grouped in (("vllm", True), ("sglang", True), ("tensorrt-llm", True), ("llama-cpp", False), ("mlx", False)):
        engine = engine_catalog().get(engine_id)
        assert engine.grouped_moe_kernel is grouped, engine_id
        assert efficiency_for(engine, h200).grouped_experts is grouped, engine_id


def test_a_batched_deepseek_step_on_a_server_engine_is_not_charged_per_expert() -> None:
    """The estimate's batching curve for DeepSeek-R1 on 8 H200 under vLLM: at batch 256 nearly every expert
    is read, and a per-expert fixed cost would make the step ~400 ms (628 tok/s, a tenth of what the serving
    simulator and published runs give); charged per MoE layer, the step stays within 2x of batch 64's."""
    from tokometer.api.predict import estimate

    d = estimate("deepseek-r1", "h200", quant="fp8", tp=8, engine="vllm").to_dict()
    curve = {p["batch"]: p for p in d["batching"]["curve"]}
    assert curve[256]["aggregate_tok_s"] > 3_000
    assert curve[256]["aggregate_tok_s"] > 2 * curve[64]["aggregate_tok_s"] * 0.8


def test_catalog_rejects_a_negative_expert_cost() -> None:
    raw = {"bandwidth_fraction": 0.8, "layer_overhead_us": 10.0, "step_overhead_us": 100.0, "prefill_efficiency_max": 0.5, "prefill_half_tokens": 100.0}
    assert make_efficiency({**raw, "expert_overhead_us": 4.0}, "test", "x").expert_overhead_us == 4.0
    with pytest.raises(CatalogError, match="expert_overhead_us"):
        make_efficiency({**raw, "expert_overhead_us": -1.0}, "test", "x")


def _rows(truth_us: float, moe_share: float, seed: int) -> list[Features]:
    rng = random.Random(seed)
    truth = replace(BASE, bandwidth_fraction=0.85, expert_overhead_us=truth_us)
    rows = []
    for _ in range(80):
        moe = rng.random() < moe_share
        f = Features(
            case=None,  # type: ignore[arg-type]
            group="mlx/metal/apple",
            engine_id="mlx",
            backend="metal",
            hardware_id="x",
            prior=BASE,
            t_measured_s=1.0,
            memory_s=rng.uniform(2e-3, 5e-2),
            n_layers=rng.choice([28, 40, 48]),
            expert_s=rng.choice([240, 320, 480]) * 1e-6 if moe else 0.0,
        )
        t = predicted_time(replace(f, case=type("C", (), {"metric": "tg"})()), truth)  # type: ignore[arg-type]
        rows.append(replace(f, t_measured_s=t))
    return rows


def test_fit_recovers_tau_expert_from_moe_rows() -> None:
    fitted = fit_decode(_rows(9.0, 0.4, 3), BASE, units=(None,))
    assert fitted["expert_overhead_us"] == pytest.approx(9.0, rel=0.1)
    assert fitted["bandwidth_fraction"] == pytest.approx(0.85, rel=0.03)


def test_without_moe_rows_the_fit_keeps_the_prior_of_zero() -> None:
    fitted = fit_decode(_rows(9.0, 0.0, 4), BASE, units=(None,))
    assert fitted["expert_overhead_us"] == 0.0
