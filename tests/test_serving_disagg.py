"""Disaggregated prefill/decode pools: the KV transfer sits in TTFT, decode steps carry no prefill."""

from __future__ import annotations

import json
import random

import pytest
from tests.helpers import cli

from tokometer.costmodel.serving import (
    LengthDist,
    SchedulerPolicy,
    ServingEfficiency,
    Workload,
    fixed,
    simulate,
    step_cost,
)
from tokometer.costmodel.serving.disagg import Disagg, parse_disagg, simulate_disagg
from tokometer.errors import InputError
from tokometer.usecases.estimate import estimate

EFF = ServingEfficiency(compute_fraction_max=0.6, compute_half_tokens=64.0, layer_step_overhead_us=30.0)
VLLM = SchedulerPolicy(engine="vllm", max_num_seqs=256, max_num_batched_tokens=2048)
KV_BYTES = 131072.0  # Llama 3.1 8B, bf16 K+V per token


@pytest.fixture(scope="module")
def cost():  # type: ignore[no-untyped-def]
    setup = estimate("llama-3.1-8b", "h100-sxm", quant="bf16", engine="vllm", advise=False).setup
    return step_cost(setup, EFF)


def pools(p: int, d: int, *, bw: float = 100e9, latency_s: float = 0.0) -> Disagg:
    return Disagg(prefill_replicas=p, decode_replicas=d, kv_bytes_per_token=KV_BYTES, link_bytes_per_s=bw, link_latency_s=latency_s)


def test_transfer_time_is_latency_plus_prompt_kv_over_bandwidth() -> None:
    link = pools(1, 1, bw=50e9, latency_s=2e-3)
    assert link.transfer_s(1000) == pytest.approx(2e-3 + 1000 * KV_BYTES / 50e9)
    assert link.transfer_s(2000) - link.transfer_s(1000) == pytest.approx(1000 * KV_BYTES / 50e9)


def test_ttft_includes_the_transfer(cost) -> None:  # type: ignore[no-untyped-def]
    """One request at a time: TTFT grows by exactly the extra transfer time when the link slows down."""
    wl = Workload(arrival="constant", num_requests=20, rate_per_s=0.5, prompt=fixed(2000), output=fixed(50))
    fast = simulate_disagg(cost, VLLM, 1e6, wl, pools(1, 1, bw=1e12))
    slow = simulate_disagg(cost, VLLM, 1e6, wl, pools(1, 1, bw=1e9, latency_s=0.05))
    extra = (0.05 + 2000 * KV_BYTES / 1e9) - 2000 * KV_BYTES / 1e12
    assert slow.ttft_s.mean - fast.ttft_s.mean == pytest.approx(extra, rel=1e-6)
    assert slow.tpot_s.mean == pytest.approx(fast.tpot_s.mean, rel=1e-9)  # decoding itself is unchanged
    # and TTFT is more than prefill + transfer on the same request alone
    colocated = simulate(cost, VLLM, 1e6, wl)
    assert slow.ttft_s.mean > colocated.ttft_s.mean + 0.05 + 2000 * KV_BYTES / 1e9 * 0.999


def test_decode_pool_is_not_slowed_by_prefill(cost) -> None:  # type: ignore[no-untyped-def]
    """Long prompts arriving while others decode: colocated TPOT carries prefill chunks, disaggregated does not."""
    wl = Workload(arrival="poisson", num_requests=300, rate_per_s=3.0, prompt=fixed(6000), output=fixed(300))
    colocated = simulate(cost, VLLM, 1e6, wl, replicas=2, seed=1)
    split = simulate_disagg(cost, VLLM, 1e6, wl, pools(1, 1), seed=1)
    assert split.completed == colocated.completed == 300
    assert split.tpot_s.p99 is not None and colocated.tpot_s.p99 is not None
    assert split.tpot_s.p99 < 0.8 * colocated.tpot_s.p99
    # a pure-decode TPOT: close to the step time of the decode batch alone (no prefill-sized steps)
    assert split.itl_s.p99 is not None and colocated.itl_s.p99 is not None
    assert split.itl_s.p99 < colocated.itl_s.p99


def test_every_request_finishes_once_and_tokens_are_conserved(cost) -> None:  # type: ignore[no-untyped-def]
    wl = Workload(arrival="poisson", num_requests=200, rate_per_s=8.0, prompt=LengthDist("uniform", 10, 3000), output=LengthDist("uniform", 1, 200))
    r = simulate_disagg(cost, VLLM, 1e6, wl, pools(2, 3), router="least-outstanding", seed=4)
    same = simulate_disagg(cost, VLLM, 1e6, wl, pools(2, 3), router="least-outstanding", seed=4)
    assert r == same
    assert r.completed == 200 and r.ttft_s.n == 200 and r.replicas == 5
    rng = random.Random(4)
    expected_out = 0
    for _ in range(200):  # the arrival process draws prompt, output, then the gap
        wl.prompt.sample(rng)
        expected_out += wl.output.sample(rng)
        rng.expovariate(8.0)
    assert r.tput_out_tok_s * r.duration_s == pytest.approx(expected_out, rel=1e-9)


def test_closed_loop_users_keep_sending(cost) -> None:  # type: ignore[no-untyped-def]
    wl = Workload(arrival="closed", num_requests=60, concurrency=4, prompt=fixed(500), output=fixed(20))
    r = simulate_disagg(cost, VLLM, 1e6, wl, pools(1, 2))
    assert r.completed == 60


@pytest.mark.parametrize("text", ["3", "1:0", "a:b", "1:2:3", "-1:2"])
def test_bad_pool_sizes_are_refused(text: str) -> None:
    with pytest.raises(InputError):
        parse_disagg(text)


def test_cli_disagg_json_and_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["simulate", "llama-3.1-8b", "--hw", "h100-sxm", "--rate", "2", "-n", "50", "--prompt", "1000", "--output", "50"]
    code, out, _ = cli(capsys, *args, "--disagg", "1:2", "--kv-link", "50", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["disagg"]["prefill_replicas"] == 1 and data["disagg"]["decode_replicas"] == 2
    assert data["disagg"]["link_bytes_per_s"] < 50e9  # the link's effective share of 50 GB/s
    assert data["result"]["replicas"] == 3 and data["result"]["completed"] == 50
    code, out, _ = cli(capsys, *args, "--disagg", "1:2", "--kv-link", "50")
    assert code == 0 and "1 prefill + 2 decode replicas" in out and "counted in TTFT" in out
    for bad in (["--disagg", "2"], ["--disagg", "1:1", "--replicas", "2"], ["--kv-link", "nvlink"], ["--disagg", "1:1", "--kv-link", "fast"]):
        code, out, err = cli(capsys, *args, *bad)
        assert code == 2, (bad, out, err)
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_a_decode_pool_of_its_own_layout_sets_the_decode_speed(cost) -> None:  # type: ignore[no-untyped-def]
    """The decode pool's own cost decides TPOT; the prefill pool's decides the prefill part of TTFT."""
    from tokometer.costmodel.serving.disagg import Pool

    slow_setup = estimate("llama-3.1-70b", "h100-sxm", quant="bf16", engine="vllm", advise=False, tp=4).setup
    slow = step_cost(slow_setup, EFF)
    wl = Workload(arrival="constant", num_requests=20, rate_per_s=0.5, prompt=fixed(1000), output=fixed(50))
    same = simulate_disagg(cost, VLLM, 1e6, wl, pools(1, 1))
    apart = simulate_disagg(cost, VLLM, 1e6, wl, pools(1, 1), decode_pool=Pool(slow, VLLM, 1e6))
    both_slow = simulate_disagg(slow, VLLM, 1e6, wl, pools(1, 1))
    assert apart.tpot_s.mean == pytest.approx(both_slow.tpot_s.mean, rel=1e-6)
    assert apart.tpot_s.mean > 2 * same.tpot_s.mean
    assert same.ttft_s.mean < apart.ttft_s.mean < both_slow.ttft_s.mean  # prefill on the fast pool, last token on the slow


def test_a_decode_pool_that_speculates_keeps_more_tokens_per_pass(cost) -> None:  # type: ignore[no-untyped-def]
    from tokometer.costmodel.serving.disagg import Pool
    from tokometer.costmodel.serving.speculation import Speculation

    wl = Workload(arrival="constant", num_requests=20, rate_per_s=0.5, prompt=fixed(1000), output=fixed(100))
    plain = simulate_disagg(cost, VLLM, 1e6, wl, pools(1, 1))
    spec = simulate_disagg(cost, VLLM, 1e6, wl, pools(1, 1),
                           decode_pool=Pool(cost, VLLM, 1e6, Speculation("ngram", 3, 0.8, None)))
    assert spec.completed == plain.completed == 20
    assert spec.tpot_s.mean < 0.6 * plain.tpot_s.mean  # E(0.8, 3) = 2.95 tokens per pass of about one step's cost


def test_a_caller_can_stop_disaggregated_pools_from_inside_the_event_loop(cost) -> None:  # type: ignore[no-untyped-def]
    """`check` is called every CHECK_EVERY passes with the requests routed so far, as in `simulate`, so a
    time limit (`fitting.time_limit`) or a progress bar reaches disaggregated runs too; it ends the run by
    raising. Without it, a published disaggregated row's time limit was taken and ignored."""
    wl = Workload("poisson", 3000, fixed(256), fixed(64), rate_per_s=200.0)
    seen: list[int] = []

    def stop_late(routed: int) -> None:
        seen.append(routed)
        if len(seen) == 3:
            raise InputError("stopped by the caller")

    with pytest.raises(InputError, match="stopped by the caller"):
        simulate_disagg(cost, VLLM, 1e6, wl, pools(1, 2), check=stop_late)
    assert len(seen) == 3 and seen == sorted(seen) and seen[-1] < 3000
    calls: list[int] = []
    done = simulate_disagg(cost, VLLM, 1e6, wl, pools(1, 2), check=calls.append)
    assert done.completed == 3000 and calls and calls[-1] <= 3000
