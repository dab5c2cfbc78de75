"""Qwen3.5 2B / 4B / 9B presets: the hybrid layout their model cards print, the parameters llama-bench counts, and
the published rows that name them resolving to them instead of a bare dense model of their size."""

from __future__ import annotations

import pytest

from tokometer.catalog import model_catalog
from tokometer.fitting import aliases


# llama-bench's params column in llama.cpp PR #20455's thread (github.com/ggml-org/llama.cpp/pull/20455, 2026-03-13):
# Qwen3.5-9B 8.95B, 4B 4.21B, 2B 1.88B, 0.8B 0.75B
@pytest.mark.parametrize(("preset", "params_b"), [("qwen3.5-2b", 1.88), ("qwen3.5-4b", 4.21), ("qwen3.5-9b", 8.95)])
def test_the_presets_count_llama_benchs_parameters(preset: str, params_b: float) -> None:
    assert model_catalog().get(preset).spec.total_params / 1e9 == pytest.approx(params_b, rel=0.005)


@pytest.mark.parametrize(("preset", "layers", "recurrent", "state_per_layer"),
                         [("qwen3.5-2b", 24, 18, 16 * 128 * 128), ("qwen3.5-4b", 32, 24, 32 * 128 * 128),
                          ("qwen3.5-9b", 32, 24, 32 * 128 * 128)])
def test_three_of_four_layers_are_gated_deltanet(preset: str, layers: int, recurrent: int, state_per_layer: int) -> None:
    spec = model_catalog().get(preset).spec
    assert (spec.n_layers, spec.recurrent_layers) == (layers, recurrent)
    linear = [g for g in spec.attention if g.kind == "linear"]
    assert linear and all(g.state_elements >= state_per_layer for g in linear)  # plus the conv window
    assert sum(g.n_layers for g in spec.attention if g.kind != "linear") == layers - recurrent


@pytest.mark.parametrize(
    ("as_stated", "expected"),
    [("Qwen3.5-9B (unsloth GGUF)", "qwen3.5-9b"), ("Qwen3.5-9B (byteshape GGUF)", "qwen3.5-9b"), ("Qwen3.5-4B (bartowski GGUF)", "qwen3.5-4b"),
     ("Qwen3.5-2B (unsloth GGUF)", "qwen3.5-2b"), ("qwen3.5:9b", "qwen3.5-9b")],
)
def test_published_names_resolve_to_the_presets(as_stated: str, expected: str) -> None:
    found = aliases.resolve_model(as_stated)
    assert found is not None and found[0].id == expected
