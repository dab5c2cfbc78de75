"""Presets added for the published 2025-26 serving rows whose model had none (issue 29, docs/notes/notes_presets.md).

Each preset's parameter count is checked against the figure its publisher states (model card or the Hub's
safetensors total); the printed names of the serving rows resolve to it; a model whose architecture has a
part the accounting lacks keeps its rows unscored with that reason rather than a guessed preset.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from tokometer.catalog import model_catalog
from tokometer.fitting import aliases
from tokometer.ingest.architecture import spec_from_config


def _within_published(count_b: float, stated_b: float) -> bool:
    """Within 2 % of a published figure, or within the figure's own rounding when it is printed coarser
    ("3B" active is rounded to the billion, so anything from 2.5 to 3.5 prints as 3B)."""
    exponent = Decimal(str(stated_b)).normalize().as_tuple().exponent
    half_unit = 0.5 * 10.0 ** min(int(exponent), 0) if isinstance(exponent, int) else 0.0
    return abs(count_b - stated_b) <= max(0.02 * stated_b, half_unit)


@pytest.mark.parametrize(
    ("preset_id", "total_b"),
    [
        ("qwen3.5-397b-a17b", 397.0),  # model card: 397B total
        ("glm-5", 744.0),  # model card: 744B total
        ("glm-4.7-flash", 30.0),  # model card: 30B-A3B
        ("ernie-4.5-21b-a3b", 21.8),  # the Hub's safetensors total (the card's "21B" is the name)
        ("step-3.5-flash", 196.0),  # README: 196B backbone (+ 0.81B MTP head, not counted)
        ("ministral-3-14b", 13.5),  # model card: 13.5B language model (+ 0.4B vision encoder)
    ],
)
def test_new_presets_count_their_published_total_within_2_percent(preset_id: str, total_b: float) -> None:
    preset = model_catalog().get(preset_id)
    assert preset.source.startswith("https://huggingface.co/")
    assert preset.spec.total_params / 1e9 == pytest.approx(total_b, rel=0.02)


@pytest.mark.parametrize(
    ("preset_id", "active_b"),
    [
        ("qwen3.5-397b-a17b", 17.0),  # model card: 17B active
        ("glm-5", 40.0),  # model card: 40B active
        ("ernie-4.5-21b-a3b", 3.0),  # model card: 3B activated
        ("step-3.5-flash", 11.0),  # README: about 11B active
    ],
)
def test_new_presets_read_their_published_active_count_per_token(preset_id: str, active_b: float) -> None:
    """Publishers count active parameters with or without the embedding rows and the output head; the
    published figure must lie within 2 % (or its own rounding) of one of the two ways of counting."""
    spec = model_catalog().get(preset_id).spec
    per_token = spec.active_params(1.0)  # dense + the top-k experts + the output head
    head = spec.params.embedding if spec.tied_embeddings else spec.params.lm_head
    without_head = (per_token - head) / 1e9
    with_embedding = (per_token + (0.0 if spec.tied_embeddings else spec.params.embedding)) / 1e9
    assert spec.n_experts_per_token > 0
    assert any(_within_published(count, active_b) for count in (without_head, per_token / 1e9, with_embedding)), (
        without_head, with_embedding)


def test_glm5_is_read_as_mla_with_the_sparse_attention_indexer() -> None:
    spec = model_catalog().get("glm-5").spec
    (group,) = spec.attention
    # per token per layer: the 512 latent + the 64 rope key + the indexer's 128-wide key
    assert (group.kind, group.n_layers, group.kv_elements_per_token) == ("mla", 78, 512 + 64 + 128)
    assert (spec.n_experts, spec.n_experts_per_token) == (256, 8)
    assert any("Sparse Attention" in w for w in spec.warnings)


def test_glm47_flash_is_read_as_mla() -> None:
    spec = model_catalog().get("glm-4.7-flash").spec
    (group,) = spec.attention
    assert (group.kind, group.n_layers, group.kv_elements_per_token) == ("mla", 47, 512 + 64)
    assert (spec.n_experts, spec.n_experts_per_token) == (64, 4)


def test_qwen35_397b_keeps_kv_on_its_full_attention_layers_only() -> None:
    spec = model_catalog().get("qwen3.5-397b-a17b").spec
    groups = {g.kind: g for g in spec.attention}
    assert groups["full"].n_layers == 15 and groups["linear"].n_layers == 45
    assert groups["full"].kv_elements_per_token == 2 * 2 * 256  # K and V, 2 KV heads of 256
    assert groups["linear"].kv_elements_per_token == 0 and groups["linear"].state_elements > 0


def test_step35_sliding_layers_project_their_own_head_count() -> None:
    preset = model_catalog().get("step-3.5-flash")
    spec = preset.spec
    groups = {g.kind: g for g in spec.attention}
    assert (groups["full"].n_layers, groups["sliding"].n_layers) == (12, 33)
    assert groups["sliding"].window_tokens == 128
    # same 8 KV heads of 128 on both kinds; 96 query heads on the sliding layers against 64 on the full ones
    assert groups["full"].kv_elements_per_token == groups["sliding"].kv_elements_per_token == 2 * 8 * 128
    assert (groups["full"].attention_dim, groups["sliding"].attention_dim) == (64 * 128, 96 * 128)
    uniform = spec_from_config({k: v for k, v in preset.config.items() if k != "attention_other_setting"}, "uniform")
    # 32 more heads on 33 layers: q and o rows (2 x 4096 x 128 each head) and the gate's 4096 per head
    assert spec.total_params - uniform.total_params == 33 * 32 * (2 * 4096 * 128 + 4096)
    assert (spec.n_experts, spec.n_experts_per_token) == (288, 8)


def test_ministral3_is_read_as_a_dense_mistral_decoder_without_sliding_window() -> None:
    spec = model_catalog().get("ministral-3-14b").spec
    (group,) = spec.attention
    assert (group.kind, group.n_layers, group.kv_elements_per_token) == ("full", 40, 2 * 8 * 128)
    assert not spec.is_moe and not spec.warnings and not spec.tied_embeddings


def test_ernie_moe_layers_follow_start_end_and_interval() -> None:
    base = dict(model_catalog().get("ernie-4.5-21b-a3b").config)
    every = spec_from_config(base, "every")
    alternate = spec_from_config({**base, "moe_layer_interval": 2}, "alternate")
    # 27 MoE layers (1..27) against 14 ((i + 1) even, i >= 1): the routed weights scale with the MoE layers
    assert every.params.routed_experts / alternate.params.routed_experts == pytest.approx(27 / 14)
    # the layers without experts carry the dense 12288-wide MLP instead
    assert alternate.params.dense > every.params.dense
    assert not every.warnings


@pytest.mark.parametrize(
    ("as_stated", "source", "params_b", "expected"),
    [
        ("GLM-5", "IX-BESTGPU", 744.0, "glm-5"),
        ("zai-org/GLM-5-FP8", "IX-BLOG", 744.0, "glm-5"),
        ("nvidia/GLM-5-NVFP4", "IX-BLOG", 744.0, "glm-5"),
        ("zai-org/GLM-5.1", "SGL-COOKBOOK", 744.0, "glm-5"),
        ("Qwen-3.5-397B-A17B", "IX-BESTGPU", 397.0, "qwen3.5-397b-a17b"),
        ("Qwen/Qwen3.5-397B-A17B", "SGL-COOKBOOK", None, "qwen3.5-397b-a17b"),
        ("zai-org/GLM-4.7-Flash", "SGL-COOKBOOK", 30.0, "glm-4.7-flash"),
        ("baidu/ERNIE-4.5-21B-A3B-PT", "SGL-COOKBOOK", 21.0, "ernie-4.5-21b-a3b"),
        ("deepseek-ai/DeepSeek-Math-V2", "SGL-COOKBOOK", 671.0, "deepseek-v3.2"),
        ("Qwen/Qwen3-VL-235B-A22B-Instruct", "SGL-COOKBOOK", None, "qwen3-235b-a22b"),
        ("stepfun-ai/Step-3.5-Flash", "SGL-COOKBOOK", None, "step-3.5-flash"),
        ("mistralai/Ministral-3-14B-Instruct-2512", "SGL-COOKBOOK", None, "ministral-3-14b"),
        # single-stream GGUF rows (llama-bench type strings and file names) of the presets added for them
        ("mistral3 8B Q4_K - Medium", "DANDIN-SPARK", 8.49, "ministral-3-8b"),
        ("mistral3 3B Q4_K - Medium", "DANDIN-SPARK", 3.43, "ministral-3-3b"),
        ("qwen3 1.7B Q4_K - Medium", "DANDIN-SPARK", 1.72, "qwen3-1.7b"),
        ("gemma-4-E2B (unsloth GGUF)", "GHOST91-FITBENCH", 4.6, "gemma-4-e2b"),
    ],
)
def test_published_serving_names_resolve_to_the_new_presets(
    as_stated: str, source: str, params_b: float | None, expected: str
) -> None:
    found = aliases.resolve_model(as_stated, source, params_b)
    assert found is not None, as_stated
    assert found[0].id == expected
    assert found[1]


def test_a_model_with_an_unmodelled_architecture_stays_unscored_with_that_reason() -> None:
    from tokometer.fitting.serving_families import published_paths
    from tokometer.fitting.serving_runs import group_runs, read_rows

    (path,) = [p for p in published_paths() if p.stem == "IX-BLOG"]
    rows, _ = read_rows(path)
    v4 = [run for run in group_runs(r for r in rows if r.text("model") == "deepseek-ai/DeepSeek-V4-Pro")]
    assert v4
    for run in v4:
        assert run.reason is not None
        assert "architecture the accounting does not model" in run.reason and "compressed" in run.reason
    assert aliases.resolve_model("deepseek-ai/DeepSeek-V4-Pro", "IX-BLOG", 1600.0) is None
    assert aliases.unmodelled_model_reason("inclusionAI/LLaDA2.1-mini", "SGL-COOKBOOK") is not None
    assert aliases.unmodelled_model_reason("GLM-5", "IX-BLOG") is None


def test_an_unmodelled_model_entry_needs_its_reason(tmp_path: Path) -> None:
    from tokometer.errors import CatalogError

    bad = tmp_path / "RESOLVE.toml"
    bad.write_text('[[unmodelled_model]]\nas_stated = "x"\n', encoding="utf-8")
    with pytest.raises(CatalogError, match=r"\[\[unmodelled_model\]\] #1: missing reason"):
        aliases.resolve_table.__wrapped__(bad)


# llama-bench prints a GGUF's own parameter count ("mistral3 8B ... 8.49 B"): the language model alone, counted
# from its tensors. Each preset below was transcribed from a config.json copy or a registry of the upstream
# projects (sources in models.toml); the count its config implies must land on the printed figure.
@pytest.mark.parametrize(
    ("preset_id", "printed_b"),
    [
        ("qwen3-1.7b", 1.72),  # DANDIN-SPARK "qwen3 1.7B Q4_K - Medium"
        ("ministral-3-8b", 8.49),  # DANDIN-SPARK / R9700-TOOLBOX "mistral3 8B"
        ("ministral-3-3b", 3.43),  # DANDIN-SPARK "mistral3 3B" (tied embeddings: untied would be 3.83 B)
        ("ministral-3-14b", 13.51),  # DANDIN-SPARK "mistral3 14B"
        ("gemma-4-e2b", 4.6),  # GHOST91-FITBENCH's Gemma 4 E2B GGUF, per-layer embeddings included
        ("tinyllama-1.1b", 1.10),  # KREIER-JETSON "llama 1B" (tinyllama-1.1b-chat-v1.0.Q4_K_M.gguf)
        ("gemma-3-270m", 0.268),  # keras-hub's gemma3_270m params 268098176
    ],
)
def test_gguf_presets_count_what_llama_bench_prints(preset_id: str, printed_b: float) -> None:
    count = model_catalog().get(preset_id).spec.total_params / 1e9
    exponent = Decimal(str(printed_b)).normalize().as_tuple().exponent
    half_unit = 0.5 * 10.0 ** int(exponent) if isinstance(exponent, int) else 0.0
    assert abs(count - printed_b) <= half_unit + 1e-9  # within the printed figure's own rounding


def test_gemma4_e2b_shared_layers_have_no_kv_projections_and_a_double_wide_mlp() -> None:
    """MaxText's Gemma 4 E2B/E4B tensor shapes: the 20 KV-shared layers hold no k_proj, v_proj or k_norm, and
    E2B's (`use_double_wide_mlp`) MLP is 2 x 6144 wide on them; E4B's is not double-wide."""
    preset = model_catalog().get("gemma-4-e2b")
    spec = preset.spec
    plain = dict(preset.config, num_kv_shared_layers=0, use_double_wide_mlp=False)
    base = spec_from_config(plain, "plain").total_params
    hidden, inter = 1536, 6144
    # 20 shared layers: 16 sliding (1 KV head x 256) and 4 global (1 x 512): K and V projections and k_norm
    kv = 16 * (2 * hidden * 256 + 256) + 4 * (2 * hidden * 512 + 512)
    assert spec.total_params - base == pytest.approx(20 * 3 * hidden * inter - kv)
    assert sum(g.n_layers for g in spec.attention) == 15  # layers 0-14 store K/V
    e4b = model_catalog().get("gemma-4-e4b")
    e4b_plain = spec_from_config(dict(e4b.config, num_kv_shared_layers=0), "plain").total_params
    assert e4b.spec.total_params < e4b_plain  # only the K/V projections go: no double-wide MLP


@pytest.mark.parametrize(
    ("distill", "base"),
    [
        ("DeepSeek-R1-Distill-Llama-8B", "llama-3.1-8b"),
        ("DeepSeek R1 Distill Qwen 14B", "qwen2.5-14b"),  # LOCALSCORE prints it so
        ("deepseek-r1-distill-qwen-32b", "qwen2.5-32b"),
        ("DeepSeek-R1-Distill-Llama-70B", "llama-3.3-70b"),
    ],
)
def test_deepseek_r1_distills_read_as_the_base_they_fine_tune(distill: str, base: str) -> None:
    """DeepSeek-R1's README names each distill's base; a fine-tune keeps its base's shape, so the catalog reads
    the distill's name as the base preset. The name rules still never read a distill by its family's words."""
    assert model_catalog().find(distill).id == base
    assert aliases.resolve_model(distill.replace(" ", "-") + "-Abliterated") is None
