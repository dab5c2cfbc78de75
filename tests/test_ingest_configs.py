"""Public config.json files -> ModelSpec: the published parameter counts, bytes read and KV per token."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from helpers import run_cli
from ingest_helpers import FIXTURES, fixture_config
from tokometer.catalog import quant_catalog
from tokometer.costmodel.memory import kv_bytes_per_token, kv_cache_bytes, weight_bytes_read
from tokometer.errors import IngestError
from tokometer.ingest import load_model
from tokometer.ingest.hf_config import default_quant, prepare_config

BF16 = 2.0


def spec_of(name: str):
    return load_model(str(FIXTURES / f"{name}.json"))


def bf16_read_per_token(spec) -> float:
    return weight_bytes_read(spec, spec.params.scaled(BF16), 1.0)


def test_llama_3_1_8b_has_8_03_billion_parameters() -> None:
    spec = spec_of("Llama-3.1-8B")
    assert spec.total_params == 8_030_261_248
    assert (spec.n_layers, spec.n_heads, spec.n_kv_heads, spec.head_dim) == (32, 32, 8, 128)
    assert kv_bytes_per_token(spec, BF16) == 32 * 2 * 8 * 128 * 2  # 128 KiB
    assert spec.warnings == ()


def test_qwen3_30b_a3b_total_and_bytes_read_per_token() -> None:
    spec = spec_of("Qwen3-30B-A3B")
    assert spec.total_params == 30_532_122_624  # 30.5 B
    assert spec.is_moe and (spec.n_experts, spec.n_experts_per_token) == (128, 8)
    # attention + router + 8 of 128 experts + LM head (+ one embedding row): 3.04 B weights, 6.08 GB in bf16
    assert spec.active_params(1.0) == pytest.approx(3.042e9, rel=1e-3)
    assert bf16_read_per_token(spec) == pytest.approx(6.084e9, rel=1e-3)


def test_deepseek_v3_without_mtp_reads_37b_and_stores_mla_kv() -> None:
    spec = spec_of("DeepSeek-V3")
    assert spec.total_params == pytest.approx(671.0e9, rel=2e-3)
    assert 36.0e9 < spec.active_params(1.0) < 37.5e9
    assert kv_bytes_per_token(spec, BF16) == (512 + 64) * 61 * 2  # 70,272 B ~ 70 KB
    assert [g.kind for g in spec.attention] == ["mla"]
    assert spec.head_dim == 192
    assert any("multi-token-prediction" in w for w in spec.warnings)
    assert spec.default_quant == "fp8"


def test_gpt_oss_20b_total_and_alternating_windows() -> None:
    spec = spec_of("gpt-oss-20b")
    assert spec.total_params == 20_914_757_184  # 20.9 B
    assert spec.active_params(1.0) == pytest.approx(3.61e9, rel=0.01)
    groups = {g.kind: g for g in spec.attention}
    assert groups["sliding"].n_layers == 12 and groups["sliding"].window_tokens == 128
    assert groups["full"].n_layers == 12
    assert spec.default_quant == "mxfp4"


def test_gemma_3_12b_text_config_defaults_and_5_to_1_sliding_layers() -> None:
    raw = fixture_config("Gemma-3-12b-it")
    assert "head_dim" not in raw["text_config"] and "vocab_size" not in raw["text_config"]
    spec = spec_of("Gemma-3-12b-it")
    assert (spec.head_dim, spec.vocab_size, spec.tied_embeddings) == (256, 262_208, True)
    assert spec.total_params == pytest.approx(11.77e9, rel=2e-3)  # language model; vision tower not counted
    groups = {g.kind: g for g in spec.attention}
    assert groups["full"].n_layers == 8 and groups["sliding"].n_layers == 40
    assert groups["sliding"].window_tokens == 1024
    per_layer = 2 * 8 * 256 * BF16  # K and V, 8 KV heads x 256
    assert kv_bytes_per_token(spec, BF16) == 48 * per_layer
    assert kv_bytes_per_token(spec, BF16, math.inf) == 8 * per_layer
    at_32k = kv_cache_bytes(spec, 32_768, BF16)
    assert at_32k == 8 * per_layer * 32_768 + 40 * per_layer * 1024
    assert at_32k == pytest.approx(2.483e9, rel=1e-3)


def test_mixtral_and_phi_4_totals() -> None:
    mixtral = spec_of("Mixtral-8x7B")
    assert mixtral.total_params == 46_702_792_704
    assert (mixtral.n_experts, mixtral.n_experts_per_token) == (8, 2)
    assert spec_of("Phi-4").total_params == 14_659_507_200


def test_fixtures_agree_with_the_catalog_presets() -> None:
    """The JSON files are the public config.json; the catalog holds the same fields as TOML."""
    from tokometer.catalog import model_catalog

    pairs = {
        "Llama-3.1-8B": "llama-3.1-8b",
        "Qwen3-30B-A3B": "qwen3-30b-a3b",
        "DeepSeek-V3": "deepseek-v3",
        "gpt-oss-20b": "gpt-oss-20b",
        "Gemma-3-12b-it": "gemma-3-12b",
        "Mixtral-8x7B": "mixtral-8x7b",
        "Phi-4": "phi-4",
    }
    for fixture, preset in pairs.items():
        file_spec, catalog_spec = spec_of(fixture), model_catalog().get(preset).spec
        assert file_spec.params == catalog_spec.params, fixture
        assert file_spec.attention == catalog_spec.attention, fixture


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.json")))
def test_default_quant_is_a_catalog_format(name: str) -> None:
    quant, note = default_quant(prepare_config(fixture_config(name)))
    assert quant in quant_catalog() and note is None


def test_unrecognised_quantization_says_it_assumed_bf16() -> None:
    cfg = {**fixture_config("Llama-3.1-8B"), "quantization_config": {"quant_method": "hqq", "bits": 2}}
    quant, note = default_quant(cfg)
    assert quant == "bf16" and note is not None and "hqq" in note


def test_null_fields_take_their_defaults(tmp_path: Path) -> None:
    cfg = {**fixture_config("Llama-3.1-8B"), "num_key_value_heads": None}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    assert load_model(str(path)).n_kv_heads == 32  # null -> num_attention_heads, as transformers does


UNKNOWN = {
    "model_type": "olmo2",
    "hidden_size": 2048,
    "num_hidden_layers": 16,
    "num_attention_heads": 16,
    "intermediate_size": 8192,
    "vocab_size": 100352,
}


def test_unknown_architecture_falls_back_with_a_warning_in_text_and_json(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(UNKNOWN))
    spec = load_model(str(path))
    assert spec.architecture == "olmo2" and spec.total_params > 1e9
    assert any("generic" in w for w in spec.warnings)
    data = run_cli("models", "show", str(path), "--json").json()
    assert any("olmo2" in w and "generic" in w for w in data["warnings"])
    text = run_cli("models", "show", str(path))
    assert text.code == 0 and "note:" in text.out and "generic" in text.out


def test_models_show_json_prints_architecture_and_accounting() -> None:
    result = run_cli("models", "show", str(FIXTURES / "Qwen3-30B-A3B.json"), "--json")
    assert result.code == 0, result.err
    data = result.json()
    assert data["architecture"] == "qwen3_moe" and data["n_layers"] == 48
    assert data["total_params"] == 30_532_122_624
    assert data["weights"]["basis"] == "bf16"
    assert data["weights"]["bytes_read_per_token"] == pytest.approx(6.084e9, rel=1e-3)
    assert data["kv_cache"]["bytes_per_token"] == 48 * 2 * 4 * 128 * 2
    assert data["warnings"] == []


def test_estimate_accepts_a_config_path() -> None:
    result = run_cli("estimate", str(FIXTURES / "Llama-3.1-8B.json"), "--hw", "rtx-4090", "-q", "q4_k_m", "--json")
    assert result.code == 0, result.err
    assert result.json()["model"]["total_params"] == 8_030_261_248


@pytest.mark.parametrize(
    "content",
    [b"", b"[1, 2]", b"{not json", b"\xff\xfe{}", b'{"model_type": "llama"}', b'{"hidden_size": "big"}'],
)
def test_bad_configs_raise_ingest_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(content)
    with pytest.raises(IngestError):
        load_model(str(path))


def test_absurd_layer_count_is_refused_quickly(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**UNKNOWN, "num_hidden_layers": 10**12}))
    with pytest.raises(IngestError, match="implausible"):
        load_model(str(path))


def test_bare_counts_carry_the_one_named_sentinel() -> None:
    """`--params` models are marked by `specs.BARE_ARCHITECTURE`, the constant the memory rule checks; no
    module spells the sentinel as a string of its own."""
    import tokometer
    from tokometer.domain.specs import BARE_ARCHITECTURE
    from tokometer.ingest.architecture import bare_spec

    assert bare_spec(8e9).architecture == BARE_ARCHITECTURE
    assert bare_spec(47e9, active_params=13e9).architecture == BARE_ARCHITECTURE
    package = Path(tokometer.__file__).parent
    spelled = [
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if path.name != "specs.py" and any(s in path.read_text(encoding="utf-8") for s in ('"bare"', "'bare'"))
    ]
    assert spelled == []
