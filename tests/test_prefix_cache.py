"""Prefix caching decided by content (issue 29): shared system prompts, multi-turn history and trace
ids decide hits; each engine's cache keeps blocks until evicted LRU; hits skip prefill and shared
blocks count once in KV. Every run here is checked step by step by `InvariantChecker`."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tests.helpers import cli

from tokometer.catalog.serving import serving_engines
from tokometer.costmodel.serving import ServingEfficiency, Workload, fixed, simulate, step_cost
from tokometer.costmodel.serving.disagg import Disagg, simulate_disagg
from tokometer.costmodel.serving.invariants import InvariantChecker
from tokometer.costmodel.serving.prefix_cache import (
    BlockPrefixCache,
    Content,
    FixedShare,
    SlotPromptCache,
)
from tokometer.costmodel.serving.simulate import ServingResult
from tokometer.errors import InputError
from tokometer.usecases.estimate import estimate

_SETUP = estimate("llama-3.1-8b", "h100-sxm", quant="bf16", engine="vllm", advise=False).setup
assert _SETUP is not None
COST = step_cost(_SETUP, ServingEfficiency(compute_fraction_max=0.6, compute_half_tokens=64.0, layer_step_overhead_us=30.0))
BIG = 400_000.0  # tokens of KV: an H100's worth for an 8B model


def policy(engine: str) -> Any:
    return serving_engines()[engine].policy


def run(engine: str, workload: Workload, capacity: float = BIG, **kw: Any) -> ServingResult:
    checker = InvariantChecker()
    r = simulate(COST, policy(engine), capacity, workload, observe=checker, **kw)
    checker.finish(r)
    return r


def chat(**kw: Any) -> Workload:
    """Poisson arrivals of 200-token questions with 100-token answers, and whatever `kw` shares."""
    base: dict[str, Any] = {"arrival": "poisson", "num_requests": 400, "prompt": fixed(200), "output": fixed(100),
                            "rate_per_s": 20.0}
    return Workload(**(base | kw))


# ---------------------------------------------------------------- system prompts


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tensorrt-llm"])
def test_a_shared_system_prompt_cuts_the_median_ttft(engine: str) -> None:
    """90 % of requests start with the same 2,000-token system prompt: their prefill skips it."""
    shared = run(engine, chat(system_prompt_tokens=2000, system_prompt_share=0.9))
    # the same prompt lengths, nothing shared: 10,000 distinct system prompts
    alone = run(engine, chat(system_prompt_tokens=2000, system_prompt_share=0.9, system_prompts=10_000))
    assert shared.completed == alone.completed == 400
    assert shared.prefix_hit_share is not None and alone.prefix_hit_share is not None
    assert shared.prefix_hit_share > 0.8 > 0.05 > alone.prefix_hit_share
    assert shared.ttft_s.p50 is not None and alone.ttft_s.p50 is not None
    assert shared.ttft_s.p50 < 0.7 * alone.ttft_s.p50
    # the prompts are as long: the same input tokens in all
    assert shared.tput_in_tok_s * shared.duration_s == pytest.approx(alone.tput_in_tok_s * alone.duration_s)


def test_offline_throughput_rises_with_a_shared_prompt() -> None:
    """Hits skip prefill compute: the same offline batch of 2,000 + 200-token prompts finishes sooner."""
    wl = Workload(num_requests=300, prompt=fixed(200), output=fixed(50), system_prompt_tokens=2000, system_prompt_share=1.0)
    shared, alone = run("vllm", wl), run("vllm", replace(wl, system_prompts=100_000))
    assert shared.completed == alone.completed == 300
    assert shared.req_per_s > 1.5 * alone.req_per_s
    assert shared.time_prefill_s < 0.5 * alone.time_prefill_s


def test_the_hit_rate_falls_when_the_kv_cache_is_tiny() -> None:
    """20 system prompts of 2,000 tokens: a cache that holds them all hits; one that holds a few
    evicts them (LRU) before they come round again."""
    wl = chat(system_prompt_tokens=2000, system_prompt_share=1.0, system_prompts=20)
    roomy, tiny = run("vllm", wl), run("vllm", wl, capacity=9000.0)
    assert roomy.prefix_hit_share is not None and tiny.prefix_hit_share is not None
    assert roomy.prefix_hit_share > 0.8
    assert tiny.prefix_hit_share < roomy.prefix_hit_share - 0.3
    assert tiny.prefix_evicted_tokens > 0 == roomy.prefix_evicted_tokens


def test_the_hit_rate_falls_under_load() -> None:
    """More requests in flight hold more KV, so idle cached prompts are evicted sooner."""
    wl = replace(chat(system_prompt_tokens=1000, system_prompt_share=1.0, system_prompts=8), output=fixed(400))
    light, heavy = run("vllm", replace(wl, rate_per_s=0.5), capacity=12_000.0), run("vllm", replace(wl, rate_per_s=50.0), capacity=12_000.0)
    assert light.prefix_hit_share is not None and heavy.prefix_hit_share is not None
    assert heavy.prefix_hit_share < light.prefix_hit_share


def test_a_shared_prefix_is_held_once_in_kv() -> None:
    """A tight cache and long prompts that share 2,000 tokens: more requests run at once than
    without sharing, as the shared blocks are not duplicated."""
    wl = Workload(num_requests=80, prompt=fixed(100), output=fixed(300), system_prompt_tokens=2000, system_prompt_share=1.0)
    shared = run("vllm", wl, capacity=30_000.0)
    alone = run("vllm", replace(wl, system_prompts=1000), capacity=30_000.0)
    assert shared.mean_batch > 2 * alone.mean_batch
    assert shared.duration_s < alone.duration_s


# ---------------------------------------------------------------- conversations


def test_multi_turn_hit_rate_rises_with_turns() -> None:
    shares = []
    for turns in (2, 4, 8):
        r = run("sglang", Workload("closed", 480, fixed(150), fixed(150), concurrency=8, think_s=0.5, turns=turns))
        assert r.completed == 480 and r.prefix_hit_share is not None
        shares.append(r.prefix_hit_share)
    assert shares[0] < shares[1] < shares[2]
    assert shares[0] > 0.2  # turn 2 of 2 reuses turn 1's question and answer


def test_a_turn_prompt_is_the_history_plus_new_text() -> None:
    """Input tokens: turn j of 3 has j x 200 question tokens and (j - 1) x 100 answer tokens before it."""
    r = run("vllm", Workload("closed", 3, fixed(200), fixed(100), concurrency=1, turns=3))
    assert r.completed == 3
    assert r.tput_in_tok_s * r.duration_s == pytest.approx(200 + (400 + 100) + (600 + 200))


def test_llama_cpp_slots_reuse_less_than_sglang() -> None:
    """Many conversations, 4 llama.cpp slots: a conversation's slot is taken by another before its next
    turn, while SGLang's radix cache keeps every conversation's history."""
    wl = Workload("closed", 320, fixed(150), fixed(100), concurrency=16, think_s=1.0, turns=4)
    sglang = run("sglang", wl)
    llama = run("llama-cpp", wl, capacity=4 * 4096.0)
    assert sglang.prefix_hit_share is not None and llama.prefix_hit_share is not None
    assert llama.prefix_hit_share < 0.5 * sglang.prefix_hit_share


def test_llama_cpp_reuses_its_own_slot() -> None:
    """One user, one slot: every turn finds its history in the slot."""
    pol = replace(policy("llama-cpp"), max_num_seqs=1, contiguous_context_tokens=8192)
    checker = InvariantChecker()
    r = simulate(COST, pol, 8192.0, Workload("closed", 4, fixed(100), fixed(50), concurrency=1, turns=4), observe=checker)
    checker.finish(r)
    assert r.completed == 4 and r.prefix_hit_share is not None
    # turns 2-4 reuse 150, 300 and 450 tokens of history of prompts 250, 400 and 550
    assert r.prefix_hit_share == pytest.approx((150 + 300 + 450) / (100 + 250 + 400 + 550))


def test_open_loop_conversations_keep_the_offered_rate_and_the_request_count() -> None:
    r = run("vllm", Workload("poisson", 301, fixed(100), fixed(50), rate_per_s=10.0, turns=4, think_s=2.0))
    assert r.requests == r.completed == 301
    assert r.prefix_hit_share is not None and r.prefix_hit_share > 0.3


def test_lmdeploy_keeps_no_prefix_cache_by_default() -> None:
    r = run("lmdeploy", chat(system_prompt_tokens=2000, system_prompt_share=1.0))
    assert r.prefix_hit_share == 0.0


def test_the_fixed_share_override_wins() -> None:
    pol = replace(policy("vllm"), prefix_cache_hit_fraction=0.25)
    checker = InvariantChecker()
    r = simulate(COST, pol, BIG, chat(system_prompt_tokens=2000, system_prompt_share=1.0), observe=checker)
    checker.finish(r)
    assert r.prefix_hit_share == pytest.approx(0.25, abs=0.01)


def test_disaggregated_pools_cache_prefixes_in_the_prefill_pool() -> None:
    link = Disagg(prefill_replicas=1, decode_replicas=2, kv_bytes_per_token=131072.0, link_bytes_per_s=50e9, link_latency_s=1e-4)
    wl = chat(system_prompt_tokens=2000, system_prompt_share=1.0, turns=2)
    checker = InvariantChecker()
    r = simulate_disagg(COST, policy("vllm"), BIG, wl, link, observe=checker)
    checker.finish(r)
    assert r.completed == 400 and r.prefix_hit_share is not None and r.prefix_hit_share > 0.5


# ---------------------------------------------------------------- the caches themselves


class _Req:
    def __init__(self, prompt: int, segs: tuple[tuple[Any, int], ...], answer: Any = None) -> None:
        self.prompt, self.output, self.then_output = prompt, 10, 0
        self.content: Content | None = Content(segs, answer)
        self.hit = self.held = self.nsegs = 0
        self.slot = -1


def test_block_cache_hits_whole_blocks_shares_holds_and_evicts_deepest_first() -> None:
    cache = BlockPrefixCache(16)
    a = _Req(150, ((("s", 0), 100), (("u", 1), 40)))
    cache.lookup(a)
    assert (a.hit, a.held) == (0, 0)
    cache.acquire(a)
    b = _Req(130, ((("s", 0), 100), (("u", 2), 20)))
    cache.lookup(b)
    assert (b.hit, b.held) == (96, 100)  # 6 whole blocks of the 100 shared tokens; all 100 already in KV
    cache.acquire(b)
    assert cache.release(a, finished=True) == 100  # b still holds the system prompt
    assert list(cache.idle) == [("u", 1)]
    assert cache.release(b, finished=True) == 0
    assert list(cache.idle) == [("u", 1), ("u", 2), ("s", 0)]  # a request's deepest segment is evicted first
    cache.trim(100.0)
    assert list(cache.idle) == [("s", 0)] and cache.evicted_tokens == 60


def test_a_full_hit_still_computes_the_last_token() -> None:
    cache = SlotPromptCache(1, 0.1)
    first = _Req(64, ((("s", 0), 64),))
    cache.lookup(first)
    cache.acquire(first)
    cache.release(first, finished=True)
    again = _Req(64, ((("s", 0), 64),))
    cache.lookup(again)
    assert again.hit == 63
    fixed_share = FixedShare(0.5)
    fixed_share.lookup(again)
    assert again.hit == 32


# ---------------------------------------------------------------- the doors


def test_workload_refuses_bad_shared_prefix_settings() -> None:
    for kw, words in (({"system_prompt_share": 0.5}, "needs --system-prompt"), ({"turns": 0}, "--turns"),
                      ({"system_prompt_tokens": 10, "system_prompt_share": 1.5}, "--system-prompt-share"),
                      ({"system_prompts": 0}, "--system-prompts"), ({"system_prompt_tokens": -1}, "--system-prompt")):
        with pytest.raises(InputError, match=words):
            Workload(**kw)
    with pytest.raises(InputError, match="conversation_id"):
        Workload("trace", trace=((0.0, 10, 10),), turns=2)


def test_api_simulate_takes_the_cli_names() -> None:
    from tokometer import simulate as api_simulate

    sim = api_simulate("llama-3.1-8b", "h100-sxm", rate=10, num_requests=200, prompt=200, output=50,
                       system_prompt=2000, system_prompt_share=0.9, system_prompts=2, turns=1)
    d = sim.to_dict()
    assert d["workload"]["system_prompt_tokens"] == 2000 and d["workload"]["system_prompts"] == 2
    assert d["result"]["prefix_hit_share"] > 0.8
    with pytest.raises(InputError, match="--system-prompt-share needs"):
        api_simulate("llama-3.1-8b", "h100-sxm", rate=10, system_prompt_share=0.5)


def test_cli_json_and_text(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("simulate", "llama-3.1-8b", "--hw", "h100-sxm", "--concurrency", "8", "-n", "80", "--prompt", "200",
            "--output", "50", "--turns", "4", "--system-prompt", "1000")
    code, out, err = cli(capsys, *args, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["workload"]["turns"] == 4 and data["result"]["prefix_hit_share"] > 0.5
    code, out, _ = cli(capsys, *args)
    assert code == 0 and "prefix cache:" in out and "served from the cache" in out
    code, _, err = cli(capsys, "simulate", "llama-3.1-8b", "--hw", "h100-sxm", "--rate", "1", "--system-prompts", "0")
    assert code == 2 and "Traceback" not in err and "--system-prompts" in err
    code, _, err = cli(capsys, "simulate", "llama-3.1-8b", "--hw", "h100-sxm", "--frontier", "--turns", "3")
    assert code == 2 and "Traceback" not in err and "--turns" in err


def test_a_trace_with_prefix_and_conversation_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = ["arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens,conversation_id"]
    for i in range(40):  # 20 conversations of 2 turns; every request starts with prefix "sys" of 1,500 tokens
        rows.append(f"{i * 0.1:.1f},1600,100,sys,1500,c{i}")
    for i in range(40):
        rows.append(f"{i * 0.1 + 5:.1f},1800,100,sys,1500,c{i}")
    path = tmp_path / "trace.csv"
    path.write_text("\n".join(rows) + "\n")
    from tokometer.usecases.simulate import read_trace_ids

    trace, ids = read_trace_ids(str(path))
    assert len(trace) == len(ids) == 80 and ids[0] == ("sys", 1500, "c0")
    code, out, err = cli(capsys, "simulate", "llama-3.1-8b", "--hw", "h100-sxm", "--trace", str(path), "--json")
    assert code == 0, err
    hit = json.loads(out)["result"]["prefix_hit_share"]
    assert hit > 0.8  # all but the first prompt's 1,500 tokens, and each second turn's 1,700
    bare = tmp_path / "bare.csv"
    bare.write_text("\n".join(",".join(r.split(",")[:3]) for r in rows) + "\n")
    code, out, err = cli(capsys, "simulate", "llama-3.1-8b", "--hw", "h100-sxm", "--trace", str(bare), "--json")
    assert code == 0 and json.loads(out)["result"]["prefix_hit_share"] is None  # no prefix cache at play


# ---------------------------------------------------------------- with speculative decoding


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tensorrt-llm"])
@pytest.mark.parametrize("shared", [{"system_prompt_tokens": 2000, "system_prompt_share": 0.9}, {"turns": 3}])
def test_a_speculative_pass_that_ends_a_request_releases_its_cached_prefix(engine: str, shared: dict[str, Any]) -> None:
    """A request that a multi-token verify pass finishes gives back what it held in the prefix cache, as a
    one-token step's finish does: KV use never goes below zero and balances at the end (the merged
    speculation and prefix-cache paths once left shared segments counted, KV use reading -119 %)."""
    from tokometer.costmodel.serving.speculation import Speculation, head_cost

    spec = Speculation("eagle3", 3, 0.65, head_cost(COST, _SETUP))
    checker = InvariantChecker()  # checks KV use within [0, capacity] and its sums after every step
    r = simulate(COST, policy(engine), BIG, chat(num_requests=200, **shared), observe=checker, spec=spec, seed=5)
    checker.finish(r)
    assert r.completed == 200 and r.prefix_hit_share > 0.3
    assert 0.0 <= r.mean_kv_utilisation <= 1.0
