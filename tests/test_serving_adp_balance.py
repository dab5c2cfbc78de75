"""TensorRT-LLM's attention-DP context balance (`SchedulerPolicy.adp_balance_ranks`,
`adp_balance_timeout_steps`; PyExecutor `_balance_adp_requests` with `enable_balance`): while every
rank decodes, new prompts are held until one waits per rank or for the timeout's steps in a row; at
once when some rank has nothing to decode. InferenceX's DeepSeek-R1 TensorRT-LLM runs with attention
DP are replayed with the 60 iterations their scripts set."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tokometer.catalog.serving import check_policy
from tokometer.costmodel.serving import (
    SchedulerPolicy,
    ServingEfficiency,
    Workload,
    fixed,
    simulate,
    step_cost,
)
from tokometer.costmodel.serving.workload import LengthDist
from tokometer.errors import InputError
from tokometer.usecases.estimate import estimate

EFF = ServingEfficiency(compute_fraction_max=0.6, compute_half_tokens=64.0, layer_step_overhead_us=30.0)
TRT = SchedulerPolicy(engine="tensorrt-llm", max_num_seqs=256, max_num_batched_tokens=8192)


@pytest.fixture(scope="module")
def cost():  # type: ignore[no-untyped-def]
    setup = estimate("qwen3-30b-a3b", "h100-sxm", quant="bf16", engine="tensorrt-llm", advise=False).setup
    assert setup is not None
    return step_cost(setup, EFF)


def staggered(n: int) -> Workload:
    """Closed-loop users whose outputs differ, so requests arrive one by one while the others decode."""
    return Workload(arrival="closed", concurrency=n, num_requests=8 * n, prompt=fixed(128),
                    output=LengthDist("uniform", 48.0, 80.0))


def test_balance_holds_lone_arrivals_while_every_rank_decodes(cost) -> None:  # type: ignore[no-untyped-def]
    wl = staggered(16)
    base = simulate(cost, TRT, 1e6, wl)
    held = simulate(cost, replace(TRT, adp_balance_ranks=8, adp_balance_timeout_steps=60), 1e6, wl)
    step = cost.time_s(16, 16 * 160.0, 16 * 160.0, 16)  # one decode step of the 16 streams
    assert held.ttft_s.mean > base.ttft_s.mean + 2 * step
    # nobody waits past the timeout's steps (plus the prefill step that admits it, and the step it
    # arrived in): the balance lets the prompts go after 60 held steps
    prefill = cost.time_s(16 * 128, 0.0, 16 * 64.0 * 128, 16, prefill_tokens=16 * 128)
    assert held.ttft_s.max < base.ttft_s.max + 61 * step + prefill
    assert held.completed == base.completed == 8 * 16


def test_a_shorter_timeout_waits_less(cost) -> None:  # type: ignore[no-untyped-def]
    wl = staggered(16)
    long = simulate(cost, replace(TRT, adp_balance_ranks=8, adp_balance_timeout_steps=60), 1e6, wl)
    short = simulate(cost, replace(TRT, adp_balance_ranks=8, adp_balance_timeout_steps=5), 1e6, wl)
    assert short.ttft_s.mean < long.ttft_s.mean


def test_fewer_decodes_than_ranks_admit_at_once(cost) -> None:  # type: ignore[no-untyped-def]
    """Four users over eight ranks: some rank always has nothing to decode, so nothing is held."""
    wl = staggered(4)
    base = simulate(cost, TRT, 1e6, wl)
    held = simulate(cost, replace(TRT, adp_balance_ranks=8, adp_balance_timeout_steps=60), 1e6, wl)
    assert held.ttft_s.mean == pytest.approx(base.ttft_s.mean, rel=1e-9)
    assert held.tput_out_tok_s == pytest.approx(base.tput_out_tok_s, rel=1e-9)


def test_bad_balance_knobs_are_refused() -> None:
    for bad in (0, -2, 1.5, True):
        with pytest.raises(InputError, match="adp_balance_ranks"):
            check_policy(replace(TRT, adp_balance_ranks=bad))  # type: ignore[arg-type]
    for bad in (-1, 2.5, False):
        with pytest.raises(InputError, match="adp_balance_timeout_steps"):
            check_policy(replace(TRT, adp_balance_timeout_steps=bad))  # type: ignore[arg-type]


def test_inferencex_trtllm_attention_dp_runs_carry_the_scripts_timeout() -> None:
    from tokometer.fitting.serving_families import published_paths
    from tokometer.fitting.serving_runs import group_runs, read_rows

    path = next(p for p in published_paths() if p.stem == "IX-DSR1-API")
    seen = 0
    for run in group_runs(read_rows(path)[0]):
        if run.reason is not None or run.engine != "tensorrt-llm":
            continue
        dp = int(run.deploy_kwargs.get("dp", 1))
        expected = 60 if dp > 1 and run.disagg is None else 0
        assert run.adp_balance_timeout == expected, (run.rows[0].row_id, dp)
        seen += expected > 0
    assert seen >= 5
