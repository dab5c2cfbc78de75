"""The lever formulas one by one: links, all-reduce, layouts that must reduce to the plain step,
speculative arithmetic, memory views, and the figures."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokometer.catalog import hardware_catalog, model_catalog
from tokometer.costmodel.layout import Layout, Setup, kv_shards
from tokometer.costmodel.links import (
    ALLREDUCE_LAUNCH_US,
    LL_BANDWIDTH_SHARE,
    NVLINK_HOP_US,
    PCIE_HOP_US,
    allreduce_costs,
    allreduce_time_s,
    parse_link,
    pcie_link,
)
from tokometer.costmodel.memory import kv_cache_bytes, kv_view, split_weights
from tokometer.costmodel.roofline import decode_step
from tokometer.costmodel.speculative import tokens_per_pass
from tokometer.domain.units import GB, US
from tokometer.errors import InputError
from tokometer.report.json import estimate_json
from tokometer.usecases.estimate import estimate
from tokometer.usecases.placement import gpu_layer_count


def test_links_parse_to_per_direction_bandwidths() -> None:
    h100 = hardware_catalog().get("h100-sxm")
    rtx = hardware_catalog().get("rtx-4090")
    assert parse_link("nvlink", h100).bandwidth_gb_per_s == 450.0
    assert parse_link(None, h100).kind == "nvlink"
    assert parse_link(None, rtx).name == "pcie4x16"
    assert parse_link("pcie4", rtx).bandwidth_gb_per_s == pytest.approx(31.5, rel=0.001)
    assert parse_link("PCIe5x8", rtx).bandwidth_gb_per_s == pytest.approx(31.5, rel=0.001)
    assert parse_link("pcie3x16", rtx).bandwidth_gb_per_s == pytest.approx(15.75, rel=0.001)
    assert parse_link("100", rtx).bandwidth_gb_per_s == 100.0
    assert parse_link("nvlink", h100).hop_latency_us == NVLINK_HOP_US
    assert parse_link("pcie4", rtx).hop_latency_us == PCIE_HOP_US
    with pytest.raises(InputError, match="no NVLink"):
        parse_link("nvlink", rtx)
    with pytest.raises(InputError, match="unknown link"):
        parse_link("infiniband", rtx)


def test_allreduce_is_ring_latency_plus_size_over_bandwidth() -> None:
    link = pcie_link(4, 16)
    size = 8192.0
    two = allreduce_time_s(size, 2, link)
    # a small message rides the low-latency protocol, at a quarter of the link's effective rate
    assert two == pytest.approx(
        (ALLREDUCE_LAUNCH_US + 2 * PCIE_HOP_US) * US + size / (LL_BANDWIDTH_SHARE * 0.8 * link.bandwidth_gb_per_s * GB)
    )
    assert allreduce_time_s(size, 1, link) == 0.0
    assert allreduce_time_s(size, 8, link) > allreduce_time_s(size, 4, link) > two
    # nccl-tests#123 (DGX-A100, NVLink): ~10 us at 2 GPUs, ~34 us at 8, for tiny messages
    nv = parse_link("nvlink", hardware_catalog().get("a100-80gb-sxm"))
    assert allreduce_time_s(8, 2, nv) == pytest.approx(10e-6, rel=0.05)
    assert allreduce_time_s(8, 8, nv) == pytest.approx(34e-6, rel=0.05)


def test_allreduce_takes_the_cheaper_protocol_for_the_message_size() -> None:
    nv = parse_link("nvlink", hardware_catalog().get("h100-sxm"))
    (ll_fixed, ll_per_byte), (simple_fixed, simple_per_byte) = allreduce_costs(4, nv)
    assert ll_fixed < simple_fixed and ll_per_byte == pytest.approx(simple_per_byte / LL_BANDWIDTH_SHARE)
    crossover = (simple_fixed - ll_fixed) / (ll_per_byte - simple_per_byte)
    assert 64 * 1024 < crossover < 16 * 1024 * 1024  # decode steps below, prefill chunks above
    for size in (4096.0, crossover / 2, crossover * 2, 256e6):
        expected = min(ll_fixed + ll_per_byte * size, simple_fixed + simple_per_byte * size)
        assert allreduce_time_s(size, 4, nv) == pytest.approx(expected)
    # sgl-project/sglang#2904: vLLM's all-reduce of 1 MiB over 4 H100s takes 40 us (the one-rate
    # formula said 22 us); a 256 MB prefill message moves at nearly the full effective link rate
    assert allreduce_time_s(1024 * 1024, 4, nv) == pytest.approx(40e-6, rel=0.2)
    big = 256e6
    assert big * 1.5 / allreduce_time_s(big, 4, nv) > 0.95 * nv.effective_bytes_per_s


def test_gpu_layers_take_counts_and_shares() -> None:
    assert gpu_layer_count(None, 32) is None
    assert gpu_layer_count("26", 32) == 26
    assert gpu_layer_count(26, 32) == 26
    assert gpu_layer_count("0.8", 32) == 26
    assert gpu_layer_count(0.5, 32) == 16
    assert gpu_layer_count("1.0", 32) == 32
    assert gpu_layer_count("1", 32) == 1
    for bad in ("33", "1.2", "-1", "x"):
        with pytest.raises(InputError):
            gpu_layer_count(bad, 32)


def test_speculative_tokens_per_pass() -> None:
    assert tokens_per_pass(0.0, 4) == 1.0
    assert tokens_per_pass(0.8, 4) == pytest.approx(1 + 0.8 + 0.64 + 0.512 + 0.4096)
    assert tokens_per_pass(0.999999, 3) == pytest.approx(4.0, rel=1e-5)
    for bad in (1.0, -0.01, math.nan):
        with pytest.raises(InputError):
            tokens_per_pass(bad, 4)


def test_break_even_acceptance_is_where_speedup_is_one() -> None:
    e = estimate("llama-3.1-70b", "h100-sxm", quant="fp8", draft="llama-3.2-1b", acceptance=0.5)
    assert e.draft is not None
    a = e.draft.speculation.break_even_acceptance
    assert a is not None and 0 < a < 0.5
    at = estimate("llama-3.1-70b", "h100-sxm", quant="fp8", draft="llama-3.2-1b", acceptance=a)
    assert at.draft is not None and at.draft.speculation.speedup == pytest.approx(1.0, rel=1e-6)


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["llama-3.1-8b", "qwen3-30b-a3b", "gemma-3-12b", "deepseek-v3"]),
    st.sampled_from(["rtx-4090", "h100-sxm", "m2-ultra-76c", "ddr5-dual-channel"]),
    st.integers(1, 300),
    st.floats(0, 200_000),
)
def test_a_plain_layout_is_exactly_decode_step(name: str, hw: str, batch: int, depth: float) -> None:
    e = estimate(name, hw, quant="q4_k_m", batch=batch, context_tokens=int(depth))
    assert e.setup is not None and e.setup.layout == Layout()
    direct = decode_step(
        e.model, e.weights, e.hardware, e.efficiency, batch=batch, depth_tokens=float(int(depth)),
        kv_bytes_per_element=e.kv_dtype.bytes_per_weight, peak=e.peak, quantized=e.quantized,
    )
    assert e.step == direct
    all_on_gpu = estimate(name, hw, quant="q4_k_m", batch=batch, context_tokens=int(depth), gpu_layers=e.model.n_layers) \
        if e.hardware.kind != "cpu" else e
    assert all_on_gpu.step == direct


def test_tp_splits_kv_by_heads_and_replicates_mla() -> None:
    llama = model_catalog().get("llama-3.1-8b").spec  # 8 KV heads
    deepseek = model_catalog().get("deepseek-v3").spec  # MLA latent
    assert kv_shards(llama, 2) == 2 and kv_shards(llama, 16) == 8
    assert kv_shards(deepseek, 8) == 1
    view = kv_view(llama, copies=2)
    assert kv_cache_bytes(view, 1000, 2.0) == 2 * kv_cache_bytes(llama, 1000, 2.0)


def test_memory_views_add_a_draft_and_keep_gpu_layers() -> None:
    target = model_catalog().get("llama-3.1-8b").spec
    draft = model_catalog().get("llama-3.2-1b").spec
    both = kv_view(target, extra=[draft])
    assert kv_cache_bytes(both, 4096, 2.0) == kv_cache_bytes(target, 4096, 2.0) + kv_cache_bytes(draft, 4096, 2.0)
    half = kv_view(target, layers_share=0.5)
    assert kv_cache_bytes(half, 4096, 2.0) == pytest.approx(kv_cache_bytes(target, 4096, 2.0) / 2)
    w = target.params.scaled(0.5)
    gpu, cpu = split_weights(w, 0.75, head_on_gpu=False)
    assert gpu.total + cpu.total == pytest.approx(w.total)
    assert gpu.lm_head == 0 and cpu.embedding == w.embedding
    assert gpu.dense == pytest.approx(0.75 * w.dense)


def test_offload_memory_splits_between_gpu_and_cpu() -> None:
    whole = estimate("qwen2.5-32b", "rtx-4090", quant="q5_k_m")
    part = estimate("qwen2.5-32b", "rtx-4090", quant="q5_k_m", gpu_layers=0.8)
    assert not whole.memory.fits and part.memory.fits
    assert part.offload is not None
    assert part.offload.gpu_weights_gb + part.offload.cpu_weights_gb == pytest.approx(whole.memory.weights_gb)
    assert part.offload.fits_cpu


def test_tp_memory_is_spread_over_the_devices() -> None:
    one = estimate("llama-3.1-70b", "h100-sxm", quant="bf16", engine="vllm")
    four = estimate("llama-3.1-70b", "h100-sxm", quant="bf16", engine="vllm", tp=4)
    assert not one.memory.fits and four.memory.fits
    assert four.memory.available_gb == pytest.approx(4 * one.memory.available_gb)
    assert estimate_json(four)["parallel"]["memory_per_device_gb"] == pytest.approx(four.memory.total_gb / 4)


def test_setup_step_accepts_several_tokens_per_stream() -> None:
    e = estimate("llama-3.1-8b", "rtx-4090", quant="q4_k_m", context_tokens=4096)
    assert isinstance(e.setup, Setup)
    one = e.setup.step(1, 4096).step
    five = e.setup.step(1, 4096, tokens_per_stream=5).step
    assert five.kv_read_bytes == one.kv_read_bytes  # the cache is read once for the k+1 tokens
    assert five.kv_write_bytes == pytest.approx(5 * one.kv_write_bytes)
    assert five.flops == pytest.approx(5 * one.flops)
    assert one.time_s < five.time_s < 1.1 * one.time_s  # verification costs about one step


def _is_png(path: Path) -> None:
    import matplotlib.image

    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and image.shape[0] > 200 and image.shape[1] > 200


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"gpu_layers": 0.8, "quant": "q5_k_m", "model": "qwen2.5-32b"},
        {"tp": 2, "model": "llama-3.1-70b", "hw": "h100-sxm", "quant": "fp8"},
        {"model": "qwen3-30b-a3b", "batch": 8, "context_tokens": 16384},
        {"hw": "ddr5-dual-channel"},
    ],
)
def test_estimate_figures_are_valid_images(tmp_path: Path, options: dict) -> None:
    from tokometer.report.plots import plot_estimate

    args = {"model": "llama-3.1-8b", "hw": "rtx-4090", "quant": "q4_k_m", **options}
    e = estimate(args.pop("model"), args.pop("hw"), **args)
    _is_png(plot_estimate(e, tmp_path / "estimate.png"))
    if not options:
        assert "<svg" in plot_estimate(e, tmp_path / "estimate.svg").read_text()


def test_sweep_figures_and_the_cli_plot_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tokometer.cli import main
    from tokometer.report.plots import plot_sweep
    from tokometer.usecases.sweep import sweep

    by_context = sweep(["llama-3.1-8b", "qwen3-30b-a3b"], ["rtx-4090"], ["q4_k_m"], [0, 4096, 32768], [1])
    _is_png(plot_sweep(by_context, tmp_path / "context.png"))
    by_batch = sweep(["llama-3.1-8b"], ["rtx-4090", "h100-sxm"], ["q8_0"], [512], [1, 8, 64])
    _is_png(plot_sweep(by_batch, tmp_path / "batch.png"))
    single = sweep(["llama-3.1-8b"], ["rtx-4090", "h100-sxm"], ["q8_0"], [512], [1])
    _is_png(plot_sweep(single, tmp_path / "bars.png"))
    main(["estimate", "--plot", str(tmp_path / "cli.png")])
    _is_png(tmp_path / "cli.png")
    main(["sweep", "--context", "0,8192", "--plot", str(tmp_path / "cli-sweep.png")])
    _is_png(tmp_path / "cli-sweep.png")
    told = capsys.readouterr().err  # each --plot says where it wrote its file
    assert f"plot written to {(tmp_path / 'cli.png').resolve()}" in told and f"plot written to {(tmp_path / 'cli-sweep.png').resolve()}" in told
    with pytest.raises(InputError, match="must end in"):
        plot_sweep(single, tmp_path / "figure.gif")


def test_plot_without_matplotlib_names_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tokometer.report.plots import plot_estimate

    e = estimate("llama-3.1-8b", "rtx-4090", quant="q4_k_m")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now raises ImportError
    with pytest.raises(InputError, match="pip install matplotlib"):
        plot_estimate(e, tmp_path / "estimate.png")


def test_matplotlib_is_a_dependency_but_off_the_quick_cli_path() -> None:
    import tomllib

    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
    assert any(d.startswith("matplotlib") for d in project["dependencies"])
    code = "import sys; from tokometer.cli import main\ntry:\n    main(['estimate'])\nexcept SystemExit:\n    pass\nprint('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")})
    assert out.stdout.strip().splitlines()[-1] == "False"
