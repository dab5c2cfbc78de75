"""The serving stack's per-request latency (`SchedulerPolicy.request_latency_ms`): charged once per
request, before the scheduler has it, never per step; zero where an engine's prior is zero (every
shipped engine but TensorRT-LLM: docs/PHYSICS.md, "Big-MoE TTFT")."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tokometer.catalog.serving import serving_engine, serving_engines
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
VLLM = SchedulerPolicy(engine="vllm", max_num_seqs=256, max_num_batched_tokens=8192)
LAG = replace(VLLM, request_latency_ms=40.0)


@pytest.fixture(scope="module")
def cost():  # type: ignore[no-untyped-def]
    setup = estimate("llama-3.1-8b", "h100-sxm", quant="bf16", engine="vllm", advise=False).setup
    return step_cost(setup, EFF)


def one_user(n: int = 20, prompt: int = 1000, output: int = 64) -> Workload:
    return Workload(arrival="closed", concurrency=1, num_requests=n, prompt=fixed(prompt), output=fixed(output))


def test_ttft_at_one_client_is_the_prefill_step_plus_the_term(cost) -> None:  # type: ignore[no-untyped-def]
    """Alone on the engine, a request's TTFT is the step that prefills it and emits its first token,
    plus the stack's latency: nothing else waits."""
    record: list[StepRecord] = []
    r = simulate(cost, LAG, 1e6, one_user(n=1), record=record)
    tokens, kv, pairs, dec, completing, firsts = record[0]
    assert (tokens, dec, completing, firsts) == (1000, 0, 1, 1)
    prefill_step_s = cost.time_s(tokens, kv, pairs, dec + completing, tokens - dec)
    assert r.ttft_s.mean == pytest.approx(prefill_step_s + 0.040, rel=1e-9)
    assert r.ttft_s.mean > prefill_step_s + 0.039  # the term is there, not absorbed


def test_the_term_is_charged_once_per_request_not_per_step(cost) -> None:  # type: ignore[no-untyped-def]
    """Every TTFT and E2E grows by exactly the term whatever the output length (1 step or 300);
    TPOT and ITL, which count between tokens, do not move."""
    for output in (1, 300):
        base = simulate(cost, VLLM, 1e6, one_user(output=output))
        lag = simulate(cost, LAG, 1e6, one_user(output=output))
        assert lag.ttft_s.mean - base.ttft_s.mean == pytest.approx(0.040, rel=1e-6)
        assert lag.e2e_s.mean - base.e2e_s.mean == pytest.approx(0.040, rel=1e-6)
        assert lag.ttft_s.p99 - base.ttft_s.p99 == pytest.approx(0.040, rel=1e-3)
        if output > 1:
            assert lag.tpot_s.mean == pytest.approx(base.tpot_s.mean, rel=1e-12)
            assert lag.itl_s.mean == pytest.approx(base.itl_s.mean, rel=1e-12)


def test_a_closed_loop_keeps_its_phase(cost) -> None:  # type: ignore[no-untyped-def]
    """The scheduler sees a closed loop's requests when it saw them without the term (the same steps,
    the same queueing); only the first was sent a term earlier, so the run lasts one term longer."""
    base = simulate(cost, VLLM, 1e6, one_user())
    lag = simulate(cost, LAG, 1e6, one_user())
    assert lag.steps == base.steps and lag.queue_s == base.queue_s
    assert lag.duration_s - base.duration_s == pytest.approx(0.040, rel=1e-6)


def test_a_phase_locked_closed_loop_shifts_by_the_term_only(cost) -> None:  # type: ignore[no-untyped-def]
    """Eight users of 20k/2k tokens (VLLM-FP8KV's shape): the simulated loop phase-locks, and a delay
    between a finish and the next request would move whole prefill chunks in front of every request;
    the term must not, so the median TTFT moves by the term and no more."""
    wl = Workload(arrival="closed", concurrency=8, num_requests=40, prompt=fixed(20000), output=fixed(2000))
    base = simulate(cost, VLLM, 5e5, wl)
    lag = simulate(cost, LAG, 5e5, wl)
    assert lag.ttft_s.mean - base.ttft_s.mean == pytest.approx(0.040, rel=1e-6)
    assert lag.ttft_s.p50 == pytest.approx(base.ttft_s.p50 + 0.040, rel=0.01)  # a streamed percentile: within 1 %


def test_open_loop_queueing_is_untouched(cost) -> None:  # type: ignore[no-untyped-def]
    """Under a Poisson stream the scheduler sees the same arrivals: queueing and step times are the
    same run, and each TTFT is that run's plus the term."""
    wl = Workload(arrival="poisson", rate_per_s=30.0, num_requests=300, prompt=fixed(800), output=fixed(100))
    base = simulate(cost, VLLM, 1e6, wl, seed=5)
    lag = simulate(cost, LAG, 1e6, wl, seed=5)
    assert lag.queue_s == base.queue_s and lag.steps == base.steps
    assert lag.ttft_s.mean - base.ttft_s.mean == pytest.approx(0.040, rel=1e-6)
    assert lag.tput_out_tok_s < base.tput_out_tok_s  # the first request was sent a term earlier


def test_disaggregated_pools_charge_it_once(cost) -> None:  # type: ignore[no-untyped-def]
    """The front end sits before the prefill pool: the decode pool, which streams, adds nothing."""
    pools = Disagg(prefill_replicas=1, decode_replicas=1, kv_bytes_per_token=131072.0, link_bytes_per_s=100e9, link_latency_s=0.0)
    base = simulate_disagg(cost, VLLM, 1e6, one_user(), pools)
    lag = simulate_disagg(cost, LAG, 1e6, one_user(), pools)
    assert lag.ttft_s.mean - base.ttft_s.mean == pytest.approx(0.040, rel=1e-6)


def test_zero_where_the_prior_is_zero(cost) -> None:  # type: ignore[no-untyped-def]
    """An engine whose catalog prior is zero (all but TensorRT-LLM: no sourced prior passed the
    leave-one-source-out check) runs exactly as without the term; given one, it pays exactly it."""
    engines = serving_engines()
    assert {e.id for e in engines.values() if e.policy.request_latency_ms > 0} == {"tensorrt-llm"}
    wl = one_user(n=3)
    for e in engines.values():
        policy = replace(e.policy, max_num_seqs=8, max_num_batched_tokens=8192, contiguous_context_tokens=None)
        shipped = simulate(cost, policy, 1e6, wl)
        none = simulate(cost, replace(policy, request_latency_ms=0.0), 1e6, wl)
        if e.policy.request_latency_ms == 0.0:
            assert shipped == none
        paid = simulate(cost, replace(policy, request_latency_ms=6.9), 1e6, wl)
        assert paid.ttft_s.mean - none.ttft_s.mean == pytest.approx(0.0069, rel=1e-6)


def test_tensorrt_llm_pays_its_sourced_prior_on_every_ttft(cost) -> None:  # type: ignore[no-untyped-def]
    """TensorRT-LLM's prior (NVIDIA/TensorRT-LLM#5929's one-client TTFT read at 0 prompt tokens, 92 ms)
    lengthens each request's TTFT and E2E by exactly itself and leaves TPOT alone."""
    policy = serving_engine("tensorrt-llm").policy
    assert policy.request_latency_ms == pytest.approx(92.0)
    policy = replace(policy, max_num_seqs=8, contiguous_context_tokens=None)
    none = simulate(cost, replace(policy, request_latency_ms=0.0), 1e6, one_user(n=3))
    shipped = simulate(cost, policy, 1e6, one_user(n=3))
    assert shipped.ttft_s.mean - none.ttft_s.mean == pytest.approx(0.092, rel=1e-6)
    assert shipped.e2e_s.mean - none.e2e_s.mean == pytest.approx(0.092, rel=1e-6)
    assert shipped.tpot_s.mean == pytest.approx(none.tpot_s.mean, rel=1e-9)


def test_each_positive_prior_names_its_source() -> None:
    for e in serving_engines().values():
        if e.policy.request_latency_ms > 0:
            assert "request_latency_ms: https://" in e.policy.source, e.id


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_a_bad_latency_is_refused(bad: float) -> None:
    with pytest.raises(InputError, match="request latency"):
        serving_engine("vllm", request_latency_ms=bad)


def test_the_catalog_refuses_a_bad_latency(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tokometer.errors import CatalogError

    path = tmp_path / "engines.toml"
    path.write_text('[x]\nengine = "vllm"\nmax_num_seqs = 8\nmax_num_batched_tokens = 512\nmemory_fraction = 0.9\n'
                    'memory_of = "total"\nrequest_latency_ms = "fast"\nsource = "test"\n', encoding="utf-8")
    with pytest.raises((CatalogError, InputError)):
        serving_engines.__wrapped__(path)


def test_simulate_says_when_ttft_carries_the_stack_latency(capsys) -> None:  # type: ignore[no-untyped-def]
    """The text report names the term and its size for an engine that ships one (TensorRT-LLM) and stays
    silent for one that does not (vLLM), so a TTFT is never padded without saying why."""
    from helpers import cli

    args = ["deepseek-r1", "--hw", "h200", "--tp", "8", "-q", "fp8", "--concurrency", "4", "--prompt", "1024",
            "--output", "64", "--num-requests", "8"]
    code, out, err = cli(capsys, "simulate", *args, "-e", "tensorrt-llm")
    assert code == 0, err
    assert "includes 92 ms of tensorrt-llm's serving stack" in out
    code, out, err = cli(capsys, "simulate", *args, "-e", "vllm")
    assert code == 0, err
    assert "serving stack outside the forward passes" not in out
