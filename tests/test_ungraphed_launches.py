"""llamafile's CUDA modules are built without CUDA graphs (docs/PHYSICS.md section 4, `ungraphed_layer_us`): each op
of a decode step is launched from the host, a per-layer cost on top of the llama.cpp entry the engine reads."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tokometer.catalog import engine_catalog, hardware_catalog
from tokometer.catalog.efficiency import efficiency_for
from tokometer.errors import CatalogError
from tokometer.usecases.estimate import estimate


def test_llamafile_carries_a_launch_cost_and_llama_cpp_none() -> None:
    engines = engine_catalog()
    assert engines.get("llamafile").ungraphed_layer_us > 0
    assert engines.get("LocalScore (llamafile / llama.cpp)").id == "llamafile"
    for graphed in ("llama-cpp", "llama-server", "ollama"):
        assert engines.get(graphed).ungraphed_layer_us == 0.0


def test_the_launch_cost_rides_on_the_borrowed_entry_on_cuda_only() -> None:
    engines = engine_catalog()
    llamafile, parent = engines.get("llamafile"), engines.get("llama-cpp")
    cuda = hardware_catalog().get("rtx-4090")
    ours, theirs = efficiency_for(llamafile, cuda, "cuda"), efficiency_for(parent, cuda, "cuda")
    assert ours.launch_layer_us == llamafile.ungraphed_layer_us > 0
    assert theirs.launch_layer_us == 0.0
    assert ours.layer_overhead_us == theirs.layer_overhead_us  # the fitted tau_layer itself is untouched
    assert ours.step_overhead_us == theirs.step_overhead_us
    assert ours.bandwidth_fraction == theirs.bandwidth_fraction
    # Metal has no graphs to lose; ROCm is not charged (llama.cpp's HIP graphs were off by default for years)
    for hw_id, backend in (("m3-max-40c", "metal"), ("rx-7900-xtx", "rocm")):
        hw = hardware_catalog().get(hw_id)
        assert efficiency_for(llamafile, hw, backend).launch_layer_us == 0.0


def test_a_llamafile_cuda_estimate_is_slower_by_layers_times_the_launch_cost() -> None:
    bench = estimate("llama-3.1-8b", "rtx-4090", quant="q4_k_m", engine="llama-cpp")
    ours = estimate("llama-3.1-8b", "rtx-4090", quant="q4_k_m", engine="llamafile")
    added_s = bench.model.n_layers * engine_catalog().get("llamafile").ungraphed_layer_us * 1e-6
    assert ours.step.time_s - bench.step.time_s == pytest.approx(added_s, rel=1e-6)
    assert ours.estimate_tok_s < bench.estimate_tok_s
    # prefill's kernels run far longer than a launch, so the host keeps ahead: prefill does not pay it
    assert ours.prefill is not None and bench.prefill is not None
    assert ours.prefill.time_s == pytest.approx(bench.prefill.time_s)


def test_the_decode_sweep_agrees_with_the_single_estimate() -> None:
    import numpy as np

    from tokometer.usecases.sweep import sweep

    result = sweep(["llama-3.1-8b"], ["rtx-4090"], ["q4_k_m"], [4096], [1], engine="llamafile")
    time = np.broadcast_to(result.grid.time_s, result.shape)
    single = estimate("llama-3.1-8b", "rtx-4090", quant="q4_k_m", engine="llamafile", context_tokens=4096, advise=False)
    assert 1 / time[0, 0, 0, 0, 0] == pytest.approx(single.estimate_tok_s, rel=1e-9)


def test_a_negative_launch_cost_is_a_catalog_error() -> None:
    from tokometer.catalog import _make_engine

    raw = {
        "name": "x", "source": "s", "runtime_overhead_gb": 0.5, "usable_memory_fraction": 0.9, "kv_allocation": "contiguous",
        "efficiency": {"bandwidth_fraction": 0.8, "layer_overhead_us": 1.0, "step_overhead_us": 1.0,
                       "prefill_efficiency_max": 0.5, "prefill_half_tokens": 1.0},
    }
    assert _make_engine("x", raw, "engines.toml").ungraphed_layer_us == 0.0
    assert _make_engine("x", {**raw, "ungraphed_layer_us": 7.5}, "engines.toml").ungraphed_layer_us == 7.5
    with pytest.raises(CatalogError, match="ungraphed_layer_us must be >= 0"):
        _make_engine("x", {**raw, "ungraphed_layer_us": -1.0}, "engines.toml")


def test_without_the_cost_llamafile_reads_llama_cpp_entry_unchanged() -> None:
    llamafile = replace(engine_catalog().get("llamafile"), ungraphed_layer_us=0.0)
    cuda = hardware_catalog().get("rtx-4090")
    assert efficiency_for(llamafile, cuda, "cuda").launch_layer_us == 0.0
