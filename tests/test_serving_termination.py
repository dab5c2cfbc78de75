"""The serving simulator always ends: every engine's memory rule, driven by random workloads.

Hypothesis draws, for every engine in the serving catalog, a workload (offline bursts, Poisson,
gamma and constant rates, closed loops, traces), lengths up to and beyond the context limit, a KV
cache from nearly empty to far larger than the workload, scheduler knobs (chunked prefill on and
off, small token budgets, few or many sequences, multi-step scheduling), speculative decoding (k drafts
per pass, acceptance 0 to 1, a free or a one-layer drafter: multi-token steps), replicas and routers,
and disaggregated prefill/decode pools. Each run is checked after every step by `InvariantChecker`
(time never goes backwards, KV in use within capacity, tokens balance) and at its end (every request
completed or rejected with a reason, within the step bound).

CI runs `EXAMPLES` (2,000) per engine, derandomized (the same examples every run): about 10-25 s
per engine on a shared 2-core machine. `TOKOMETER_TERMINATION_EXAMPLES=N` runs N instead (a
quicker local run, or a longer hunt with `derandomize` still fixing the examples).
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokometer.catalog.serving import serving_engines
from tokometer.costmodel.serving import (
    LengthDist,
    ServingEfficiency,
    Workload,
    fixed,
    simulate,
    step_cost,
)
from tokometer.costmodel.serving.disagg import Disagg, simulate_disagg
from tokometer.costmodel.serving.engine import Replica
from tokometer.costmodel.serving.invariants import InvariantChecker, InvariantError, check_replica
from tokometer.costmodel.serving.policies import (
    FILLS_SLOT,
    TOO_BIG_FOR_CACHE,
    GuaranteedNoEvict,
    LlamaCppSlots,
    LmdeployEviction,
    RecomputePreemption,
    SglangRetraction,
    StaticBatch,
    kv_rule,
)
from tokometer.costmodel.serving.speculation import Speculation, head_cost
from tokometer.domain.serving_specs import SchedulerPolicy
from tokometer.errors import SimulationStalled, TokometerError
from tokometer.usecases.estimate import estimate

ENGINES = sorted(serving_engines())
EXAMPLES = int(os.environ.get("TOKOMETER_TERMINATION_EXAMPLES", "2000"))
CONTEXT = 4096  # the model's context length in these runs

EFF = ServingEfficiency(compute_fraction_max=0.6, compute_half_tokens=64.0, layer_step_overhead_us=30.0)
_SETUP = estimate("llama-3.1-8b", "h100-sxm", quant="bf16", engine="vllm", advise=False).setup
assert _SETUP is not None
COST = step_cost(_SETUP, EFF)
HEAD = head_cost(COST, _SETUP)  # an EAGLE-3/MTP-like drafter: one layer and the LM head


def lengths(draw: Any, top: int) -> LengthDist:
    kind = draw(st.sampled_from(("fixed", "uniform", "lognormal", "empirical")))
    if kind == "fixed":
        return fixed(draw(st.integers(1, top)))
    if kind == "uniform":
        lo = draw(st.integers(1, top))
        return LengthDist("uniform", lo, draw(st.integers(lo, top)))
    if kind == "lognormal":
        return LengthDist("lognormal", draw(st.integers(1, top)), draw(st.floats(0.0, 1.5)), max_tokens=top * 2)
    return LengthDist("empirical", values=tuple(draw(st.lists(st.integers(1, top), min_size=1, max_size=4))))


@st.composite
def scenarios(draw: Any, engine: str) -> dict[str, Any]:
    """One run: policy, KV capacity, workload, replicas or pools."""
    pol = serving_engines()[engine].policy
    pol = replace(
        pol,
        max_num_seqs=draw(st.sampled_from((1, 2, 3, 8, 64, pol.max_num_seqs))),
        max_num_batched_tokens=draw(st.sampled_from((1, 16, 256, 2048, pol.max_num_batched_tokens))),
        chunked_prefill=draw(st.booleans()),
        block_size_tokens=draw(st.sampled_from((1, 16, 64, pol.block_size_tokens))),
        scheduler_steps=draw(st.sampled_from((1, 1, 3))) if engine == "vllm" else 1,
        prefix_cache_hit_fraction=draw(st.sampled_from((0.0, 0.0, 0.5))),
    )
    if pol.contiguous_context_tokens is not None:
        pol = replace(pol, contiguous_context_tokens=draw(st.sampled_from((16, 512, 4096))))
    spec = None
    drafter = draw(st.sampled_from((None, None, "ngram", "eagle3")))
    if drafter is not None:  # multi-token decode steps; no engine combines them with multi-step scheduling
        pol = replace(pol, scheduler_steps=1)
        spec = Speculation(drafter, draw(st.integers(1, 4)), draw(st.sampled_from((0.0, 0.5, 0.9, 1.0))),
                           HEAD if drafter == "eagle3" else None)
    prompt = lengths(draw, draw(st.sampled_from((8, 64, 512, CONTEXT, CONTEXT + 512))))
    output = lengths(draw, draw(st.sampled_from((1, 8, 64, 300, 600))))
    n = draw(st.integers(1, 12))
    arrival = draw(st.sampled_from(("offline", "poisson", "gamma", "constant", "closed", "trace")))
    kw: dict[str, Any] = {"arrival": arrival, "num_requests": n, "prompt": prompt, "output": output}
    if arrival in ("poisson", "gamma", "constant"):
        kw["rate_per_s"] = draw(st.sampled_from((0.5, 20.0, 1e4)))
        kw["burstiness"] = draw(st.sampled_from((0.2, 1.0, 4.0)))
    if arrival == "closed":
        kw["concurrency"] = draw(st.integers(1, 6))
        kw["think_s"] = draw(st.sampled_from((0.0, 0.05)))
    if arrival == "trace":
        times = sorted(draw(st.lists(st.floats(0.0, 5.0), min_size=n, max_size=n)))
        kw["trace"] = tuple((t, draw(st.integers(0, CONTEXT + 64)), draw(st.integers(1, 300))) for t in times)
        if draw(st.booleans()):  # prefix and conversation ids: rows share a prefix, or continue a conversation
            kw["trace_content"] = tuple(
                (draw(st.sampled_from(("", "a", "b"))), draw(st.sampled_from((0, 32, 700))), draw(st.sampled_from(("", "x", "y"))))
                for _ in times)
    # shared prefixes for the prefix cache: system prompts (one or several) and multi-turn conversations
    if draw(st.booleans()):
        kw["system_prompt_tokens"] = draw(st.sampled_from((16, 300, 2000)))
        kw["system_prompt_share"] = draw(st.sampled_from((0.0, 0.5, 0.9, 1.0)))
        kw["system_prompts"] = draw(st.sampled_from((1, 3)))
    if arrival != "trace":
        kw["turns"] = draw(st.sampled_from((1, 1, 2, 4)))
    workload = Workload(**kw)
    # from a cache that holds no request to one that holds them all many times over
    if draw(st.booleans()):
        capacity = draw(st.sampled_from((1.0, 40.0, 300.0, 2000.0, 5000.0, 20_000.0, 1e6)))
    else:  # a few requests' worth: decode runs out of KV and the engine's eviction rule acts
        capacity = draw(st.sampled_from((0.9, 1.05, 1.5, 2.5, 4.0, 8.0))) * (prompt.mean + output.mean / 2 + 64)
    if pol.contiguous_context_tokens is not None and draw(st.booleans()):  # llama.cpp: a few whole slots
        capacity = draw(st.sampled_from((1, 2, 4))) * float(pol.contiguous_context_tokens)
    layout = draw(st.sampled_from(("one", "replicas", "disagg")))
    return {"policy": pol, "capacity": capacity, "workload": workload, "layout": layout, "spec": spec,
            "replicas": draw(st.integers(2, 3)), "pools": (draw(st.integers(1, 2)), draw(st.integers(1, 2))),
            "router": draw(st.sampled_from(("round-robin", "least-outstanding"))), "seed": draw(st.integers(0, 3))}


def run_checked(s: dict[str, Any]) -> None:
    checker = InvariantChecker()
    common = {"router": s["router"], "seed": s["seed"], "max_context_tokens": CONTEXT, "observe": checker}
    if s["layout"] == "disagg":
        p, d = s["pools"]
        link = Disagg(prefill_replicas=p, decode_replicas=d, kv_bytes_per_token=131072.0, link_bytes_per_s=50e9,
                      link_latency_s=1e-4)
        result = simulate_disagg(COST, s["policy"], s["capacity"], s["workload"], link, **common)
    else:
        replicas = s["replicas"] if s["layout"] == "replicas" else 1
        result = simulate(COST, s["policy"], s["capacity"], s["workload"], replicas=replicas, spec=s["spec"], **common)
    checker.finish(result)
    assert checker.steps >= (1 if result.completed else 0)  # the checker saw every step it had to


def _property(engine: str, examples: int) -> None:
    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(scenarios(engine))
    def check(s: dict[str, Any]) -> None:
        run_checked(s)

    check()


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_ends_with_every_request_completed_or_rejected(engine: str) -> None:
    _property(engine, EXAMPLES)


# ---------------------------------------------------------------- the reproduction


@pytest.mark.timeout(60)
@pytest.mark.parametrize("engine", ["sglang", "vllm", "tensorrt-llm", "lmdeploy", "static", "llama-cpp"])
def test_a_full_cache_ends_quickly_under_every_engine(engine: str) -> None:
    """`simulate llama-3.1-8b --hw h200 --engine sglang --offline 200 --prompt 4096 --output 1024` spun
    forever once SGLang's cache filled (issue 24); every engine now ends, well under 2 s."""
    from tokometer.usecases.simulate import deploy, run

    dep = deploy("llama-3.1-8b", "h200", engine=engine)
    start = time.process_time()
    r = run(dep, Workload(arrival="offline", num_requests=200, prompt=fixed(4096), output=fixed(1024)))
    assert time.process_time() - start < 2.0
    assert r.completed + r.rejected == 200
    if engine == "llama-cpp":  # 4 slots of 4096 tokens: a 4096-token prompt fills its slot
        assert r.rejected_by_reason == {FILLS_SLOT: 200}
    else:
        assert r.completed == 200


def test_sglang_retracts_when_decode_runs_out_and_lowers_nothing_it_should_not() -> None:
    """The cache fills during decode: SGLang retracts (counted as preemptions) and every request ends."""
    pol = serving_engines()["sglang"].policy
    checker = InvariantChecker()
    wl = Workload(num_requests=60, prompt=fixed(400), output=fixed(600))
    r = simulate(COST, pol, 20_000.0, wl, observe=checker)
    checker.finish(r)
    assert r.completed == 60 and r.preemptions > 0


def test_guaranteed_no_evict_never_preempts_and_books_whole_requests() -> None:
    pol = serving_engines()["tensorrt-llm"].policy
    checker = InvariantChecker()
    wl = Workload(num_requests=60, prompt=fixed(400), output=fixed(600))
    r = simulate(COST, pol, 20_000.0, wl, observe=checker)
    checker.finish(r)
    assert r.completed == 60 and r.preemptions == 0
    # at most floor(capacity / (prompt + output + half a block)) requests run at once
    assert r.mean_batch <= 20_000 / (1000 + pol.block_size_tokens / 2) + 1e-9
    vllm = simulate(COST, replace(pol, engine="vllm"), 20_000.0, wl)
    assert vllm.preemptions > 0 and vllm.mean_batch > r.mean_batch


def test_llama_cpp_cuts_a_request_short_when_its_slot_fills() -> None:
    pol = replace(serving_engines()["llama-cpp"].policy, contiguous_context_tokens=1000, max_num_seqs=2)
    trace = ((0.0, 900, 300), (0.0, 1000, 5), (0.0, 100, 50))
    checker = InvariantChecker()
    r = simulate(COST, pol, 2000.0, Workload(arrival="trace", trace=trace), observe=checker)
    checker.finish(r)
    assert (r.completed, r.rejected, r.truncated) == (2, 1, 1)
    assert r.rejected_by_reason == {FILLS_SLOT: 1}
    assert r.tput_out_tok_s * r.duration_s == pytest.approx(100 + 50)  # 1000 - 900 tokens, then 50


def test_a_request_beyond_the_whole_cache_is_refused_with_its_reason() -> None:
    for engine in ("vllm", "sglang", "tensorrt-llm", "lmdeploy", "static"):
        pol = serving_engines()[engine].policy
        trace = ((0.0, 100, 10), (0.0, 3000, 10), (0.1, 100, 10))
        r = simulate(COST, pol, 2500.0, Workload(arrival="trace", trace=trace))
        assert (r.completed, r.rejected) == (2, 1), engine
        assert r.rejected_by_reason == {TOO_BIG_FOR_CACHE: 1}, engine


def test_each_engine_gets_its_own_rule() -> None:
    engines = serving_engines()
    rules = {name: type(kv_rule(engines[name].policy)) for name in engines}
    assert rules["vllm"] is RecomputePreemption and rules["lmdeploy"] is LmdeployEviction
    assert rules["sglang"] is SglangRetraction and rules["tensorrt-llm"] is GuaranteedNoEvict
    assert rules["static"] is StaticBatch and rules["llama-cpp"] is LlamaCppSlots
    for rule in set(rules.values()):  # each names the engine code it copies
        assert rule.__doc__ and (".py" in rule.__doc__ or ".cpp" in rule.__doc__ or rule is StaticBatch), rule


# ---------------------------------------------------------------- the guard and the checker


class _Stuck(RecomputePreemption):
    """A broken rule: refuses nothing and admits nothing."""

    def admits(self, rep: Replica, req: Any) -> bool:
        return False


def test_a_scheduler_that_cannot_progress_raises_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import tokometer.costmodel.serving.engine as engine

    monkeypatch.setattr(engine, "kv_rule", lambda policy: _Stuck())
    pol = SchedulerPolicy(engine="vllm", max_num_seqs=4, max_num_batched_tokens=512)
    wl = Workload(num_requests=3, prompt=fixed(100), output=fixed(10))
    # the safety net refuses what waits in an empty engine; then a replica that claims to be busy
    # with nothing to run takes empty steps until the guard (64 + 3 requests) stops it
    monkeypatch.setattr(Replica, "busy", property(lambda self: True))
    with pytest.raises(SimulationStalled) as err:
        simulate(COST, pol, 1e6, wl)
    msg = str(err.value)
    assert isinstance(err.value, TokometerError) and err.value.exit_code == 2
    assert "vllm" in msg and "made no progress in 68 steps" in msg and "KV cache" in msg
    assert "3 requests, offline" in msg and "0 running" in msg


def test_the_checker_catches_a_drifted_sum() -> None:
    rep = Replica(COST, SchedulerPolicy(engine="vllm", max_num_seqs=4, max_num_batched_tokens=512), 1e5)
    rep.submit(0.0, 100, 10)
    rep.step()
    check_replica(rep)
    rep.kv_used += 5
    with pytest.raises(InvariantError, match="KV sums drifted"):
        check_replica(rep)


def test_the_cli_reports_a_stalled_scheduler_in_one_line(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """`tokometer simulate` turns a stall into one line and exit code 2, not a traceback or a spin."""
    from tests.helpers import cli

    import tokometer.costmodel.serving.engine as engine

    monkeypatch.setattr(engine, "kv_rule", lambda policy: _Stuck())
    monkeypatch.setattr(Replica, "busy", property(lambda self: True))
    code, out, err = cli(capsys, "simulate", "llama-3.1-8b", "--hw", "h100-sxm", "--engine", "sglang",
                         "--offline", "5", "--prompt", "100", "--output", "10")
    lines = err.strip().splitlines()
    assert code == 2 and "Traceback" not in err and len(lines) == 1, err
    assert "the sglang scheduler" in lines[0] and "made no progress in 70 steps" in lines[0]
    assert "5 requests, offline" in lines[0] and "KV cache" in lines[0]


def test_vllm_admission_leaves_room_for_the_steps_decodes() -> None:
    """Found by the property test: admitting a prompt in the step where three decodes also take a
    token overfilled a 107-token cache (108 in use); admission now leaves the decodes' tokens free."""
    pol = replace(serving_engines()["vllm"].policy, max_num_seqs=3, max_num_batched_tokens=16, chunked_prefill=False,
                  block_size_tokens=64)
    wl = Workload(num_requests=3, prompt=LengthDist("uniform", 1, 4), output=fixed(5))
    checker = InvariantChecker()
    r = simulate(COST, pol, 107.25, wl, observe=checker)
    checker.finish(r)
    assert r.completed == 3


def test_sglang_raises_its_new_token_ratio_on_retraction_and_lets_it_decay() -> None:
    pol = serving_engines()["sglang"].policy
    checker = InvariantChecker()
    r = simulate(COST, pol, 20_000.0, Workload(num_requests=60, prompt=fixed(400), output=fixed(600)), observe=checker)
    checker.finish(r)
    (rep,) = checker.replicas.values()
    rule = rep.rule
    assert isinstance(rule, SglangRetraction) and r.preemptions > 0
    assert rule.set_k > 0  # set by a retraction: (decoded + 20 x remaining) / their max output, at most 1
    assert rule.ratio(rule.set_k) == rule.ratio_set <= 1.0
    assert rule.ratio(rule.set_k + 10) < rule.ratio_set  # then it decays each decode step
    assert rule.ratio(rule.set_k + 100_000) == pytest.approx(0.7 * 0.14)  # down to min_new_token_ratio


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("acceptance", [0.0, 0.8, 1.0])
def test_speculation_under_a_tight_cache_ends_and_balances(engine: str, acceptance: float) -> None:
    """Multi-token decode steps against a cache of a few requests: the rules evict for a pass's whole growth,
    a request near its end emits only what it has left, and the tokens still balance after every step."""
    pol = replace(serving_engines()[engine].policy, scheduler_steps=1)
    if pol.contiguous_context_tokens is not None:
        pol = replace(pol, contiguous_context_tokens=700)
    spec = Speculation("eagle3", 4, acceptance, HEAD)
    checker = InvariantChecker()
    wl = Workload(num_requests=30, prompt=LengthDist("uniform", 50, 400), output=LengthDist("uniform", 1, 300))
    r = simulate(COST, pol, 2100.0, wl, spec=spec, observe=checker, seed=3)
    checker.finish(r)
    assert r.completed + r.rejected == 30 and r.completed > 0
    plain = simulate(COST, pol, 2100.0, wl, seed=3)
    if acceptance == 1.0:  # five tokens a pass: far fewer steps than one a step
        assert r.steps < plain.steps
    if pol.engine in ("vllm", "lmdeploy", "sglang") and not pol.static and pol.contiguous_context_tokens is None:
        assert plain.preemptions > 0 and r.preemptions > 0  # the tight cache did make the rules act
