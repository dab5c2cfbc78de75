"""Server engines' per-token host sampling (docs/PHYSICS.md section 4): llama-server, Ollama and LM Studio
copy each token's logits to the CPU and sample there; llama-bench, which the fit learned from, does not."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tokometer.catalog import engine_catalog, hardware_catalog, make_efficiency, model_catalog
from tokometer.catalog.efficiency import efficiency_for
from tokometer.catalog.serving import serving_engine
from tokometer.costmodel.layout import IDEAL
from tokometer.costmodel.roofline import Peak, decode_step, host_sampling_time_s
from tokometer.domain.units import NS
from tokometer.errors import CatalogError
from tokometer.usecases.estimate import estimate


def test_llama_server_is_its_own_engine_built_on_llama_cpp() -> None:
    engines = engine_catalog()
    server = engines.get("llama-server")
    assert server.id == "llama-server" and server.based_on == "llama-cpp"
    assert engines.get("llama.cpp (llama-server)").id == "llama-server"
    assert engines.get("llama-bench").id == "llama-cpp"
    assert server.efficiency.host_sampling_ns_per_vocab > 0
    assert engines.get("llama-cpp").efficiency.host_sampling_ns_per_vocab == 0.0


@pytest.mark.parametrize("engine", ["llama-server", "ollama", "lm-studio"])
def test_server_engines_borrow_the_fitted_table_and_add_their_sampling(engine: str) -> None:
    hw = hardware_catalog().get("h100-sxm")
    spec = engine_catalog().get(engine)
    theirs = efficiency_for(spec, hw)
    bench = efficiency_for(engine_catalog().get("llama-cpp"), hw)
    assert theirs.host_sampling_ns_per_vocab == spec.efficiency.host_sampling_ns_per_vocab > 0
    # the same fitted values; an engine the entry's rows never measured reads a band at least as wide
    same = replace(
        theirs, host_sampling_ns_per_vocab=0.0, source=bench.source,
        residual_log_sd=bench.residual_log_sd, prefill_residual_log_sd=bench.prefill_residual_log_sd,
    )
    assert same == bench
    assert theirs.residual_log_sd >= bench.residual_log_sd
    assert theirs.prefill_residual_log_sd >= bench.prefill_residual_log_sd


def test_sampling_time_is_vocabulary_times_the_per_entry_cost() -> None:
    gemma = model_catalog().get("gemma-4-26b-a4b").spec
    llama = model_catalog().get("llama-3-8b").spec
    eff = replace(IDEAL, host_sampling_ns_per_vocab=4.0)
    assert host_sampling_time_s(gemma, eff) == pytest.approx(4.0 * gemma.vocab_size * NS)
    assert host_sampling_time_s(gemma, eff) > host_sampling_time_s(llama, eff)  # 262144 > 128256 entries
    assert host_sampling_time_s(gemma, IDEAL) == 0.0


def test_every_stream_and_every_verified_token_is_sampled() -> None:
    spec = model_catalog().get("gpt-oss-20b").spec
    hw = hardware_catalog().get("rtx-4090")
    eff = replace(IDEAL, host_sampling_ns_per_vocab=4.0)

    def overhead(e, batch: int = 1, tokens: int = 1) -> float:  # type: ignore[no-untyped-def]
        step = decode_step(spec, spec.params, hw, e, batch=batch, peak=Peak(None, None), tokens_per_stream=tokens)
        return step.overhead_time_s

    per_token = host_sampling_time_s(spec, eff)
    assert overhead(eff) - overhead(IDEAL) == pytest.approx(per_token)
    assert overhead(eff, batch=4, tokens=3) - overhead(IDEAL, batch=4, tokens=3) == pytest.approx(12 * per_token)


def test_a_server_estimate_is_slower_by_exactly_the_sampling_time() -> None:
    bench = estimate("gemma-4-26b-a4b", "h200", quant="q4_k_m", engine="llama-cpp")
    server = estimate("gemma-4-26b-a4b", "h200", quant="q4_k_m", engine="llama-server")
    spec = model_catalog().get("gemma-4-26b-a4b").spec
    added = host_sampling_time_s(spec, engine_catalog().get("llama-server").efficiency)
    assert server.step.time_s - bench.step.time_s == pytest.approx(added)
    assert server.step.memory_time_s == pytest.approx(bench.step.memory_time_s)


def test_llama_server_runs_llama_cpp_scheduler() -> None:
    assert serving_engine("llama-server").engine.id == "llama-cpp"


def test_negative_sampling_cost_is_a_catalog_error() -> None:
    raw = {"bandwidth_fraction": 0.8, "layer_overhead_us": 1.0, "step_overhead_us": 1.0,
           "prefill_efficiency_max": 0.5, "prefill_half_tokens": 100.0}
    assert make_efficiency(raw, "test", "x").host_sampling_ns_per_vocab == 0.0
    with pytest.raises(CatalogError, match="host_sampling_ns_per_vocab.* must not be negative"):
        make_efficiency({**raw, "host_sampling_ns_per_vocab": -1.0}, "test", "x")


def test_a_layer_offloaded_server_step_still_samples_on_the_host() -> None:
    # 40 of 48 layers on an 8 GB card: the CPU layers change the step, not the sampling a token needs
    fields = {"quant": "q4_k_m", "gpu_layers": 40, "cpu_hw": "ddr5-dual-channel", "advise": False}
    bench = estimate("gemma-3-12b", "rtx-4060", engine="llama-cpp", **fields)
    server = estimate("gemma-3-12b", "rtx-4060", engine="llama-server", **fields)
    assert bench.lever_step is not None and bench.lever_step.cpu_bytes > 0
    spec = model_catalog().get("gemma-3-12b").spec
    added = host_sampling_time_s(spec, engine_catalog().get("llama-server").efficiency)
    assert server.step.time_s - bench.step.time_s == pytest.approx(added)
