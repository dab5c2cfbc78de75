"""The accounting of one model as data (for `models show --json`) and as text."""

from __future__ import annotations

import math
from typing import Any

from tokometer.costmodel.memory import (
    kv_bytes_per_token,
    kv_cache_bytes,
    weight_bytes,
    weight_bytes_read,
)
from tokometer.domain.specs import ModelSpec, QuantFormat
from tokometer.report.text import num


def model_report(spec: ModelSpec, kv_dtype: QuantFormat, weight_format: QuantFormat | None = None) -> dict[str, Any]:
    """Architecture, parameters by read class, weight bytes and KV per token, warnings.

    Weight bytes are the file's when the model came from one (GGUF, safetensors, Hub headers);
    otherwise parameters x `weight_format` (default bf16), scales included.
    """
    kv_el = kv_dtype.bytes_per_weight
    data: dict[str, Any] = {
        "name": spec.name,
        "id": spec.id,
        "architecture": spec.architecture,
        "source": spec.source,
        "n_layers": spec.n_layers,
        "hidden_size": spec.hidden_size,
        "n_heads": spec.n_heads,
        "n_kv_heads": spec.n_kv_heads,
        "head_dim": spec.head_dim,
        "vocab_size": spec.vocab_size,
        "tied_embeddings": spec.tied_embeddings,
        "n_experts": spec.n_experts,
        "n_experts_per_token": spec.n_experts_per_token,
        "max_context_tokens": spec.max_context_tokens,
        "default_quant": spec.default_quant,
        "total_params": spec.total_params,
        "params": spec.params.to_dict(),
        "params_read_per_token": spec.active_params(1.0),
        "attention": [g.to_dict() for g in spec.attention],
        "kv_cache": {
            "dtype": kv_dtype.id,
            "bytes_per_token": kv_bytes_per_token(spec, kv_el),
            "bytes_per_token_long_context": kv_bytes_per_token(spec, kv_el, math.inf),
            "bytes_at_8k": kv_cache_bytes(spec, 8192, kv_el),
            "bytes_at_32k": kv_cache_bytes(spec, 32768, kv_el),
        },
        "warnings": list(spec.warnings),
    }
    if spec.exact_weight_bytes is not None:
        w = spec.exact_weight_bytes
        basis = "file"
        data["weight_bytes"] = w.total
        data["weight_bytes_by_class"] = w.to_dict()
        data["weight_bytes_read_per_token"] = weight_bytes_read(spec, w, 1.0)
    else:
        bf16 = spec.params.scaled(2.0)
        data["weight_bytes_read_per_token_bf16"] = weight_bytes_read(spec, bf16, 1.0)
        basis = weight_format.id if weight_format else "bf16"
        w = weight_bytes(spec, weight_format.bits_per_weight, weight_format.unquantized) if weight_format else bf16
    data["weights"] = {
        "basis": basis,
        "bytes": w.total,
        "bytes_by_class": w.to_dict(),
        "bytes_read_per_token": weight_bytes_read(spec, w, 1.0),
        "bits_per_weight": w.total * 8.0 / spec.total_params if spec.total_params else None,
    }
    return data


def render_model_report(d: dict[str, Any]) -> str:
    lines = [
        f"{d['name']} ({d['architecture']}, {d['n_layers']} layers, hidden {d['hidden_size']}, "
        f"{d['n_heads']} heads / {d['n_kv_heads']} KV heads x {d['head_dim']})",
        f"parameters: {num(d['total_params'] / 1e9, 4)} B total, {num(d['params_read_per_token'] / 1e9, 4)} B read per decoded token",
        f"  embedding {num(d['params']['embedding'] / 1e9)} B (one row read per token), "
        f"LM head {num(d['params']['lm_head'] / 1e9)} B{' (tied: the embedding is read in full)' if d['tied_embeddings'] else ''}, "
        f"dense {num(d['params']['dense'] / 1e9)} B, routed experts {num(d['params']['routed_experts'] / 1e9)} B",
    ]
    if d["n_experts"]:
        lines.append(f"MoE: {d['n_experts_per_token']} of {d['n_experts']} experts per token")
    kv = d["kv_cache"]
    lines.append(
        f"KV cache ({kv['dtype']}): {num(kv['bytes_per_token'] / 1e3)} KB per token"
        + (
            f", {num(kv['bytes_per_token_long_context'] / 1e3)} KB per token beyond the sliding windows"
            if kv["bytes_per_token_long_context"] != kv["bytes_per_token"]
            else ""
        )
        + f"; {num(kv['bytes_at_32k'] / 1e9)} GB at 32k tokens"
    )
    for g in d["attention"]:
        window = f", window {g['window_tokens']}" if g["window_tokens"] else ""
        lines.append(f"  {g['n_layers']} {g['kind']} layers: {g['kv_elements_per_token']} KV elements per token{window}")
    weights = d["weights"]
    basis = weights["basis"]
    what = "weights in file" if basis == "file" else f"weights at {basis} (from the parameter count)"
    lines.append(
        f"{what}: {num(weights['bytes'] / 1e9)} GB, {num(weights['bits_per_weight'])} bits/weight, "
        f"{num(weights['bytes_read_per_token'] / 1e9)} GB read per decoded token"
    )
    if d.get("max_context_tokens"):
        lines.append(f"max context: {d['max_context_tokens']:,} tokens")
    lines += [f"note: {w}" for w in d["warnings"]]
    return "\n".join(lines)
