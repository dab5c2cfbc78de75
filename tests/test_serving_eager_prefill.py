"""The eager-prefill host floor (`SchedulerPolicy.eager_prefill_layer_us`): a step that carries prompt
tokens takes at least `n_layers` x the engine's host time per layer of a MoE model, once per step
(not per request), never on a decode step, never for a dense model, zero for engines that capture
prefill (docs/PHYSICS.md, "Eager-prefill host floor")."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tokometer.catalog.serving import check_policy, serving_engines
from tokometer.costmodel.serving import (
    SchedulerPolicy,
    ServingEfficiency,
    Workload,
    fixed,
    simulate,
    step_cost,
)
from tokometer.costmodel.serving.disagg import Disagg, simulate_disagg
from tokometer.costmodel.serving.engine import StepRecord
from tokometer.errors import InputError
from tokometer.usecases.estimate import estimate

EFF = ServingEfficiency(compute_fraction_max=0.6, compute_half_tokens=64.0, layer_step_overhead_us=30.0)
HOST_US = 2000.0
SGL = SchedulerPolicy(engine="sglang", max_num_seqs=256, max_num_batched_tokens=8192, mixed_batches=False)
EAGER = replace(SGL, eager_prefill_layer_us=HOST_US)


def _setup(model: str):  # type: ignore[no-untyped-def]
    setup = estimate(model, "h100-sxm", quant="bf16", engine="sglang", advise=False).setup
    assert setup is not None
    return setup


@pytest.fixture(scope="module")
def moe():  # type: ignore[no-untyped-def]
    setup = _setup("qwen3-30b-a3b")
    assert setup.model.is_moe
    return setup, step_cost(setup, EFF), step_cost(setup, EFF, eager_prefill_layer_us=HOST_US)


def users(n: int, prompt: int = 16, output: int = 32) -> Workload:
    return Workload(arrival="closed", concurrency=n, num_requests=n, prompt=fixed(prompt), output=fixed(output))


def test_the_floor_is_layers_times_host_time_for_moe_and_zero_for_dense(moe) -> None:  # type: ignore[no-untyped-def]
    setup, _, eager = moe
    assert eager.eager_prefill_s == pytest.approx(setup.model.n_layers * HOST_US * 1e-6)
    dense = step_cost(_setup("llama-3.1-8b"), EFF, eager_prefill_layer_us=HOST_US)
    assert dense.eager_prefill_s == 0.0


def test_time_s_floors_prefill_steps_only(moe) -> None:  # type: ignore[no-untyped-def]
    _, base, eager = moe
    # a 16-token prompt is host-bound: the floor, which is above the roofline
    assert base.time_s(16, 0.0, 128.0, 1, prefill_tokens=16) < eager.eager_prefill_s
    assert eager.time_s(16, 0.0, 128.0, 1, prefill_tokens=16) == pytest.approx(eager.eager_prefill_s)
    # a decode step of 16 sequences is not charged (decode runs in its captured CUDA graph)
    assert eager.time_s(16, 16 * 500.0, 16 * 500.0, 16) == base.time_s(16, 16 * 500.0, 16 * 500.0, 16)
    # a prompt whose GPU work exceeds the floor costs its roofline: the floor is a max, not a sum
    big = 64 * 1024
    long_s = base.time_s(big, 0.0, big * big / 2.0, 1, prefill_tokens=big)
    assert long_s > eager.eager_prefill_s
    assert eager.time_s(big, 0.0, big * big / 2.0, 1, prefill_tokens=big) == long_s


def test_one_client_ttft_is_the_floor_and_tpot_does_not_move(moe) -> None:  # type: ignore[no-untyped-def]
    _, base, eager = moe
    r0 = simulate(base, SGL, 1e6, users(1))
    r1 = simulate(eager, EAGER, 1e6, users(1))
    assert r0.ttft_s.mean < eager.eager_prefill_s
    assert r1.ttft_s.mean == pytest.approx(eager.eager_prefill_s, rel=1e-9)
    assert r1.tpot_s.mean == pytest.approx(r0.tpot_s.mean, rel=1e-9)


def test_charged_once_per_prefill_step_not_per_request(moe) -> None:  # type: ignore[no-untyped-def]
    """Eight prompts arriving together are prefilled in one step: each sees one floor, not eight."""
    _, _, eager = moe
    record: list[StepRecord] = []
    r = simulate(eager, EAGER, 1e6, users(8), record=record)
    prefill_steps = [s for s in record if s[0] > s[3]]  # steps with prompt tokens
    assert len(prefill_steps) == 1 and prefill_steps[0][5] == 8
    assert r.ttft_s.max == pytest.approx(eager.eager_prefill_s, rel=1e-9)
    decode_only = eager.time_s(8, 8 * 16.0, 8 * 16.0, 8)
    assert r.ttft_s.max < 2 * eager.eager_prefill_s + decode_only


def test_the_disaggregated_decode_pool_is_not_floored(moe) -> None:  # type: ignore[no-untyped-def]
    """The decode pool receives the KV and computes the first token inside its captured decode: only
    the prefill pool pays the floor, so TTFT grows by about one floor, not two."""
    _, base, eager = moe
    pools = Disagg(prefill_replicas=1, decode_replicas=1, kv_bytes_per_token=0.0, link_bytes_per_s=1e12,
                   link_latency_s=0.0)
    r0 = simulate_disagg(base, SGL, 1e6, users(1), pools)
    r1 = simulate_disagg(eager, EAGER, 1e6, users(1), pools)
    grown = r1.ttft_s.mean - r0.ttft_s.mean
    # the prefill pool's 16-token step is raised to the floor; the decode pool's first-token step is not
    assert grown == pytest.approx(eager.eager_prefill_s - base.time_s(16, 0.0, 128.0, 1, prefill_tokens=16), rel=1e-6)


def test_shipped_priors_sglang_sourced_and_graph_capturing_engines_zero() -> None:
    engines = serving_engines()
    sglang = engines["sglang"].policy
    assert sglang.eager_prefill_layer_us > 0 and sglang.graphed_step_tokens == 0  # every prefill eager
    assert "sglang/pull/12160" in sglang.source
    vllm = engines["vllm"].policy  # eager only above its largest CUDA-graph capture size
    assert vllm.eager_prefill_layer_us > 0 and vllm.graphed_step_tokens == 512
    assert "tt-inference-server/issues/356" in vllm.source
    for name in ("lmdeploy", "llama-cpp", "static"):
        assert engines[name].policy.eager_prefill_layer_us == 0.0, name


def test_steps_inside_the_graph_size_are_not_floored(moe) -> None:  # type: ignore[no-untyped-def]
    """vLLM V1 replays prompt-carrying steps of up to its largest capture size from CUDA graphs: a
    400-token prompt costs its roofline, a 1,000-token one the eager floor; simulated TTFT follows."""
    setup, base, _ = moe
    graphed = step_cost(setup, EFF, eager_prefill_layer_us=HOST_US, graphed_step_tokens=512)
    for n in (16, 400, 512):
        assert graphed.time_s(n, 0.0, n * n / 2.0, 1, prefill_tokens=n) == base.time_s(n, 0.0, n * n / 2.0, 1, prefill_tokens=n)
    assert base.time_s(1000, 0.0, 5e5, 1, prefill_tokens=1000) < graphed.eager_prefill_s
    assert graphed.time_s(1000, 0.0, 5e5, 1, prefill_tokens=1000) == pytest.approx(graphed.eager_prefill_s)
    policy = replace(EAGER, graphed_step_tokens=512)
    short = simulate(graphed, policy, 1e6, users(1, prompt=400))
    assert short.ttft_s.mean == pytest.approx(simulate(base, SGL, 1e6, users(1, prompt=400)).ttft_s.mean, rel=1e-9)
    long = simulate(graphed, policy, 1e6, users(1, prompt=1000))
    assert long.ttft_s.mean == pytest.approx(graphed.eager_prefill_s, rel=1e-9)


def test_a_negative_graph_size_is_refused() -> None:
    with pytest.raises(InputError, match="CUDA-graphed step"):
        check_policy(replace(SGL, graphed_step_tokens=-1))


def test_a_negative_host_time_is_refused() -> None:
    with pytest.raises(InputError, match="eager prefill"):
        check_policy(replace(SGL, eager_prefill_layer_us=-1.0))


def test_plan_charges_the_floor_to_a_lone_request_not_to_each_batched_prompt() -> None:
    """`plan.bounds`: the TTFT floor of a request alone includes the host floor; the prefill work per
    request that sets the saturation rate does not (prompts batched in one step share it)."""
    from tokometer.usecases.plan import bounds
    from tokometer.usecases.simulate import deploy

    dep = deploy("qwen3-30b-a3b", "h100-sxm", quant="bf16", engine="sglang")
    assert dep.cost.eager_prefill_s > 0
    plain = replace(dep, cost=replace(dep.cost, eager_prefill_s=0.0))
    with_floor, without = bounds(dep, 64, 256, 0.05), bounds(plain, 64, 256, 0.05)
    assert with_floor.ttft_floor_s == pytest.approx(dep.cost.eager_prefill_s)
    assert without.ttft_floor_s < with_floor.ttft_floor_s
    assert with_floor.prefill_s == pytest.approx(without.prefill_s)
