"""Invariants of the levers over many random setups (Hypothesis): batching, offload, parallelism."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tokometer.costmodel.curves import MAX_LAYER_POINTS
from tokometer.usecases.curves import batch_points, context_points, offload_points
from tokometer.usecases.estimate import estimate

MODELS = ["llama-3.1-8b", "qwen3-30b-a3b", "gemma-3-12b", "deepseek-v3", "gpt-oss-20b", "llama-3.2-1b", "qwen2.5-32b"]
# (engine, weight format) pairs each engine runs (an impossible pair is an input error)
ENGINE_QUANTS = [("llama.cpp", q) for q in ("fp16", "q8_0", "q4_k_m", "q2_k")] + [
    ("vllm", q) for q in ("fp16", "fp8", "awq", "gptq")
]
GPUS = ["rtx-4090", "h100-sxm", "rtx-3060-12gb", "a100-80gb-sxm", "rx-7900-xtx", "rtx-4060"]
DESKTOP_CPUS = ["ddr5-dual-channel", "ddr4-dual-channel", "ddr5-6400-dual-channel"]

base = st.builds(
    lambda pair, rest: {"engine": pair[0], "quant": pair[1], **rest},
    st.sampled_from(ENGINE_QUANTS),
    st.fixed_dictionaries(
        {
            "model": st.sampled_from(MODELS),
            "hw": st.sampled_from(GPUS),
            "context_tokens": st.integers(0, 131_072),
            "kv_dtype": st.sampled_from(["fp16", "q8_0", "q4_0"]),
        }
    ),
)
layouts = st.one_of(
    st.just({}),
    st.fixed_dictionaries({"tp": st.sampled_from([2, 4, 8]), "link": st.sampled_from(["nvlink", "pcie4", "pcie3x8", "64"])}),
    st.fixed_dictionaries({"pp": st.sampled_from([2, 4])}),
    st.fixed_dictionaries(
        {"gpu_layers": st.floats(0.0, 1.0).map(lambda f: round(f, 2)), "cpu_hw": st.sampled_from(DESKTOP_CPUS)}
    ),
)


def _estimate(setup: dict, layout: dict):
    if layout.get("link") == "nvlink" and setup["hw"] not in ("h100-sxm", "a100-80gb-sxm"):
        layout = {**layout, "link": "pcie4"}
    return estimate(**setup, **layout, advise=False)


@settings(max_examples=120, deadline=None)
@given(base, layouts, st.lists(st.integers(1, 1024), min_size=2, max_size=8, unique=True))
def test_aggregate_never_falls_and_per_stream_never_rises_with_batch(setup: dict, layout: dict, batches: list[int]) -> None:
    e = _estimate(setup, layout)
    points = [p for p in batch_points(e, sorted(batches)) if p.fits]  # until memory runs out
    for small, big in zip(points, points[1:], strict=False):
        assert big.aggregate_tok_s >= small.aggregate_tok_s * (1 - 1e-12)
        assert big.per_stream_tok_s <= small.per_stream_tok_s * (1 + 1e-12)
        assert big.ceiling_aggregate_tok_s >= small.ceiling_aggregate_tok_s * (1 - 1e-12)


@settings(max_examples=80, deadline=None)
@given(base, st.sampled_from(DESKTOP_CPUS), st.sampled_from(["cpu", "stream"]), st.integers(1, 64))
def test_more_layers_on_the_gpu_is_never_slower(setup: dict, cpu: str, mode: str, batch: int) -> None:
    e = estimate(**setup, gpu_layers=0, cpu_hw=cpu, offload_mode=mode, batch=batch, advise=False)
    speeds = [p.estimate_tok_s for p in offload_points(e)]
    assert len(speeds) == e.model.n_layers + 1
    for fewer, more in zip(speeds, speeds[1:], strict=False):
        assert more >= fewer * (1 - 1e-12)
    everything = estimate(**setup, batch=batch, advise=False)
    assert speeds[-1] == everything.estimate_tok_s


@settings(max_examples=100, deadline=None)
@given(base, st.sampled_from([2, 3, 4, 8]), st.sampled_from(["nvlink", "pcie5", "pcie4", "pcie3x4", "900"]), st.integers(1, 256))
def test_n_devices_are_never_n_times_faster(setup: dict, tp: int, link: str, batch: int) -> None:
    one = estimate(**setup, batch=batch, advise=False)
    many = _estimate({**setup, "batch": batch}, {"tp": tp, "link": link})
    assert many.estimate_tok_s < tp * one.estimate_tok_s
    assert many.ceiling_tok_s >= many.estimate_tok_s


@settings(max_examples=100, deadline=None)
@given(base, layouts, st.integers(1, 64))
def test_a_ceiling_is_never_below_its_estimate_whatever_the_layout(setup: dict, layout: dict, batch: int) -> None:
    e = _estimate({**setup, "batch": batch}, layout)
    assert e.ceiling_tok_s >= e.estimate_tok_s > 0
    for p in context_points(e, [0, 4096, 65536]):
        assert p.ceiling_tok_s >= p.roofline_tok_s * (1 - 1e-12) or p.depth_tokens > 0
        assert p.roofline_tok_s >= p.estimate_tok_s


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["llama-3.1-8b", "llama-3.1-70b"]),
    st.sampled_from(["h100-sxm", "rtx-4090"]),
    st.floats(0.0, 0.99),
    st.floats(0.0, 0.99),
    st.integers(1, 12),
)
def test_speculation_speeds_up_with_acceptance(model: str, hw: str, a1: float, a2: float, k: int) -> None:
    low, high = sorted((a1, a2))
    slow = estimate(model, hw, quant="q4_k_m", draft="llama-3.2-1b", acceptance=low, draft_tokens=k, advise=False)
    fast = estimate(model, hw, quant="q4_k_m", draft="llama-3.2-1b", acceptance=high, draft_tokens=k, advise=False)
    assert slow.draft is not None and fast.draft is not None
    assert fast.draft.speculation.speedup >= slow.draft.speculation.speedup
    assert 1.0 <= fast.draft.speculation.tokens_per_pass <= k + 1


def test_an_absurdly_deep_bare_model_gets_a_bounded_offload_curve() -> None:
    """`--params 1e30` assumed 1.6e11 layers (such counts are refused as implausible now, issue 28, but
    `--layers` still takes any depth): the offload curve visits 257 evenly spread layer counts, 0 and
    all layers included, instead of one point per layer (which hung the CLI property test)."""
    e = estimate(None, "rtx-4090", params_b=1000, n_layers=10**11, gpu_layers=1, cpu_hw="ddr4-dual-channel", advise=False)
    n = e.setup.model.n_layers
    points = [p.gpu_layers for p in offload_points(e)]
    assert n > 10**10
    assert len(points) == MAX_LAYER_POINTS + 1 and points[0] == 0 and points[-1] == n
    assert points == sorted(points)
    shallow = estimate("llama-3.1-8b", "rtx-4090", gpu_layers=10, cpu_hw="ddr4-dual-channel", advise=False)
    assert [p.gpu_layers for p in offload_points(shallow)] == list(range(shallow.setup.model.n_layers + 1))
