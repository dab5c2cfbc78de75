"""GGUF files written by gguf.GGUFWriter: exact bytes per ggml type, architecture fields round-trip."""

from __future__ import annotations

from pathlib import Path

import gguf
import pytest
from gguf import GGMLQuantizationType as T

from helpers import run_cli
from ingest_helpers import write_gguf
from tokometer.costmodel.memory import weight_bytes, weight_bytes_read
from tokometer.errors import IngestError
from tokometer.ingest import load_model
from tokometer.ingest.gguf_file import read_gguf_header

MIXED = {
    "token_embd": T.Q8_0,
    "attn_q": T.Q8_0,
    "attn_k": T.Q4_0,
    "attn_v": T.Q5_0,
    "attn_output": T.Q4_1,
    "blk.0.ffn_down": T.Q4_K,  # K-quants need 256-wide rows: ffn_down's rows are the 256-wide FFN
    "blk.1.ffn_down": T.Q6_K,
    "ffn_up": T.MXFP4,
    "ffn_gate": T.F32,
    "output.": T.F16,
}


def oracle(path: Path) -> tuple[int, int, dict[str, int]]:
    """Total bytes and elements according to gguf's own reader, and each tensor's bytes."""
    reader = gguf.GGUFReader(str(path))
    per = {t.name: int(t.n_bytes) for t in reader.tensors}
    return sum(per.values()), sum(int(t.n_elements) for t in reader.tensors), per


def test_mixed_quant_file_bytes_are_exact(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    written = write_gguf(path, types=MIXED)
    assert {T(v).name for v in written.values()} >= {"Q8_0", "Q4_0", "Q5_0", "Q4_1", "Q4_K", "Q6_K", "MXFP4", "F16", "F32"}
    spec = load_model(str(path))
    total_bytes, total_elements, per_tensor = oracle(path)
    assert spec.exact_weight_bytes is not None
    assert spec.exact_weight_bytes.total == total_bytes
    assert spec.total_params == total_elements
    assert spec.exact_weight_bytes.embedding == per_tensor["token_embd.weight"]
    assert spec.exact_weight_bytes.lm_head == per_tensor["output.weight"]
    header = read_gguf_header(path)
    assert {t.name: t.n_bytes for t in header.tensors} == per_tensor
    assert spec.warnings == ()  # a complete llama: metadata and tensors agree


def test_bytes_follow_the_block_sizes(tmp_path: Path) -> None:
    """Q8_0: 34 bytes per 32 weights; Q4_K: 144 per 256; Q6_K: 210 per 256 (PHYSICS.md section 2)."""
    path = tmp_path / "tiny.gguf"
    write_gguf(path, types=MIXED)
    tensors = {t.name: t for t in read_gguf_header(path).tensors}
    q = tensors["blk.0.attn_q.weight"]
    assert (q.ggml_type, q.n_bytes) == ("Q8_0", 64 * 64 // 32 * 34)
    assert tensors["blk.0.ffn_down.weight"].n_bytes == 64 * 256 // 256 * 144
    assert tensors["blk.1.ffn_down.weight"].n_bytes == 64 * 256 // 256 * 210
    assert tensors["blk.0.ffn_up.weight"].n_bytes == 256 * 64 // 32 * 17


def test_llama_architecture_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    write_gguf(path, hidden=64, layers=2, heads=4, kv_heads=2, context=8192)
    spec = load_model(str(path))
    assert spec.name == "tiny test model" and spec.architecture == "llama"
    assert (spec.n_layers, spec.hidden_size, spec.n_heads, spec.n_kv_heads, spec.head_dim) == (2, 64, 4, 2, 16)
    assert (spec.vocab_size, spec.max_context_tokens, spec.tied_embeddings) == (96, 8192, False)
    assert spec.attention[0].kv_elements_per_token == 2 * 2 * 16


def test_moe_architecture_round_trips_and_reads_top_k(tmp_path: Path) -> None:
    path = tmp_path / "moe.gguf"
    write_gguf(path, arch="qwen3moe", experts=8, top_k=2, expert_ffn=32, tied=True, types={"_exps": T.Q8_0})
    spec = load_model(str(path))
    assert spec.architecture == "qwen3_moe" and spec.is_moe
    assert (spec.n_experts, spec.n_experts_per_token, spec.tied_embeddings) == (8, 2, True)
    w = spec.exact_weight_bytes
    assert w is not None and w.lm_head == 0
    assert w.routed_experts == 2 * 3 * 8 * 32 * 64 // 32 * 34
    assert weight_bytes_read(spec, w, 1.0) == pytest.approx(
        w.embedding + w.embedding / spec.vocab_size + w.dense + w.routed_experts * 2 / 8
    )
    assert weight_bytes(spec, None) == w  # estimate uses the file's bytes


def test_mixtral_style_llama_with_experts(tmp_path: Path) -> None:
    path = tmp_path / "mixtral.gguf"
    write_gguf(path, arch="llama", experts=4, top_k=2)
    spec = load_model(str(path))
    assert spec.architecture == "mixtral" and (spec.n_experts, spec.n_experts_per_token) == (4, 2)


def test_gemma3_sliding_window_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "gemma3.gguf"
    write_gguf(path, arch="gemma3", layers=12, sliding_window=512, tied=True)
    spec = load_model(str(path))
    groups = {g.kind: g for g in spec.attention}
    assert groups["sliding"].n_layers == 10 and groups["sliding"].window_tokens == 512
    assert groups["full"].n_layers == 2


def test_gpt_oss_alternates_windows(tmp_path: Path) -> None:
    path = tmp_path / "oss.gguf"
    write_gguf(path, arch="gpt-oss", layers=4, sliding_window=128, experts=4, top_k=2)
    spec = load_model(str(path))
    assert spec.architecture == "gpt_oss"
    assert {g.kind: g.n_layers for g in spec.attention} == {"full": 2, "sliding": 2}


def test_unknown_architecture_is_exact_on_bytes_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "olmo.gguf"
    write_gguf(path, arch="olmo2")
    spec = load_model(str(path))
    assert spec.exact_weight_bytes is not None and spec.exact_weight_bytes.total == oracle(path)[0]
    assert len(spec.warnings) == 1 and "'olmo2' is not modelled exactly" in spec.warnings[0]


def test_per_layer_kv_heads_with_recurrent_layers(tmp_path: Path) -> None:
    path = tmp_path / "hybrid.gguf"
    import numpy as np

    w = gguf.GGUFWriter(str(path), "granitehybrid")
    w.add_block_count(4)
    w.add_embedding_length(64)
    w.add_head_count(4)
    w.add_head_count_kv([0, 2, 0, 2])
    w.add_key_length(16)
    w.add_value_length(16)
    w.add_tensor("token_embd.weight", np.zeros((32, 64), np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    spec = load_model(str(path))
    groups = {g.kind: g for g in spec.attention}
    assert groups["full"].n_layers == 2 and groups["full"].kv_elements_per_token == 2 * 2 * 16
    assert groups["linear"].n_layers == 2
    assert any("recurrent state" in w for w in spec.warnings)


def test_split_gguf_sums_every_part(tmp_path: Path) -> None:
    import numpy as np

    base = tmp_path / "model"
    w = gguf.GGUFWriter(str(base) + ".gguf", "llama", split_max_tensors=4)
    w.add_block_count(1)
    w.add_embedding_length(64)
    w.add_head_count(4)
    w.add_head_count_kv(4)
    w.add_context_length(1024)
    names = ["token_embd.weight", "blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight",
             "blk.0.attn_output.weight", "output.weight"]
    for name in names:
        w.add_tensor(name, np.zeros((64, 64), np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    parts = sorted(tmp_path.glob("model-*-of-*.gguf"))
    assert len(parts) == 2
    spec = load_model(str(parts[0]))
    assert spec.exact_weight_bytes is not None
    assert spec.exact_weight_bytes.total == len(names) * 64 * 64 * 2
    parts[1].unlink()
    with pytest.raises(IngestError, match="missing"):
        load_model(str(parts[0]))


def test_folder_with_one_gguf(tmp_path: Path) -> None:
    write_gguf(tmp_path / "model-Q8_0.gguf", types={"": T.Q8_0})
    (tmp_path / "mmproj-model-f16.gguf").write_bytes(b"GGUF")  # projectors are skipped
    spec = load_model(str(tmp_path))
    assert spec.exact_weight_bytes is not None and spec.name == "tiny test model"


def test_cli_models_show_and_estimate_a_gguf(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    write_gguf(path, types=MIXED)
    total_bytes, total_elements, _ = oracle(path)
    shown = run_cli("models", "show", str(path), "--json")
    assert shown.code == 0, shown.err
    data = shown.json()
    assert data["weights"]["basis"] == "file" and data["weights"]["bytes"] == total_bytes
    assert data["weight_bytes"] == total_bytes and data["total_params"] == total_elements
    assert data["n_layers"] == 2 and data["warnings"] == []
    text = run_cli("models", "show", str(path))
    assert "weights in file" in text.out
    est = run_cli("estimate", str(path), "--hw", "rtx-4090", "--json")
    assert est.code == 0, est.err
    assert est.json()["model"]["quant"] == "file"
    assert est.json()["model"]["weight_bytes"] == total_bytes


def test_deepseek2_mla_fields_round_trip(tmp_path: Path) -> None:
    """llama.cpp's MLA layout: key_length = kv_lora_rank + rope (576), *_mla = per-head widths."""
    import numpy as np

    path = tmp_path / "ds.gguf"
    w = gguf.GGUFWriter(str(path), "deepseek2")
    w.add_block_count(3)
    w.add_embedding_length(64)
    w.add_context_length(163_840)
    w.add_head_count(4)
    w.add_head_count_kv(1)
    w.add_kv_lora_rank(32)
    w.add_q_lora_rank(48)
    w.add_rope_dimension_count(8)
    w.add_key_length(32 + 8)
    w.add_value_length(32)
    w.add_key_length_mla(24)
    w.add_value_length_mla(16)
    w.add_expert_count(8)
    w.add_expert_used_count(2)
    w.add_expert_shared_count(1)
    w.add_expert_feed_forward_length(32)
    w.add_feed_forward_length(128)
    w.add_leading_dense_block_count(1)
    w.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)
    w.add_tensor("token_embd.weight", np.zeros((16, 64), np.float16))
    w.add_tensor("blk.1.ffn_gate_exps.weight", np.zeros((8, 32, 64), np.float16))
    w.add_tensor("blk.1.ffn_gate_shexp.weight", np.zeros((32, 64), np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    spec = load_model(str(path))
    assert spec.architecture == "deepseek_v3" and spec.head_dim == 24
    assert [(g.kind, g.n_layers, g.kv_elements_per_token) for g in spec.attention] == [("mla", 3, 32 + 8)]
    assert (spec.n_experts, spec.n_experts_per_token, spec.max_context_tokens) == (8, 2, 163_840)
    assert spec.params.routed_experts == 8 * 32 * 64 and spec.params.dense == 32 * 64
    assert any("configuration implies" in w for w in spec.warnings)  # a partial file says so
