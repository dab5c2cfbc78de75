"""Bytes: weights by read class, KV cache stored and read, memory needed to hold a deployment.

PHYSICS.md sections 1 and 7 (memory). Decimal bytes throughout.
"""

from __future__ import annotations

import math

from tokometer.specs import ModelSpec, ParamGroups

UNQUANTIZED_BITS = 16.0  # what a checkpoint keeps unquantized is stored in bf16/fp16


def weight_bytes(model: ModelSpec, bits_per_weight: float | None, unquantized: tuple[str, ...] = ()) -> ParamGroups:
    """Bytes of each weight class: exact from the file when known, else params x bits / 8.

    Classes named in `unquantized` ("embedding", "lm_head") are counted at 16 bits: HF NVFP4, FP8,
    GPTQ and AWQ checkpoints quantize the linear layers only.
    """
    if model.exact_weight_bytes is not None and bits_per_weight is None:
        return model.exact_weight_bytes
    if bits_per_weight is None:
        raise ValueError("bits_per_weight is required when the model has no exact file sizes")
    scaled = model.params.scaled(bits_per_weight / 8.0)
    if not unquantized:
        return scaled
    keep = UNQUANTIZED_BITS / 8.0
    return ParamGroups(
        embedding=model.params.embedding * keep if "embedding" in unquantized else scaled.embedding,
        lm_head=model.params.lm_head * keep if "lm_head" in unquantized else scaled.lm_head,
        dense=scaled.dense,
        routed_experts=scaled.routed_experts,
        resident=scaled.resident,
    )


def weight_bytes_read(model: ModelSpec, weights: ParamGroups, batch: float) -> float:
    """W_read(B): weights one decode step reads for `batch` streams (PHYSICS.md section 1).

    Embedding: B rows only. LM head (or the tied table): in full. Dense and shared: in full.
    Routed experts: the expected share touched, `1 - (1 - k/E)**B`.
    """
    head = weights.embedding if model.tied_embeddings else weights.lm_head
    rows = weights.embedding / model.vocab_size * batch if model.vocab_size else 0.0
    routed = weights.routed_experts * model.expert_fraction_read(batch)
    if not model.is_moe and model.architecture == "bare":
        routed = 0.0
    return head + rows + weights.dense + routed


def kv_elements_per_token(model: ModelSpec, context_tokens: float | None = None) -> float:
    """KV elements stored per token, all layers; beyond a window only the layers that still grow.

    With `context_tokens=None`: every attention layer (short context).
    """
    total = 0.0
    for group in model.attention:
        if group.kind == "linear":
            continue
        if context_tokens is not None and group.window_tokens is not None and context_tokens > group.window_tokens:
            continue
        total += group.n_layers * group.kv_elements_per_token
    return total


def kv_cache_bytes(model: ModelSpec, context_tokens: float, kv_bytes_per_element: float) -> float:
    """KV bytes one stream keeps at `context_tokens` of context (windows capped, linear state constant)."""
    total = 0.0
    for group in model.attention:
        if group.kind == "linear":
            total += group.n_layers * group.state_elements * kv_bytes_per_element
        else:
            total += group.n_layers * group.kv_elements_per_token * group.cached_tokens(context_tokens) * kv_bytes_per_element
    return total


def kv_read_bytes(model: ModelSpec, context_tokens: float, kv_bytes_per_element: float) -> float:
    """KV_read(c): what one decode step's attention reads for one stream at depth `c`."""
    return kv_cache_bytes(model, context_tokens, kv_bytes_per_element)


def kv_write_bytes(model: ModelSpec, kv_bytes_per_element: float) -> float:
    """KV_write: one new token's K and V in every attention layer."""
    return kv_elements_per_token(model) * kv_bytes_per_element


def max_context_tokens(model: ModelSpec, free_bytes: float, kv_bytes_per_element: float, sessions: int = 1) -> int | None:
    """Largest context whose KV for `sessions` streams fits in `free_bytes`; None if KV never grows."""
    if free_bytes <= 0:
        return 0
    if kv_elements_per_token(model, math.inf) == 0:
        if kv_cache_bytes(model, 1e12, kv_bytes_per_element) * sessions <= free_bytes:
            return None
    low, high = 0, 1
    while kv_cache_bytes(model, high, kv_bytes_per_element) * sessions <= free_bytes:
        low, high = high, high * 2
        if high > 1 << 40:
            return None
    while high - low > 1:
        mid = (low + high) // 2
        if kv_cache_bytes(model, mid, kv_bytes_per_element) * sessions <= free_bytes:
            low = mid
        else:
            high = mid
    return low
