"""Builders shared by the ingest tests: tiny GGUF files (gguf.GGUFWriter) and safetensors checkpoints."""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures" / "configs"


def fixture_config(name: str) -> dict[str, Any]:
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    assert isinstance(data, dict)
    return data


def _weight(shape: tuple[int, ...], qtype: Any) -> tuple[Any, dict[str, Any]]:
    """A tensor of numpy shape `shape` stored as ggml `qtype`: (array, add_tensor kwargs)."""
    import numpy as np
    from gguf import GGMLQuantizationType as T
    from gguf.constants import GGML_QUANT_SIZES
    from gguf.quants import quantize

    rng = np.random.default_rng(len(shape) * 7 + shape[-1])
    data = rng.standard_normal(shape).astype(np.float32)
    if qtype == T.F32:
        return data, {}
    if qtype == T.F16:
        return data.astype(np.float16), {}
    try:
        return quantize(data, qtype), {"raw_dtype": qtype}
    except NotImplementedError:  # K-quants: the writer only needs bytes of the right size
        block, size = GGML_QUANT_SIZES[qtype]
        raw = np.zeros((*shape[:-1], shape[-1] // block * size), dtype=np.uint8)
        return raw, {"raw_dtype": qtype}


def write_gguf(
    path: Path,
    *,
    arch: str = "llama",
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    ffn: int = 256,
    vocab: int = 96,
    context: int = 4096,
    experts: int = 0,
    top_k: int = 0,
    expert_ffn: int = 32,
    sliding_window: int | None = None,
    tied: bool = False,
    types: Mapping[str, Any] | None = None,
    extra_kv: Mapping[str, Any] | None = None,
    name: str = "tiny test model",
) -> dict[str, int]:
    """A small llama-style model; returns {tensor name: ggml type} written. `types` maps a tensor-name
    fragment (`attn_q`, `ffn_down`, `token_embd`...) to its ggml type (default F16; norms F32)."""
    import gguf
    from gguf import GGMLQuantizationType as T

    types = dict(types or {})
    head_dim = hidden // heads
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(name)
    w.add_block_count(layers)
    w.add_context_length(context)
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_dimension_count(head_dim)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    if experts:
        w.add_expert_count(experts)
        w.add_expert_used_count(top_k)
        w.add_expert_feed_forward_length(expert_ffn)
    if sliding_window:
        w.add_sliding_window(sliding_window)
    w.add_array("tokenizer.ggml.tokens", [f"tok{i}" for i in range(vocab)])
    for key, value in (extra_kv or {}).items():
        if isinstance(value, str):
            w.add_string(key, value)
        else:
            w.add_uint32(key, value)

    def kind(tensor: str, default: Any) -> Any:
        for fragment, qtype in types.items():
            if fragment in tensor:
                return qtype
        return default

    written: dict[str, int] = {}

    def add(tensor: str, shape: tuple[int, ...], default: Any = T.F16) -> None:
        qtype = kind(tensor, default)
        array, kwargs = _weight(shape, qtype)
        w.add_tensor(tensor, array, **kwargs)
        written[tensor] = int(qtype)

    add("token_embd.weight", (vocab, hidden))
    for i in range(layers):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", (hidden,), T.F32)
        add(p + "attn_q.weight", (heads * head_dim, hidden))
        add(p + "attn_k.weight", (kv_heads * head_dim, hidden))
        add(p + "attn_v.weight", (kv_heads * head_dim, hidden))
        add(p + "attn_output.weight", (hidden, heads * head_dim))
        add(p + "ffn_norm.weight", (hidden,), T.F32)
        if experts:
            add(p + "ffn_gate_inp.weight", (experts, hidden), T.F32)
            add(p + "ffn_gate_exps.weight", (experts, expert_ffn, hidden))
            add(p + "ffn_up_exps.weight", (experts, expert_ffn, hidden))
            add(p + "ffn_down_exps.weight", (experts, hidden, expert_ffn))
        else:
            add(p + "ffn_gate.weight", (ffn, hidden))
            add(p + "ffn_up.weight", (ffn, hidden))
            add(p + "ffn_down.weight", (hidden, ffn))
    add("output_norm.weight", (hidden,), T.F32)
    if not tied:
        add("output.weight", (vocab, hidden))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return written


def gguf_bytes(n_tensors: int, n_kv: int, body: bytes = b"", version: int = 3) -> bytes:
    """A raw GGUF prefix with chosen counts, for hostile-file tests."""
    return b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv) + body


def gguf_string(text: bytes) -> bytes:
    return struct.pack("<Q", len(text)) + text


def llama_tensors(hidden: int, layers: int, heads: int, kv_heads: int, ffn: int, vocab: int, tied: bool) -> dict[str, tuple[int, ...]]:
    """HF tensor names and shapes of a llama checkpoint."""
    head_dim = hidden // heads
    shapes: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (vocab, hidden), "model.norm.weight": (hidden,)}
    for i in range(layers):
        p = f"model.layers.{i}."
        shapes.update(
            {
                p + "input_layernorm.weight": (hidden,),
                p + "post_attention_layernorm.weight": (hidden,),
                p + "self_attn.q_proj.weight": (heads * head_dim, hidden),
                p + "self_attn.k_proj.weight": (kv_heads * head_dim, hidden),
                p + "self_attn.v_proj.weight": (kv_heads * head_dim, hidden),
                p + "self_attn.o_proj.weight": (hidden, heads * head_dim),
                p + "mlp.gate_proj.weight": (ffn, hidden),
                p + "mlp.up_proj.weight": (ffn, hidden),
                p + "mlp.down_proj.weight": (hidden, ffn),
            }
        )
    if not tied:
        shapes["lm_head.weight"] = (vocab, hidden)
    return shapes


def tiny_llama_config(hidden: int = 64, layers: int = 2, heads: int = 4, kv_heads: int = 2, ffn: int = 128, vocab: int = 96, tied: bool = False) -> dict[str, Any]:
    return {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "intermediate_size": ffn,
        "vocab_size": vocab,
        "max_position_embeddings": 2048,
        "tie_word_embeddings": tied,
        "torch_dtype": "bfloat16",
    }


def write_safetensors(path: Path, shapes: Mapping[str, tuple[int, ...]], dtype: str = "float16") -> int:
    """Write zeros with the real `safetensors` writer; returns the bytes of tensor data."""
    import numpy as np
    from safetensors.numpy import save_file

    arrays = {name: np.zeros(shape, dtype=dtype) for name, shape in shapes.items()}
    save_file(arrays, str(path), metadata={"format": "pt"})
    return sum(a.nbytes for a in arrays.values())


def write_checkpoint(folder: Path, config: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]], shards: int = 1, dtype: str = "float16") -> int:
    """config.json plus safetensors (sharded with an index when shards > 1); returns the data bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    if shards == 1:
        return write_safetensors(folder / "model.safetensors", shapes, dtype)
    names = sorted(shapes)
    total = 0
    weight_map = {}
    for k in range(shards):
        part = {n: shapes[n] for n in names[k::shards]}
        fname = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        total += write_safetensors(folder / fname, part, dtype)
        weight_map.update(dict.fromkeys(part, fname))
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}))
    return total
