"""The serving simulator: conservation, determinism, schedulers, KV limits, stats, consistency with decode_step."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from tokometer.costmodel.roofline import decode_step, prefill
from tokometer.costmodel.serving import (
    LengthDist,
    SchedulerPolicy,
    ServingEfficiency,
    StreamStat,
    Workload,
    fixed,
    kv_capacity_tokens,
    simulate,
    step_cost,
)
from tokometer.costmodel.serving.engine import StepRecord
from tokometer.domain.units import TFLOP
from tokometer.errors import InputError
from tokometer.usecases.estimate import estimate

EFF = ServingEfficiency(compute_fraction_max=0.6, compute_half_tokens=64.0, layer_step_overhead_us=30.0)
VLLM = SchedulerPolicy(engine="vllm", max_num_seqs=256, max_num_batched_tokens=8192)


@pytest.fixture(scope="module")
def setup():  # type: ignore[no-untyped-def]
    return estimate("llama-3.1-8b", "h100-sxm", quant="bf16", engine="vllm", advise=False).setup


@pytest.fixture(scope="module")
def cost(setup):  # type: ignore[no-untyped-def]
    return step_cost(setup, EFF)


def test_every_request_completes_and_tokens_are_conserved(cost) -> None:  # type: ignore[no-untyped-def]
    wl = Workload(arrival="offline", num_requests=500, prompt=LengthDist("uniform", 10, 900), output=LengthDist("uniform", 1, 300))
    r = simulate(cost, VLLM, 1e6, wl, seed=3)
    rng = random.Random(3)
    expected = sum((wl.prompt.sample(rng), wl.output.sample(rng))[1] for _ in range(500))
    assert r.completed == 500 and r.rejected == 0
    assert r.tput_out_tok_s * r.duration_s == pytest.approx(expected, rel=1e-9)
    assert r.ttft_s.n == 500 and r.e2e_s.n == 500


def test_deterministic_under_a_seed(cost) -> None:  # type: ignore[no-untyped-def]
    wl = Workload(arrival="poisson", num_requests=400, rate_per_s=20.0, prompt=LengthDist("lognormal", 500, 0.5), output=fixed(100))
    a = simulate(cost, VLLM, 1e6, wl, seed=7)
    b = simulate(cost, VLLM, 1e6, wl, seed=7)
    c = simulate(cost, VLLM, 1e6, wl, seed=8)
    assert a == b
    assert a.ttft_s.mean != c.ttft_s.mean


def test_step_cost_matches_the_single_decode_step(setup) -> None:  # type: ignore[no-untyped-def]
    """A decode-only step of B sequences at depth c reads what `decode_step` says it reads."""
    cost = step_cost(setup, replace(EFF, layer_step_overhead_us=0.0))
    b, c = 32, 1000
    single = decode_step(setup.model, setup.weights, setup.hardware, setup.efficiency, batch=b, depth_tokens=c,
                         kv_bytes_per_element=setup.kv_bytes_per_element, peak=setup.peak)
    weights_s, _, kv_s, _, fixed_s = cost.split(b, b * c, b * c)
    assert weights_s + kv_s == pytest.approx(single.memory_time_s, rel=1e-6)
    # the fitted serving step overhead (0 here) replaces the single-stream tau_step; tau_layer stays
    tau_step_s = setup.efficiency.step_overhead_us * 1e-6
    assert fixed_s == pytest.approx(single.overhead_time_s - tau_step_s, rel=1e-6)
    # the engine's step overhead is paid once per layer of the step
    charged = step_cost(setup, replace(EFF, layer_step_overhead_us=30.0)).split(b, b * c, b * c)[4]
    assert charged - fixed_s == pytest.approx(setup.model.n_layers * 30e-6, rel=1e-9)


@pytest.mark.parametrize(("hw", "quant", "engine"), [("rtx-4090", "q4_k_m", "llama.cpp"), ("m2-ultra", "q8_0", "llama.cpp")])
def test_every_single_stream_memory_term_is_charged_by_the_serving_step(hw: str, quant: str, engine: str) -> None:
    """The KV stream's own efficiency, inline ECC and the unfused score traffic of the single-stream decode
    are the serving step's too: one formula for a decode step of B at depth c (issue #25), but for the
    batch-1 matvec's shader-ALU term, which a serving step's tensor-core GEMMs do not pay (cost.py)."""
    setup = estimate("llama-3.1-8b", hw, quant=quant, engine=engine, advise=False).setup
    eff = setup.efficiency
    assert eff.kv_fraction_for(setup.quantized) != eff.bandwidth_fraction_for(setup.quantized)  # the term told apart
    for b, c in ((1, 0), (8, 4000), (64, 500)):
        single = decode_step(setup.model, setup.weights, setup.hardware, eff, batch=b, depth_tokens=c,
                             kv_bytes_per_element=setup.kv_bytes_per_element, peak=setup.peak, quantized=setup.quantized)
        weights_s, _, kv_s, _, _ = step_cost(setup, EFF).split(b, b * c, b * c)
        assert weights_s + kv_s == pytest.approx(single.memory_time_s - single.alu_time_s, rel=1e-9)


def test_a_prefill_only_step_computes_its_gemms_as_single_stream_prefill_does(setup) -> None:  # type: ignore[no-untyped-def]
    """Without a fitted prompt plateau, a step of one 2048-token prompt runs its GEMMs at the single-stream
    prefill efficiency (docs/PHYSICS.md section 5); a fitted plateau scales prompt tokens only."""
    physics = step_cost(setup, EFF)
    c = 2048
    single = prefill(setup.model, setup.weights, setup.hardware, setup.efficiency, c, setup.peak, setup.quantized)
    assert single is not None
    assert physics.gemm_s(c, prefill_tokens=c) == pytest.approx(
        single.matmul_flops / (single.efficiency * setup.peak.tflops * TFLOP), rel=1e-9)
    fitted = step_cost(setup, replace(EFF, prefill_fraction_max=0.35))
    ratio = setup.efficiency.prefill_max_for(setup.quantized) / 0.35
    assert fitted.gemm_s(c, prefill_tokens=c) == pytest.approx(ratio * physics.gemm_s(c, prefill_tokens=c), rel=1e-9)
    assert fitted.gemm_s(256) == pytest.approx(physics.gemm_s(256), rel=1e-12)  # decodes keep eta_c
    assert fitted.gemm_s(c, prefill_tokens=c / 2) > physics.gemm_s(c, prefill_tokens=c / 2)


def test_a_compute_bound_gemm_does_not_hide_the_kv_stream(setup) -> None:  # type: ignore[no-untyped-def]
    """A big decode batch deep in context: the GEMMs compute, attention streams the KV; the step is both, summed."""
    cost = step_cost(setup, replace(EFF, layer_step_overhead_us=0.0))
    b, c = 512, 4000
    weights_s, matmul_s, kv_s, attention_s, fixed_s = cost.split(b, b * c, b * c)
    assert matmul_s > weights_s and kv_s > attention_s  # each part bound by a different resource
    assert cost.time_s(b, b * c, b * c) == pytest.approx(matmul_s + kv_s + fixed_s, rel=1e-9)
    assert cost.time_s(b, b * c, b * c) > max(weights_s + kv_s, matmul_s + attention_s) + fixed_s


def test_the_simulator_charges_the_step_cost_model(setup) -> None:  # type: ignore[no-untyped-def]
    """One batch of requests: the engine's inlined step time equals `StepCost.time_s` step by step,
    the per-sequence cost charged for every sequence that emits a token."""
    cost = step_cost(setup, replace(EFF, sequence_overhead_us=50.0))
    record: list[StepRecord] = []
    r = simulate(cost, VLLM, 1e6, Workload(num_requests=64, prompt=fixed(500), output=fixed(20)), record=record)
    expected = sum(cost.time_s(t, kv, pairs, dec + first, t - dec) for t, kv, pairs, dec, first, _ in record)
    assert r.duration_s == pytest.approx(expected, rel=1e-9)
    assert r.duration_s > sum(cost.time_s(t, kv, pairs, 0.0, t - dec) for t, kv, pairs, dec, _, _ in record) + 64 * 20 * 49e-6


def test_batch_never_exceeds_max_num_seqs_and_budget(cost) -> None:  # type: ignore[no-untyped-def]
    record: list[StepRecord] = []
    pol = replace(VLLM, max_num_seqs=16, max_num_batched_tokens=512)
    simulate(cost, pol, 1e6, Workload(num_requests=100, prompt=fixed(1000), output=fixed(50)), record=record)
    assert record and max(step[0] for step in record) <= 512
    assert max(step[3] for step in record) <= 16


def test_kv_capacity_limits_the_batch_and_preempts(cost) -> None:  # type: ignore[no-untyped-def]
    wl = Workload(num_requests=200, prompt=fixed(100), output=fixed(1000))
    roomy = simulate(cost, VLLM, 1e7, wl)
    tight = simulate(cost, VLLM, 20_000.0, wl)
    assert roomy.preemptions == 0
    assert tight.preemptions > 0
    assert tight.mean_batch < roomy.mean_batch
    assert tight.completed == 200
    assert tight.tput_out_tok_s < roomy.tput_out_tok_s


def test_static_batches_wait_for_the_whole_batch(cost) -> None:  # type: ignore[no-untyped-def]
    pol = SchedulerPolicy(engine="static", max_num_seqs=8, max_num_batched_tokens=1 << 20, chunked_prefill=False,
                          mixed_batches=False, static=True)
    r = simulate(cost, pol, 1e6, Workload(num_requests=16, prompt=fixed(128), output=LengthDist("uniform", 10, 100)))
    # two batches: the second batch's TTFT includes the whole first batch
    assert r.ttft_s.max > 10 * r.ttft_s.min
    assert r.steps <= 2 * (1 + 99)


def test_sglang_style_prefill_pauses_decodes(cost) -> None:  # type: ignore[no-untyped-def]
    record: list[StepRecord] = []
    pol = replace(VLLM, mixed_batches=False)
    simulate(cost, pol, 1e6, Workload(arrival="poisson", rate_per_s=30, num_requests=200, prompt=fixed(800), output=fixed(50)), record=record)
    prefill_steps = [s for s in record if s[4] > 0]
    assert prefill_steps and all(s[3] == 0 for s in prefill_steps)


def test_closed_loop_keeps_at_most_n_in_flight(cost) -> None:  # type: ignore[no-untyped-def]
    r = simulate(cost, VLLM, 1e6, Workload(arrival="closed", concurrency=8, num_requests=300, prompt=fixed(200), output=fixed(64)))
    assert r.completed == 300
    assert r.mean_batch <= 8.0 + 1e-9


def test_replicas_split_the_load(cost) -> None:  # type: ignore[no-untyped-def]
    wl = Workload(arrival="poisson", rate_per_s=12, num_requests=2000, prompt=fixed(1000), output=fixed(200))
    one = simulate(cost, VLLM, 1e6, wl, seed=1)
    two = simulate(cost, VLLM, 1e6, replace(wl, rate_per_s=24), replicas=2, router="least-outstanding", seed=1)
    assert two.req_per_s == pytest.approx(2 * one.req_per_s, rel=0.1)
    assert two.ttft_s.p50 == pytest.approx(one.ttft_s.p50, rel=0.5)


def test_more_load_means_more_latency(cost) -> None:  # type: ignore[no-untyped-def]
    lat = [simulate(cost, VLLM, 1e6, Workload(arrival="poisson", rate_per_s=r, num_requests=1500, prompt=fixed(1000), output=fixed(200)), seed=2).e2e_s.mean for r in (2, 10, 20)]
    assert lat[0] < lat[1] < lat[2]


def test_too_long_requests_are_rejected_and_counted(cost) -> None:  # type: ignore[no-untyped-def]
    trace = ((0.0, 100, 10), (0.1, 9000, 10), (0.2, 100, 10))
    r = simulate(cost, VLLM, 1e6, Workload(arrival="trace", trace=trace), max_context_tokens=8192)
    assert (r.completed, r.rejected) == (2, 1)


def test_kv_capacity_follows_the_engine_memory_rule(setup) -> None:  # type: ignore[no-untyped-def]
    total = kv_capacity_tokens(setup, memory_fraction=0.9, memory_of="total", runtime_overhead_gb=1.5)
    free = kv_capacity_tokens(setup, memory_fraction=0.9, memory_of="free", runtime_overhead_gb=1.5)
    weights = setup.weights.total
    per_token = 2 * 8 * 128 * 32 * 2  # K+V, 8 KV heads x 128, 32 layers, fp16
    assert total == pytest.approx((80e9 * 0.9 - weights - 1.5e9) / per_token)
    assert free == pytest.approx((80e9 - weights - 1.5e9) * 0.9 / per_token)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_rates_are_refused(bad: float) -> None:
    with pytest.raises(InputError, match="--rate"):
        Workload(arrival="poisson", rate_per_s=bad)


@pytest.mark.parametrize("trace", [((1.0, 10, 10), (0.5, 10, 10)), ((-1.0, 10, 10),), ((0.0, 10, 0),)])
def test_bad_traces_are_refused(trace) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match="trace request"):
        Workload(arrival="trace", trace=trace)


def test_a_billion_requests_is_a_clear_refusal(cost) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match="more than the simulator takes"):
        simulate(cost, VLLM, 1e6, Workload(num_requests=10**9))


def test_stream_percentiles_within_one_percent() -> None:
    rng = random.Random(0)
    values = [rng.lognormvariate(0, 1) for _ in range(20_000)]
    stat = StreamStat()
    for v in values:
        stat.add(v)
    ordered = sorted(values)
    for q in (0.5, 0.9, 0.99):
        exact = ordered[int(q * len(ordered)) - 1]
        assert stat.quantile(q) == pytest.approx(exact, rel=0.015)
    assert stat.mean == pytest.approx(sum(values) / len(values))
    assert len(stat.buckets) < 2000


@pytest.mark.parametrize("scale", [1.5, 2.0, 4.0])
def test_more_bandwidth_is_never_slower(setup, scale: float) -> None:  # type: ignore[no-untyped-def]
    wl = Workload(num_requests=300, prompt=LengthDist("uniform", 50, 2000), output=LengthDist("uniform", 10, 400))
    base = simulate(step_cost(setup, EFF), VLLM, 1e6, wl, seed=5)
    fast_hw = replace(setup.hardware, memory_bandwidth_gb_per_s=setup.hardware.memory_bandwidth_gb_per_s * scale)
    fast = simulate(step_cost(replace(setup, hardware=fast_hw), EFF), VLLM, 1e6, wl, seed=5)
    assert fast.tput_out_tok_s >= base.tput_out_tok_s
    assert (fast.e2e_s.mean or 0) <= (base.e2e_s.mean or 0)


def test_serving_engine_catalog_is_sourced_and_strict(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tokometer.catalog.serving import serving_engine, serving_engines
    from tokometer.errors import CatalogError

    table = serving_engines()
    assert {"vllm", "sglang", "tensorrt-llm", "lmdeploy", "llama-cpp", "static"} <= set(table)
    assert all(e.policy.source.startswith(("http", "static")) for e in table.values())
    assert serving_engine("trtllm", max_num_seqs=7).policy.max_num_seqs == 7
    bad = tmp_path / "serving_engines.toml"
    bad.write_text(
        '[x]\nengine = "vllm"\nsource = "s"\nmax_num_seqs = 1\nmax_num_batched_tokens = 1\n'
        'memory_fraction = 0.9\nmemory_of = "total"\nspeed = 3\n',
        encoding="utf-8",
    )
    with pytest.raises(CatalogError, match="unknown key 'speed'"):
        serving_engines.__wrapped__(bad)
    with pytest.raises(InputError, match="max_num_seqs"):
        serving_engine("vllm", max_num_seqs=0)


def test_multi_step_scheduling_streams_tokens_in_bursts(cost) -> None:  # type: ignore[no-untyped-def]
    wl = Workload(arrival="poisson", rate_per_s=4, num_requests=300, prompt=fixed(300), output=fixed(200))
    one = simulate(cost, VLLM, 1e6, wl, seed=2)
    ten = simulate(cost, replace(VLLM, scheduler_steps=10), 1e6, wl, seed=2)
    assert ten.itl_s.p50 == pytest.approx(10 * one.itl_s.p50, rel=0.3)
    assert ten.tpot_s.mean == pytest.approx(one.tpot_s.mean, rel=0.2)
    assert ten.ttft_s.mean > one.ttft_s.mean  # a new request waits for the scheduler's next turn


def test_tensor_parallel_steps_pay_the_cheaper_all_reduce_protocol() -> None:
    from tokometer.costmodel.links import allreduce_time_s

    tp4 = estimate("llama-2-70b", "a100-80gb-sxm", quant="fp16", engine="vllm", tp=4, advise=False).setup
    assert tp4 is not None and tp4.layout.link is not None
    cost = step_cost(tp4, EFF)
    per_step = 2 * tp4.model.n_layers
    protocols = set()
    for tokens in (1, 64, 8192):  # a decode step, a batch of decodes, a prefill chunk
        payload = tokens * tp4.model.hidden_size * 2
        assert cost.comm_s(tokens) == pytest.approx(per_step * allreduce_time_s(payload, 4, tp4.layout.link))
        low = cost.comm_fixed_s + cost.comm_per_token_s * tokens
        protocols.add("low-latency" if cost.comm_s(tokens) == pytest.approx(low) else "bulk")
    assert protocols == {"low-latency", "bulk"}
    one = estimate("llama-3.1-8b", "h100-sxm", advise=False).setup
    assert one is not None and step_cost(one, EFF).comm_s(64) == 0.0
