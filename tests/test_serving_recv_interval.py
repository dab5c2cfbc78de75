"""SGLang's `--scheduler-recv-interval N` (`SchedulerPolicy.recv_interval_steps`): while it decodes, the
scheduler reads arrivals only every N decode steps, so a request arriving mid-decode waits for the
next multiple; an idle engine admits at once; tokens still stream every step. InferenceX's B200
DeepSeek-R1 SGLang runs are replayed with the interval its scripts set (10, or 30 from 16 clients)."""

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
SGL = SchedulerPolicy(engine="sglang", max_num_seqs=256, max_num_batched_tokens=8192, mixed_batches=False)


@pytest.fixture(scope="module")
def cost():  # type: ignore[no-untyped-def]
    setup = estimate("qwen3-30b-a3b", "h100-sxm", quant="bf16", engine="sglang", advise=False).setup
    assert setup is not None
    return step_cost(setup, EFF)


def users(n: int, requests: int, output: int = 64) -> Workload:
    return Workload(arrival="closed", concurrency=n, num_requests=requests, prompt=fixed(128), output=fixed(output))


def test_an_idle_engine_admits_at_once(cost) -> None:  # type: ignore[no-untyped-def]
    one = users(1, 4)
    r1, r30 = simulate(cost, SGL, 1e6, one), simulate(cost, replace(SGL, recv_interval_steps=30), 1e6, one)
    assert r30.ttft_s.mean == pytest.approx(r1.ttft_s.mean, rel=1e-9)
    assert r30.itl_s.mean == pytest.approx(r1.itl_s.mean, rel=1e-9)


def test_arrivals_mid_decode_wait_for_the_next_receive(cost) -> None:  # type: ignore[no-untyped-def]
    """Staggered outputs make later requests arrive while others decode: their TTFT grows, by less than
    the interval's decode steps, and the engine still streams every step."""
    wl = Workload(arrival="closed", concurrency=8, num_requests=64, prompt=fixed(128), output=LengthDist("uniform", 48.0, 80.0))
    base = simulate(cost, SGL, 1e6, wl)
    slow = simulate(cost, replace(SGL, recv_interval_steps=30), 1e6, wl)
    step = cost.time_s(8, 8 * 160.0, 8 * 160.0, 8)  # one decode step of the 8 streams
    assert slow.ttft_s.mean > base.ttft_s.mean + step
    assert slow.ttft_s.max < base.ttft_s.max + 31 * step + cost.time_s(8 * 128, 0.0, 8 * 64.0 * 128, 8, prefill_tokens=8 * 128)
    assert slow.completed == base.completed == 64


def test_the_interval_is_a_whole_number_of_one_or_more() -> None:
    for bad in (0, -3, 1.5, True):
        with pytest.raises(InputError, match="recv_interval_steps"):
            check_policy(replace(SGL, recv_interval_steps=bad))  # type: ignore[arg-type]


def test_inferencex_blackwell_sglang_runs_carry_the_scripts_interval() -> None:
    """B200 and B300 DeepSeek-R1 SGLang runs, with and without MTP, carry their scripts' 10 / 30 (FP8 TP 4:
    10); H200 runs, attention-DP runs (the FP4 script resets it to 1) and disaggregated runs carry 1."""
    from tokometer.fitting.serving_families import published_paths
    from tokometer.fitting.serving_runs import group_runs, read_rows

    path = next(p for p in published_paths() if p.stem == "IX-DSR1-API")
    runs = group_runs(read_rows(path)[0])
    seen: dict[tuple[str, bool], set[int]] = {}
    for run in runs:
        if run.reason is not None or run.engine != "sglang":
            continue
        row = run.rows[0]
        hw = row.text("hardware_id")
        clients = int(row.text("concurrency"))
        tp, dp = int(run.deploy_kwargs.get("tp", 1)), int(run.deploy_kwargs.get("dp", 1))
        spec = "spec_method=none" not in row.text("notes")
        if run.disagg is not None or dp > 1 or hw not in ("b200", "b300"):
            assert run.recv_interval == 1, (hw, dp, run.disagg)
            continue
        seen.setdefault((hw, spec), set()).add(run.recv_interval)
        if tp == 8:
            assert run.recv_interval == (30 if clients >= 16 else 10), (hw, clients, run.recv_interval)
    for key in (("b200", False), ("b300", False), ("b300", True)):
        assert seen[key] >= {10, 30}, key


def test_inferencex_sglang_runs_stream_in_their_scripts_chunks() -> None:
    """The scripts' --stream-interval: FP8 on B200/B300 30, FP4 and H200 10, Instinct (none) and
    disaggregated pools 1; a run's ITL rows then read the chunks' interval, TTFT and TPOT do not move."""
    from tokometer.fitting.serving_families import published_paths
    from tokometer.fitting.serving_runs import group_runs, read_rows

    path = next(p for p in published_paths() if p.stem == "IX-DSR1-API")
    seen: dict[tuple[str, str], set[int]] = {}
    for run in group_runs(read_rows(path)[0]):
        if run.reason is not None or run.engine != "sglang":
            continue
        row = run.rows[0]
        key = (row.text("hardware_id"), row.text("quant").lower())
        seen.setdefault(key, set()).add(run.stream_tokens)
        if run.disagg is not None or key[0].startswith("mi"):
            assert run.stream_tokens == 1, key
        elif key in (("b200", "fp8"), ("b300", "fp8")):
            assert run.stream_tokens == 30, key
        elif key in (("b200", "fp4"), ("b300", "fp4"), ("h200", "fp8")):
            assert run.stream_tokens == 10, key
    assert {30, 10} <= seen[("b200", "fp8")] | seen[("b200", "fp4")]
    assert seen[("mi355x", "fp8")] == {1}
