"""Safetensors headers (written by the real `safetensors` writer): exact bytes, folders, indexes."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from helpers import run_cli
from ingest_helpers import (
    fixture_config,
    llama_tensors,
    tiny_llama_config,
    write_checkpoint,
    write_safetensors,
)
from tokometer.errors import IngestError
from tokometer.ingest import load_model
from tokometer.ingest.hf_config import tensor_class
from tokometer.ingest.safetensors_header import read_header

SHAPE = {"hidden": 64, "layers": 2, "heads": 4, "kv_heads": 2, "ffn": 128, "vocab": 96}


def llama_shapes(tied: bool = False) -> dict[str, tuple[int, ...]]:
    return llama_tensors(**SHAPE, tied=tied)


def test_header_matches_safe_open(tmp_path: Path) -> None:
    from safetensors import safe_open

    path = tmp_path / "model.safetensors"
    write_safetensors(path, llama_shapes(), "float32")
    header = read_header(path)
    assert header.metadata == {"format": "pt"}
    with safe_open(str(path), framework="numpy") as f:
        expected = {k: (tuple(f.get_slice(k).get_shape()), f.get_slice(k).get_dtype()) for k in f.keys()}
    assert {t.name: (t.shape, t.dtype) for t in header.tensors} == expected
    assert all(t.n_bytes == t.n_elements * 4 for t in header.tensors)


@pytest.mark.parametrize("shards", [1, 3])
def test_folder_gives_exact_bytes_and_parameters(tmp_path: Path, shards: int) -> None:
    data_bytes = write_checkpoint(tmp_path / "tiny", tiny_llama_config(), llama_shapes(), shards=shards)
    spec = load_model(str(tmp_path / "tiny"))
    config_only = load_model(str(tmp_path / "tiny" / "config.json"))
    assert spec.exact_weight_bytes is not None and spec.exact_weight_bytes.total == data_bytes
    assert spec.params == config_only.params  # bf16/fp16 checkpoint: file counts == config accounting
    assert spec.exact_weight_bytes == spec.params.scaled(2.0)
    assert spec.name == "tiny" and spec.warnings == ()
    assert config_only.exact_weight_bytes is None


def test_index_file_and_single_file_paths(tmp_path: Path) -> None:
    folder = tmp_path / "sharded"
    data_bytes = write_checkpoint(folder, tiny_llama_config(), llama_shapes(), shards=2)
    by_index = load_model(str(folder / "model.safetensors.index.json"))
    assert by_index.exact_weight_bytes is not None and by_index.exact_weight_bytes.total == data_bytes
    shard = sorted(folder.glob("model-*.safetensors"))[0]
    one = load_model(str(shard))  # a single shard, with the config beside it
    assert one.exact_weight_bytes is not None and 0 < one.exact_weight_bytes.total < data_bytes


def test_missing_shard_falls_back_to_the_config_and_says_so(tmp_path: Path) -> None:
    folder = tmp_path / "partial"
    write_checkpoint(folder, tiny_llama_config(), llama_shapes(), shards=3)
    sorted(folder.glob("model-*.safetensors"))[1].unlink()
    spec = load_model(str(folder))
    assert spec.exact_weight_bytes is None
    assert any("shards missing" in w for w in spec.warnings)
    with pytest.raises(IngestError, match="missing"):
        load_model(str(folder / "model.safetensors.index.json"))


def test_tied_checkpoint_reads_the_embedding_as_head(tmp_path: Path) -> None:
    write_checkpoint(tmp_path / "m", tiny_llama_config(tied=True), llama_shapes(tied=True))
    spec = load_model(str(tmp_path / "m"))
    assert spec.tied_embeddings and spec.exact_weight_bytes is not None
    assert spec.exact_weight_bytes.lm_head == 0


def test_safetensors_without_config_is_exact_but_says_no_kv(tmp_path: Path) -> None:
    path = tmp_path / "lonely.safetensors"
    data_bytes = write_safetensors(path, llama_shapes(), "float16")
    spec = load_model(str(path))
    assert spec.exact_weight_bytes is not None and spec.exact_weight_bytes.total == data_bytes
    assert (spec.n_layers, spec.vocab_size, spec.hidden_size) == (2, 96, 64)
    assert spec.attention == () and any("no config.json" in w for w in spec.warnings)


def test_quantized_checkpoint_keeps_config_parameters(tmp_path: Path) -> None:
    """fp8 weights + fp32 scale tensors: bytes from the file, parameters from the config."""
    shapes = llama_shapes()
    folder = tmp_path / "fp8"
    cfg = {**tiny_llama_config(), "quantization_config": {"quant_method": "fp8"}}
    write_checkpoint(folder, cfg, shapes, dtype="uint8")
    spec = load_model(str(folder))
    assert spec.params == load_model(str(folder / "config.json")).params
    assert spec.exact_weight_bytes is not None and spec.exact_weight_bytes.total == spec.params.total


def test_multimodal_and_mtp_tensors_are_held_but_not_read(tmp_path: Path) -> None:
    from tokometer.costmodel.memory import weight_bytes_read

    shapes = {f"language_model.{k}": v for k, v in llama_shapes().items()}
    shapes["vision_tower.vision_model.encoder.layers.0.mlp.fc1.weight"] = (128, 64)
    shapes["multi_modal_projector.mm_input_projection_weight"] = (64, 64)
    shapes["language_model.model.layers.2.self_attn.q_proj.weight"] = (64, 64)  # beyond num_hidden_layers: MTP
    folder = tmp_path / "vlm"
    write_checkpoint(folder, tiny_llama_config(), shapes)
    spec = load_model(str(folder))
    text_only = load_model(str(folder / "config.json"))
    resident = 128 * 64 + 64 * 64 + 64 * 64
    # memory holds the vision tower and the MTP layer; decoding text reads neither
    assert spec.params.resident == resident
    assert spec.params.language_total == text_only.params.total
    assert spec.exact_weight_bytes is not None and spec.exact_weight_bytes.resident == resident * 2
    bytes_text = text_only.params.scaled(2.0)
    assert weight_bytes_read(spec, spec.exact_weight_bytes, 1) == weight_bytes_read(text_only, bytes_text, 1)
    assert any("vision/audio" in w for w in spec.warnings)
    assert any("multi-token-prediction" in w for w in spec.warnings)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("model.embed_tokens.weight", "embedding"),
        ("language_model.model.embed_tokens.weight", "embedding"),
        ("lm_head.weight", "lm_head"),
        ("model.layers.3.mlp.experts.17.down_proj.weight", "routed_experts"),
        ("model.layers.3.mlp.experts.17.down_proj.weight_scale_inv", "routed_experts"),
        ("model.layers.0.mlp.experts.gate_up_proj_blocks", "routed_experts"),
        ("model.layers.3.mlp.shared_experts.down_proj.weight", "dense"),
        ("model.layers.3.mlp.shared_expert.down_proj.weight", "dense"),
        ("model.layers.3.mlp.gate.weight", "dense"),
        ("model.layers.3.block_sparse_moe.experts.1.w1.weight", "routed_experts"),
        ("model.layers.61.eh_proj.weight", "mtp"),
        ("mtp.layers.0.mlp.gate_proj.weight", "mtp"),
        ("vision_tower.vision_model.post_layernorm.weight", "multimodal"),
    ],
)
def test_tensor_classes(name: str, kind: str) -> None:
    assert tensor_class(name, 61) == kind


def test_moe_checkpoint_classifies_experts(tmp_path: Path) -> None:
    cfg = {**tiny_llama_config(), "model_type": "qwen3_moe", "num_experts": 4, "num_experts_per_tok": 2,
           "moe_intermediate_size": 32, "head_dim": 16}
    shapes = {k: v for k, v in llama_shapes().items() if ".mlp." not in k}
    for i in range(2):
        shapes[f"model.layers.{i}.mlp.gate.weight"] = (4, 64)
        shapes[f"model.layers.{i}.self_attn.q_norm.weight"] = (16,)
        shapes[f"model.layers.{i}.self_attn.k_norm.weight"] = (16,)
        for e in range(4):
            for proj, shape in (("gate_proj", (32, 64)), ("up_proj", (32, 64)), ("down_proj", (64, 32))):
                shapes[f"model.layers.{i}.mlp.experts.{e}.{proj}.weight"] = shape
    write_checkpoint(tmp_path / "moe", cfg, shapes)
    spec = load_model(str(tmp_path / "moe"))
    assert spec.is_moe and spec.params.routed_experts == 2 * 4 * 3 * 64 * 32
    assert spec.params == load_model(str(tmp_path / "moe" / "config.json")).params
    assert spec.warnings == ()


def test_cli_shows_a_folder(tmp_path: Path) -> None:
    data_bytes = write_checkpoint(tmp_path / "tiny", tiny_llama_config(), llama_shapes())
    result = run_cli("models", "show", str(tmp_path / "tiny"), "--json")
    assert result.code == 0, result.err
    assert result.json()["weights"] == {
        "basis": "file",
        "bytes": data_bytes,
        "bytes_by_class": result.json()["weight_bytes_by_class"],
        "bytes_read_per_token": result.json()["weight_bytes_read_per_token"],
        "bits_per_weight": 16.0,
    }


def test_real_config_with_a_tiny_header_only_file(tmp_path: Path) -> None:
    """A header can describe a big model without its data: offsets beyond the file are refused."""
    folder = tmp_path / "llama"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(fixture_config("Llama-3.1-8B")))
    header = json.dumps({"lm_head.weight": {"dtype": "BF16", "shape": [128256, 4096], "data_offsets": [0, 128256 * 4096 * 2]}}).encode()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    with pytest.raises(IngestError, match="truncated"):
        load_model(str(folder))
