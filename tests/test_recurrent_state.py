"""A recurrent layer's state traffic and extra kernels in the decode step (`roofline.recurrent_state_bytes`,
`Efficiency.recurrent_layer_extra`; docs/PHYSICS.md section 4, "Recurrent layers' state traffic")."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tokometer.catalog import engine_catalog, hardware_catalog, make_efficiency, model_catalog
from tokometer.catalog.efficiency import efficiency_for
from tokometer.costmodel.roofline import recurrent_state_bytes
from tokometer.errors import CatalogError
from tokometer.usecases.estimate import estimate


def _state_elements(model_id: str) -> float:
    spec = model_catalog().get(model_id).spec
    return sum(g.n_layers * g.state_elements for g in spec.attention if g.kind == "linear")


def test_ggml_engines_document_an_fp32_state_and_ollamas_go_engine_the_decomposed_rule() -> None:
    for engine in ("llama-cpp", "llama-server", "ollama", "lm-studio", "llamafile", "docker-model-runner"):
        eff = engine_catalog().get(engine).efficiency
        assert (eff.recurrent_state_bytes, eff.recurrent_layer_extra) == (24.0, 0.0), engine
    eff = engine_catalog().get("ollama-engine").efficiency
    assert (eff.recurrent_state_bytes, eff.recurrent_layer_extra) == (72.0, 0.6)
    assert engine_catalog().get("mlx").efficiency.recurrent_state_bytes is None  # not documented: one read


def test_the_engines_own_figures_survive_the_fitted_entry_it_reads() -> None:
    """The fitted table pools Ollama's Go engine with llama.cpp: the entry it reads must still carry its own rule."""
    hw = hardware_catalog().get("m3-max-40c-64gb")
    assert efficiency_for(engine_catalog().get("ollama-engine"), hw, "metal").recurrent_state_bytes == 72.0
    assert efficiency_for(engine_catalog().get("llama-server"), hw, "metal").recurrent_state_bytes == 24.0


def test_state_bytes_are_charged_only_on_recurrent_layers() -> None:
    eff = engine_catalog().get("llama-cpp").efficiency
    dense = model_catalog().get("llama-3.1-8b").spec
    assert recurrent_state_bytes(dense, eff, 2.0) == 0.0
    hybrid = model_catalog().get("qwen3.5-35b-a3b").spec
    assert hybrid.recurrent_layers == 30  # full attention on every 4th of 40 layers
    assert recurrent_state_bytes(hybrid, eff, 2.0) == pytest.approx(_state_elements("qwen3.5-35b-a3b") * (24.0 - 2.0))
    assert recurrent_state_bytes(hybrid, replace(eff, recurrent_state_bytes=None), 2.0) == 0.0


def test_the_decode_step_reads_the_state_traffic_and_pays_the_extra_kernels() -> None:
    hw = hardware_catalog().get("m4-max-40c")
    fused = efficiency_for(engine_catalog().get("llama-cpp"), hw, "metal")
    once = replace(fused, recurrent_state_bytes=None)
    decomposed = replace(fused, recurrent_state_bytes=72.0, recurrent_layer_extra=0.6)
    steps = {
        name: estimate("qwen3.5-35b-a3b", hw, quant="q4_k_m", engine="llama-cpp", efficiency=eff, prompt_tokens=0).step
        for name, eff in (("once", once), ("fused", fused), ("decomposed", decomposed))
    }
    state = _state_elements("qwen3.5-35b-a3b")
    assert steps["fused"].kv_read_bytes - steps["once"].kv_read_bytes == pytest.approx(state * (24.0 - 2.0))
    assert steps["decomposed"].kv_read_bytes - steps["fused"].kv_read_bytes == pytest.approx(state * 48.0)
    extra = steps["decomposed"].overhead_time_s - steps["fused"].overhead_time_s
    assert extra == pytest.approx(0.6 * 30 * (fused.layer_overhead_us + fused.launch_layer_us) * 1e-6)
    assert steps["once"].time_s < steps["fused"].time_s < steps["decomposed"].time_s


@pytest.mark.parametrize(
    ("model", "quant", "before", "after"),
    [
        # llama.cpp PR #20091 (github.com/ggml-org/llama.cpp/pull/20091, 2026-03-03), Apple M4 Max, greedy decode of
        # 500 tokens, decomposed delta rule -> one fused op; Qwen3.5-27B has Qwen3.6-27B's architecture
        ("qwen3.5-0.8b", "q8_0", 192.0, 244.0),
        ("qwen3.6-27b", "q4_k_m", 15.6, 17.3),
    ],
)
def test_fusing_the_delta_rule_speeds_decode_as_published(model: str, quant: str, before: float, after: float) -> None:
    """Nothing was fitted on these: the speed-up follows from the documented passes and kernels alone."""
    hw = hardware_catalog().get("m4-max-40c")
    fused = efficiency_for(engine_catalog().get("llama-cpp"), hw, "metal")
    decomposed = replace(fused, recurrent_state_bytes=72.0, recurrent_layer_extra=0.6)
    times = [
        estimate(model, hw, quant=quant, engine="llama-cpp", efficiency=eff, prompt_tokens=0).step.time_s
        for eff in (fused, decomposed)
    ]
    assert times[1] / times[0] == pytest.approx(after / before, rel=0.05)


BASE = {"bandwidth_fraction": 0.8, "layer_overhead_us": 25.0, "step_overhead_us": 400.0, "prefill_efficiency_max": 0.55,
        "prefill_half_tokens": 128.0}


def test_a_valid_entry_keeps_its_recurrent_figures() -> None:
    eff = make_efficiency({**BASE, "recurrent_state_bytes": 64.0, "recurrent_layer_extra": 0.6}, "x", "engine default")
    assert (eff.recurrent_state_bytes, eff.recurrent_layer_extra) == (64.0, 0.6)


@pytest.mark.parametrize(("key", "value"), [("recurrent_state_bytes", 0.0), ("recurrent_layer_extra", -0.1)])
def test_the_catalog_refuses_impossible_recurrent_figures(key: str, value: float) -> None:
    with pytest.raises(CatalogError, match=key):
        make_efficiency({**BASE, key: value}, "engines.toml: entry 'x'", "engine default")


def test_the_explanation_names_the_recurrent_state_and_its_traffic() -> None:
    from tokometer.report.json import explanation

    hybrid = explanation(estimate("qwen3.5-9b", "rtx-4090", quant="q4_k_m", engine="llama-cpp"))[0]
    assert "KV cache and recurrent state (24 of 32 layers, 24 bytes per element a token)" in hybrid
    dense = explanation(estimate("llama-3.1-8b", "rtx-4090", quant="q4_k_m", engine="llama-cpp"))[0]
    assert "of KV cache at" in dense and "recurrent" not in dense
