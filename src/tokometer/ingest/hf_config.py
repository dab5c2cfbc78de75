"""Hugging Face checkpoints -> `ModelSpec`: config.json fields, and exact bytes from tensor listings.

The architecture comes from `config.json` through `ingest.architecture.spec_from_config`. Two
things a published config.json leaves implicit are made explicit here:

- transformers serialises only the fields that differ from the config class's defaults, so
  Gemma 3's `text_config` omits `head_dim`, `vocab_size`, `sliding_window_pattern`...; the class
  defaults of the families whose public configs rely on them are written out in
  `TRANSFORMERS_DEFAULTS`.
- the weight format a config-only estimate assumes (`default_quant`, a catalog format id): from
  `quantization_config` (fp8, mxfp4, gptq, awq, compressed-tensors NVFP4/FP8/W4A16, ModelOpt NVFP4),
  else from the dtype (`torch_dtype` or `dtype`). The catalog format says what such a checkpoint
  keeps unquantized (embeddings and LM head in bf16).

When the safetensors headers are at hand (a folder, an index, a Hub repo), every tensor is
classified by its name into how decoding reads it (embedding rows, LM head, dense, routed experts)
and its exact bytes replace the config's estimate. Tensors a text token never passes through
(vision/audio towers, projectors, multi-token-prediction layers) are left out and named in a
warning.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from tokometer.domain.specs import ModelSpec
from tokometer.errors import IngestError
from tokometer.ingest.architecture import spec_from_config, typical_layer_count
from tokometer.ingest.dialects import MAX_LAYERS
from tokometer.ingest.safetensors_header import FLOAT_DTYPES, TensorEntry, read_json_file
from tokometer.ingest.weights import READ_CLASSES, RESIDENT, Tally, disagreement

MAX_CONFIG_BYTES = 5_000_000

# transformers config-class defaults for families whose published config.json omits them.
_GEMMA3_TEXT = {
    "vocab_size": 262_208,
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_hidden_layers": 26,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "max_position_embeddings": 131_072,
    "tie_word_embeddings": True,
    "sliding_window": 4096,
    "sliding_window_pattern": 6,
    "query_pre_attn_scalar": 256,
}
TRANSFORMERS_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": _GEMMA3_TEXT,  # transformers Gemma3TextConfig
    "gemma2": {  # transformers Gemma2Config
        "vocab_size": 256_000,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "max_position_embeddings": 8192,
        "tie_word_embeddings": True,
        "sliding_window": 4096,
    },
}

_DTYPE_QUANT = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
_METHOD_QUANT = {"fp8": "fp8", "fbgemm_fp8": "fp8", "mxfp4": "mxfp4", "gptq": "gptq-int4", "awq": "awq-int4"}

_MULTIMODAL = re.compile(
    r"(?:^|\.)(?:vision_tower|vision_model|visual|vision_encoder|multi_modal_projector|mm_projector"
    r"|audio_tower|audio_model|embed_vision|embed_audio|image_newline)(?:\.|$)"
)
_MTP = re.compile(r"(?:^|\.)mtp\.")
_LAYER_INDEX = re.compile(r"(?:^|\.)layers\.(\d+)\.")
_EMBEDDING = re.compile(r"(?:^|\.)(?:embed_tokens|wte|word_embeddings|tok_embeddings)\.")
_LM_HEAD = re.compile(r"(?:^|\.)(?:lm_head|embed_out)\.|^output\.")
_ROUTED = re.compile(r"\.experts\.")


def prepare_config(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The config with transformers' omitted defaults written out (top level or `text_config`)."""
    cfg = dict(raw)
    model_type = str(cfg.get("model_type") or "")
    text = cfg.get("text_config")
    if isinstance(text, Mapping):
        text_type = str(text.get("model_type") or f"{model_type}_text")
        defaults = TRANSFORMERS_DEFAULTS.get(text_type)
        if defaults:
            cfg["text_config"] = {**defaults, **text, "model_type": text_type}
    elif model_type in TRANSFORMERS_DEFAULTS:
        cfg = {**TRANSFORMERS_DEFAULTS[model_type], **cfg}
    return cfg


def _language(cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    text = cfg.get("text_config")
    return text if isinstance(text, Mapping) else cfg


def _quantization(cfg: Mapping[str, Any]) -> Mapping[str, Any] | None:
    q = cfg.get("quantization_config") or _language(cfg).get("quantization_config")
    return q if isinstance(q, Mapping) else None


def _compressed_tensors_format(q: Mapping[str, Any]) -> str | None:
    """llm-compressor / compressed-tensors checkpoints: the catalog format of their weight scheme.

    `format` names the packing (nvfp4-pack-quantized, float-quantized, pack-quantized,
    int-quantized); the first config group's `weights` gives bits and type when it is vaguer.
    """
    packing = str(q.get("format") or "").lower()
    weights: Mapping[str, Any] = {}
    groups = q.get("config_groups")
    if isinstance(groups, Mapping):
        first = next(iter(groups.values()), None)
        if isinstance(first, Mapping) and isinstance(first.get("weights"), Mapping):
            weights = first["weights"]
    bits = weights.get("num_bits")
    kind = str(weights.get("type") or "").lower()
    group = weights.get("group_size")
    if "nvfp4" in packing or (bits == 4 and kind == "float" and group == 16):
        return "nvfp4"
    if "mxfp4" in packing or (bits == 4 and kind == "float" and group == 32):
        return "mxfp4"
    if packing == "float-quantized" or (bits == 8 and kind == "float"):
        return "fp8"
    if packing == "int-quantized" or (bits == 8 and kind == "int"):
        return "w8a8-int8"
    if packing == "pack-quantized" or (bits == 4 and kind == "int"):
        return "gptq-int4"
    return None


def default_quant(cfg: Mapping[str, Any]) -> tuple[str, str | None]:
    """Catalog format id of the published weights, and a warning when it had to be guessed.

    Recognised: `quant_method` fp8 / fbgemm_fp8 / mxfp4 / gptq / awq (4-bit), compressed-tensors
    (NVFP4, MXFP4, FP8, W8A8, W4A16) and NVIDIA ModelOpt (`quant_algo` NVFP4 or FP8).
    """
    q = _quantization(cfg)
    if q is not None:
        method = str(q.get("quant_method") or "").lower()
        if method == "compressed-tensors":
            found = _compressed_tensors_format(q)
            if found:
                return found, None
        if method == "modelopt":
            algo = str(q.get("quant_algo") or "").lower()
            if algo in ("nvfp4", "fp8"):
                return algo, None
        bits = q.get("bits", 4)
        if method in _METHOD_QUANT and (method not in ("gptq", "awq") or bits == 4):
            return _METHOD_QUANT[method], None
        return "bf16", (
            f"quantization {method or '(unnamed)'!r}"
            + (f" at {bits} bits" if method in ("gptq", "awq") else "")
            + " is not recognised; a config-only estimate assumes bf16 (give --quant or --bits)"
        )
    dtype = cfg.get("torch_dtype") or cfg.get("dtype") or _language(cfg).get("torch_dtype") or _language(cfg).get("dtype")
    return _DTYPE_QUANT.get(str(dtype), "bf16"), None


def tensor_class(name: str, n_layers: int) -> str:
    """How decoding reads a Hugging Face tensor: embedding, lm_head, dense, routed_experts; else why not."""
    if _MULTIMODAL.search(name):
        return "multimodal"
    layer = _LAYER_INDEX.search(name)
    if _MTP.search(name) or (layer is not None and int(layer.group(1)) >= n_layers):
        return "mtp"
    if _EMBEDDING.search(name):
        return "embedding"
    if _LM_HEAD.search(name):
        return "lm_head"
    if _ROUTED.search(name):
        return "routed_experts"
    return "dense"


_EXCLUDED_LABEL = {
    "multimodal": "vision/audio encoder and projector",
    "mtp": "multi-token-prediction layers",
}


def _tally(tensors: Sequence[TensorEntry], n_layers: int) -> tuple[Tally, dict[str, float], set[str]]:
    """Bytes and elements per read class; bytes of each excluded kind; dtypes of the kept tensors."""
    tally = Tally()
    excluded: dict[str, float] = {}
    dtypes: set[str] = set()
    for t in tensors:
        kind = tensor_class(t.name, n_layers)
        if kind in READ_CLASSES:
            tally.add(kind, t.n_bytes, t.n_elements)
            dtypes.add(t.dtype)
        else:
            excluded[kind] = excluded.get(kind, 0.0) + t.n_bytes
            tally.add(RESIDENT, t.n_bytes, t.n_elements)
    return tally, excluded, dtypes


def _excluded_notes(excluded: Mapping[str, float]) -> list[str]:
    return [
        f"{_EXCLUDED_LABEL[kind]}: {n_bytes / 1e9:.3g} GB in the checkpoint, held in memory "
        "but not read per text token (counted for memory, not for speed)"
        for kind, n_bytes in sorted(excluded.items())
    ]


def with_tensors(spec: ModelSpec, cfg: Mapping[str, Any], tensors: Sequence[TensorEntry]) -> ModelSpec:
    """Attach exact bytes from a tensor listing; plain float checkpoints also give exact parameters."""
    tally, excluded, dtypes = _tally(tensors, spec.n_layers)
    warnings = [*spec.warnings, *_excluded_notes(excluded)]
    unrouted = tally.fold_unrouted(spec.n_experts)
    if unrouted:
        warnings.append(unrouted)
    changes: dict[str, Any] = {"exact_weight_bytes": tally.bytes_groups}
    if dtypes and dtypes <= FLOAT_DTYPES and _quantization(cfg) is None:
        changes["params"] = tally.param_groups
        changes["tied_embeddings"] = tally.tied or (spec.tied_embeddings and not tally.n_bytes["embedding"])
        mismatch = disagreement(tally.param_groups.language_total, spec.params.total, "checkpoint")
        if mismatch:
            warnings.append(mismatch)
    changes["warnings"] = tuple(warnings)
    return replace(spec, **changes)


def account(
    cfg: Mapping[str, Any], name: str, *, source: str, model_id: str | None, default_quant: str | None = None
) -> ModelSpec:
    """`spec_from_config`, with any failure of a malformed config as one `IngestError` naming `source`."""
    try:
        return spec_from_config(cfg, name, source=source, default_quant=default_quant, model_id=model_id)
    except IngestError as exc:
        raise IngestError(f"{source}: {exc}") from None
    except (TypeError, ValueError, ArithmeticError, AttributeError, KeyError) as exc:
        raise IngestError(f"{source}: a configuration field has the wrong type or range ({exc})") from None


def spec_from_hf(
    config: Mapping[str, Any],
    *,
    name: str,
    source: str,
    model_id: str | None,
    tensors: Sequence[TensorEntry] | None = None,
    notes: Sequence[str] = (),
) -> ModelSpec:
    """A config.json (already parsed) and, when known, the checkpoint's tensors -> `ModelSpec`."""
    if not isinstance(config, Mapping):
        raise IngestError(f"{source}: config.json must hold a JSON object")
    cfg = prepare_config(config)
    layers = _language(cfg).get("num_hidden_layers")
    if isinstance(layers, int | float) and layers > MAX_LAYERS:
        raise IngestError(f"{source}: num_hidden_layers = {layers} is implausible (at most {MAX_LAYERS:,})")
    quant, quant_note = default_quant(cfg)
    spec = account(cfg, name, source=source, model_id=model_id, default_quant=quant)
    extra = list(notes)
    if quant_note and not tensors:
        extra.append(quant_note)
    if extra:
        spec = replace(spec, warnings=spec.warnings + tuple(extra))
    if tensors:
        spec = with_tensors(spec, cfg, tensors)
    return spec


def read_config(path: Path) -> dict[str, Any]:
    config = read_json_file(path, "config.json", MAX_CONFIG_BYTES)
    if not isinstance(config, dict):
        raise IngestError(f"config.json {path} must hold a JSON object")
    return config


def spec_from_tensors_only(tensors: Sequence[TensorEntry], *, name: str, source: str, model_id: str | None) -> ModelSpec:
    """Weights without a config.json: exact parameters and bytes, no attention or KV accounting."""
    layers = {int(m.group(1)) for t in tensors if (m := _LAYER_INDEX.search(t.name))}
    every_layer = 1 << 30  # without a config no layer index counts as multi-token prediction
    tally, excluded, _ = _tally(tensors, every_layer)
    embedding = next((t for t in tensors if tensor_class(t.name, every_layer) == "embedding" and len(t.shape) == 2), None)
    vocab, hidden = (embedding.shape[0], embedding.shape[1]) if embedding else (0, 0)
    warnings = ["no config.json next to the weights: parameters and bytes are exact, but there is no attention or KV-cache accounting"]
    unrouted = tally.fold_unrouted(0)
    warnings += [unrouted] if unrouted else []
    warnings += _excluded_notes(excluded)
    params = tally.param_groups
    return ModelSpec(
        id=model_id,
        name=name,
        architecture="unknown",
        n_layers=max(layers) + 1 if layers else typical_layer_count(max(params.total, 1.0)),
        hidden_size=hidden,
        n_heads=0,
        n_kv_heads=0,
        head_dim=0,
        vocab_size=vocab,
        params=params,
        attention=(),
        tied_embeddings=tally.tied,
        source=source,
        exact_weight_bytes=tally.bytes_groups,
        warnings=tuple(warnings),
    )
