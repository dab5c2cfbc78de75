"""Bytes: weights by read class, KV cache stored and read, memory needed to hold a deployment.

docs/PHYSICS.md sections 1 and 7 (memory). Decimal bytes throughout.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from tokometer.domain.specs import BARE_ARCHITECTURE, ModelSpec, ParamGroups, _Plain
from tokometer.domain.units import GB

UNQUANTIZED_BITS = 16.0  # what a checkpoint keeps unquantized is stored in bf16/fp16


def weight_bytes(model: ModelSpec, bits_per_weight: float | None, unquantized: tuple[str, ...] = ()) -> ParamGroups:
    """Bytes of each weight class: exact from the file when known, else params x bits / 8.

    Classes named in `unquantized` ("embedding", "lm_head", "dense") are counted at 16 bits: HF NVFP4,
    FP8, GPTQ and AWQ checkpoints quantize the linear layers only; gpt-oss's MXFP4 only the routed experts.
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
        dense=model.params.dense * keep if "dense" in unquantized else scaled.dense,
        routed_experts=scaled.routed_experts,
        resident=scaled.resident,
    )


def head_bytes(model: ModelSpec, weights: ParamGroups) -> float:
    """The output projection every step reads in full: the LM head, or the embedding table when tied."""
    return weights.embedding if model.tied_embeddings else weights.lm_head


def head_params(model: ModelSpec) -> float:
    """Parameters of the output projection (the LM head, or the tied embedding table)."""
    return model.params.embedding if model.tied_embeddings else model.params.lm_head


def embedding_row_bytes(model: ModelSpec, weights: ParamGroups) -> float:
    """One token's embedding row, `embedding / vocab` bytes; 0 for a model with no vocabulary."""
    return weights.embedding / model.vocab_size if model.vocab_size else 0.0


def weight_bytes_read(model: ModelSpec, weights: ParamGroups, batch: float) -> float:
    """W_read(B): weights one decode step reads for `batch` streams (docs/PHYSICS.md section 1).

    Embedding: B rows only. LM head (or the tied table): in full. Dense and shared: in full.
    Routed experts: the expected share touched, `1 - (1 - k/E)**B`.
    """
    head = head_bytes(model, weights)
    rows = embedding_row_bytes(model, weights) * batch
    routed = weights.routed_experts * model.expert_fraction_read(batch)
    if not model.is_moe and model.architecture == BARE_ARCHITECTURE:
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
    """KV_read(c): what one decode step's attention reads for one stream at depth `c`.

    The stored cache, plus each layer that attends over another layer's cache (Gemma 3n/4's KV-shared
    layers) reading that cache again: storing once does not make it read once.
    """
    total = kv_cache_bytes(model, context_tokens, kv_bytes_per_element)
    for group in model.attention:
        if group.kind != "linear" and group.shared_layers:
            total += group.shared_layers * group.kv_elements_per_token * group.cached_tokens(context_tokens) * kv_bytes_per_element
    return total


def kv_write_bytes(model: ModelSpec, kv_bytes_per_element: float) -> float:
    """KV_write: one new token's K and V in every attention layer."""
    return kv_elements_per_token(model) * kv_bytes_per_element


def max_context_tokens(model: ModelSpec, free_bytes: float, kv_bytes_per_element: float, sessions: int = 1) -> int | None:
    """Largest context whose KV for `sessions` streams fits in `free_bytes`; None if KV never grows."""
    if free_bytes <= 0:
        return 0
    if not math.isfinite(free_bytes):
        return None
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


def kv_bytes_per_token(model: ModelSpec, kv_bytes_per_element: float, context_tokens: float | None = None) -> float:
    """KV stored per token of context (all layers; with a context, only layers not yet window-capped)."""
    return kv_elements_per_token(model, context_tokens) * kv_bytes_per_element


@dataclass(frozen=True, slots=True)
class MemoryPlan(_Plain):
    weights_gb: float
    kv_cache_gb: float
    runtime_overhead_gb: float
    total_gb: float
    available_gb: float
    device_memory_gb: float
    fits: bool
    context_tokens: int
    sessions: int
    max_context_tokens: int | None
    max_context_memory_tokens: int | None
    max_sessions: int | None


def memory_plan(
    model: ModelSpec,
    weights: ParamGroups,
    device_memory_gb: float,
    *,
    usable_fraction: float,
    runtime_overhead_gb: float,
    context_tokens: int,
    sessions: int,
    kv_bytes_per_element: float,
) -> MemoryPlan:
    """Weights (every expert) + KV for the planned context and sessions + engine runtime.

    A device of unbounded memory (`device_memory_gb` = inf: a custom device given no memory) always
    fits and has no session or context limit of its own (None), only the model's context limit.
    """
    kv = kv_cache_bytes(model, context_tokens, kv_bytes_per_element) * sessions
    total = weights.total + kv + runtime_overhead_gb * GB
    available = device_memory_gb * usable_fraction * GB
    free_for_kv = available - weights.total - runtime_overhead_gb * GB
    mem_ctx = max_context_tokens(model, free_for_kv, kv_bytes_per_element)
    max_ctx = mem_ctx
    if model.max_context_tokens is not None:
        max_ctx = model.max_context_tokens if mem_ctx is None else min(mem_ctx, model.max_context_tokens)
    per_session = kv_cache_bytes(model, context_tokens, kv_bytes_per_element)
    if free_for_kv <= 0:
        max_sessions: int | None = 0
    elif per_session <= 0 or not math.isfinite(free_for_kv):
        max_sessions = None
    else:
        max_sessions = int(free_for_kv // per_session)
    return MemoryPlan(
        weights_gb=weights.total / GB,
        kv_cache_gb=kv / GB,
        runtime_overhead_gb=runtime_overhead_gb,
        total_gb=total / GB,
        available_gb=available / GB,
        device_memory_gb=device_memory_gb,
        fits=total <= available,
        context_tokens=context_tokens,
        sessions=sessions,
        max_context_tokens=max_ctx,
        max_context_memory_tokens=mem_ctx,
        max_sessions=max_sessions,
    )


def add_weights(*parts: ParamGroups) -> ParamGroups:
    return ParamGroups(
        embedding=sum(p.embedding for p in parts),
        lm_head=sum(p.lm_head for p in parts),
        dense=sum(p.dense for p in parts),
        routed_experts=sum(p.routed_experts for p in parts),
        resident=sum(p.resident for p in parts),
    )


def split_weights(weights: ParamGroups, gpu_share: float, head_on_gpu: bool) -> tuple[ParamGroups, ParamGroups]:
    """(on the GPU, in system RAM) when `gpu_share` of the layers sit on the GPU."""
    head = (weights.embedding, weights.lm_head) if head_on_gpu else (0.0, 0.0)
    gpu = ParamGroups(
        head[0], head[1], gpu_share * weights.dense, gpu_share * weights.routed_experts, gpu_share * weights.resident
    )
    cpu = ParamGroups(
        weights.embedding - head[0],
        weights.lm_head - head[1],
        weights.dense - gpu.dense,
        weights.routed_experts - gpu.routed_experts,
        weights.resident - gpu.resident,
    )
    return gpu, cpu


def split_experts(weights: ParamGroups, cpu_share: float) -> tuple[ParamGroups, ParamGroups]:
    """(on the GPU, in system RAM) when `cpu_share` of the routed-expert weights sit in RAM and
    everything else (embeddings, head, attention, shared experts, routers) on the GPU."""
    cpu = ParamGroups(0.0, 0.0, 0.0, cpu_share * weights.routed_experts, 0.0)
    gpu = replace(weights, routed_experts=weights.routed_experts - cpu.routed_experts)
    return gpu, cpu


def kv_view(
    model: ModelSpec,
    *,
    layers_share: float = 1.0,
    copies: int = 1,
    extra: Sequence[ModelSpec] = (),
) -> ModelSpec:
    """A model whose attention groups store what a deployment stores: `layers_share` of the layers,
    `copies` replicas (KV heads replicated under TP), plus other models' caches (a draft)."""
    groups = []
    for g in model.attention:
        n = int(round(g.n_layers * layers_share))
        if n:
            groups.append(
                replace(
                    g,
                    n_layers=n,
                    shared_layers=int(round(g.shared_layers * layers_share)),
                    kv_elements_per_token=g.kv_elements_per_token * copies,
                    state_elements=g.state_elements * copies,
                )
            )
    limits = [m.max_context_tokens for m in (model, *extra) if m.max_context_tokens is not None]
    for other in extra:
        groups.extend(other.attention)
    return replace(model, attention=tuple(groups), max_context_tokens=min(limits) if limits else None)
