"""The decode step over numpy arrays: one formula for millions of setups at once (`tokometer sweep`).

Exactly `predict.decode_step` (docs/PHYSICS.md sections 1, 3, 4), written with broadcasting so a grid of
models x hardware x quants x contexts x batches is a handful of array operations, no Python loop per
setup. A test checks it against the scalar function to 1e-9 relative on random points.

Model constants live in `ModelArrays`, stacked along one axis; attention groups sit on an extra
trailing axis, padded with zeros, and are summed away once the context is known:

    W_read(B) = s * (head + row * B*t + dense + routed * (1 - (1 - k/E)**(B*t)))
    KV_read   = B * kv_el * (sum_g n_g e_g min(c, window_g) + state)
    flops     = B*t * (2 * matmul_params + sum_g 4 n_g d_g min(c, window_g))
    t_step    = max(bytes / (eta_bw BW), flops / (eta_c peak)) + n_layers tau_layer + tau_step

with `s` the bytes per weight unit (bits/8 when the units are parameters) and `t` tokens per stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from tokometer.costmodel.memory import embedding_row_bytes, head_bytes
from tokometer.domain.specs import ModelSpec, ParamGroups
from tokometer.domain.units import GB, NS, TFLOP, US

Array = NDArray[np.float64]


@dataclass(frozen=True)
class ModelArrays:
    """Per-model constants of the decode step; axis 0 is the model, groups on a trailing axis.

    Weight terms are in *units* (parameters or bytes) that the step multiplies by `weight_scale`.
    """

    head: Array  # read in full every step: the LM head, or the tied embedding table
    row: Array  # one embedding row (embedding / vocab); 0 without a vocabulary
    dense: Array
    routed: Array
    expert_keep: Array  # 1 - k/E for MoE models, 1 otherwise (so no routed experts are read)
    experts: Array  # E * n_layers for MoE models, 0 otherwise: the expert slots a step can run
    matmul_params: Array  # parameters a token multiplies through (FLOPs = 2x)
    n_layers: Array
    recurrent_layers: Array  # layers with a recurrent mixer (`ModelSpec.recurrent_layers`)
    state_elements: Array  # constant per-stream state of linear-attention layers (all layers)
    write_elements: Array  # K and V elements one new token writes (all attention layers)
    kv_elements: Array  # [..., G]: n_layers * elements per token, per attention group (what is stored)
    kv_read_elements: Array  # [..., G]: the same over the layers that read the group's cache (KV-shared layers too)
    windows: Array  # [..., G]: tokens a group keeps (inf: all, 0: linear)
    attention_coef: Array  # [..., G]: 4 * n_layers * n_heads * head_dim (MLA: its absorbed decode form)
    head_dim: Array
    score_coef: Array  # [..., G]: n_layers * n_heads, the scores a decoded token produces per context token
    vocab: Array  # vocabulary entries a host sampler scans per token (`roofline.host_sampling_time_s`)

    @classmethod
    def from_specs(cls, models: Sequence[ModelSpec], weights: Sequence[ParamGroups] | None = None) -> ModelArrays:
        """Stack models; weights in parameters (default) or in bytes per model (exact file sizes)."""
        units = list(weights) if weights is not None else [m.params for m in models]
        n_groups = max([len(m.attention) for m in models] + [1])
        shape = (len(models), n_groups)
        kv = np.zeros(shape)
        kv_read = np.zeros(shape)
        windows = np.zeros(shape)
        attention = np.zeros(shape)
        score = np.zeros(shape)
        for i, m in enumerate(models):
            for j, g in enumerate(m.attention):
                if g.kind == "linear":
                    continue
                kv[i, j] = g.n_layers * g.kv_elements_per_token
                kv_read[i, j] = g.reading_layers * g.kv_elements_per_token  # memory.kv_read_bytes
                windows[i, j] = float(g.window_tokens) if g.window_tokens is not None else np.inf
                attention[i, j] = 4.0 * g.reading_layers * g.decode_dim
                score[i, j] = g.reading_layers * g.attention_dim / max(1, m.head_dim)  # roofline.decode_score_elements

        def column(values: Sequence[float]) -> Array:
            return np.asarray(values, dtype=np.float64)

        return cls(
            head=column([head_bytes(m, w) for m, w in zip(models, units, strict=True)]),
            row=column([embedding_row_bytes(m, w) for m, w in zip(models, units, strict=True)]),
            dense=column([w.dense for w in units]),
            routed=column([w.routed_experts for w in units]),
            expert_keep=column([1.0 - m.n_experts_per_token / m.n_experts if m.is_moe else 1.0 for m in models]),
            experts=column([float(m.n_experts * m.moe_layer_count) if m.is_moe else 0.0 for m in models]),
            matmul_params=column([m.matmul_params_per_token() for m in models]),
            n_layers=column([m.n_layers for m in models]),
            recurrent_layers=column([m.recurrent_layers for m in models]),
            state_elements=column([m.recurrent_state_elements for m in models]),
            write_elements=column(
                [sum(g.n_layers * g.kv_elements_per_token for g in m.attention if g.kind != "linear") for m in models]
            ),
            kv_elements=kv,
            kv_read_elements=kv_read,
            windows=windows,
            attention_coef=attention,
            head_dim=column([max(1, m.head_dim) for m in models]),
            score_coef=score,
            vocab=column([m.vocab_size for m in models]),
        )

    def along(self, axis: int, ndim: int) -> ModelArrays:
        """The same arrays shaped to broadcast with the model on `axis` of an `ndim`-axis grid."""
        shape = [1] * ndim
        shape[axis] = -1
        changes: dict[str, Any] = {}
        for f in fields(self):
            value: Array = getattr(self, f.name)
            if value.ndim == 2:
                changes[f.name] = value.reshape([*shape, value.shape[-1]])
            else:
                changes[f.name] = value.reshape(shape)
        return ModelArrays(**changes)

    def kv_cached_elements(self, depth_tokens: Array) -> Array:
        """KV elements one stream holds at depth c (windows capped, linear state constant)."""
        ctx = np.minimum(depth_tokens[..., None], self.windows)
        out: Array = (self.kv_elements * ctx).sum(axis=-1) + self.state_elements
        return out


@dataclass(frozen=True)
class GridStep:
    """`decode_step` fields as arrays over the broadcast grid."""

    weight_bytes: Array
    kv_read_bytes: Array
    kv_write_bytes: Array
    flops: Array
    memory_time_s: Array
    compute_time_s: Array
    overhead_time_s: Array
    time_s: Array
    ceiling_time_s: Array

    @property
    def bound(self) -> NDArray[np.str_]:
        """`roofline.bound` applied element-wise (test_sweep_vector checks they agree)."""
        roof = np.maximum(self.memory_time_s, self.compute_time_s)
        out: NDArray[np.str_] = np.where(
            self.overhead_time_s > roof,
            "overhead",
            np.where(self.memory_time_s >= self.compute_time_s, "memory", "compute"),
        )
        return out


def _f(value: ArrayLike) -> Array:
    return np.asarray(value, dtype=np.float64)


def decode_grid(
    models: ModelArrays,
    *,
    weight_scale: ArrayLike,
    bandwidth_gb_per_s: ArrayLike,
    bandwidth_fraction: ArrayLike,
    compute_fraction: ArrayLike,
    peak_tflops: ArrayLike,
    layer_overhead_us: ArrayLike,
    step_overhead_us: ArrayLike,
    batch: ArrayLike,
    depth_tokens: ArrayLike,
    kv_bytes_per_element: ArrayLike,
    tokens_per_stream: ArrayLike = 1.0,
    head_scale: ArrayLike | None = None,
    row_scale: ArrayLike | None = None,
    kv_bandwidth_fraction: ArrayLike | None = None,
    alu_flops_per_weight: ArrayLike = 0.0,
    alu_peak_tflops: ArrayLike = 0.0,
    decode_score_bytes: ArrayLike = 0.0,
    ecc_overhead: ArrayLike = 0.0,
    host_sampling_ns_per_vocab: ArrayLike = 0.0,
    expert_overhead_us: ArrayLike = 0.0,
    grouped_experts: ArrayLike = 0.0,
    recurrent_state_bytes: ArrayLike = 0.0,
    recurrent_layer_extra: ArrayLike = 0.0,
) -> GridStep:
    """The decode step for every broadcast combination of the inputs (peak 0 means 'not published').

    `kv_bandwidth_fraction` (default: `bandwidth_fraction`) is eta_kv; `alu_flops_per_weight` over
    `alu_peak_tflops` (fp32 shader peak, 0: none) is the unhidden matvec ALU time of `roofline.decode_step`;
    `decode_score_bytes` its unfused attention's traffic per score; `ecc_overhead` its e_ecc (0 without inline ECC).
    `host_sampling_ns_per_vocab` is c_samp, a server engine's host sampling per vocabulary entry per token.
    `expert_overhead_us` is tau_expert, the fixed cost per routed expert a step runs (`roofline.expert_dispatch_time_s`);
    where `grouped_experts` is 1 (one grouped kernel over the touched experts) it is charged at one token's experts.
    `recurrent_state_bytes` is b_state (0: the state read once at the KV dtype) and `recurrent_layer_extra` r_rec
    (`roofline.recurrent_state_bytes`, `Efficiency.recurrent_layer_extra`).

    `head_scale` and `row_scale` (default: `weight_scale`) scale the LM head and the embedding rows
    separately, for formats that keep those tables unquantized.
    """
    m = models
    b = _f(batch)
    tokens = b * _f(tokens_per_stream)
    scale = _f(weight_scale)
    head = _f(scale if head_scale is None else head_scale)
    row = _f(scale if row_scale is None else row_scale)
    kv_bpe = _f(kv_bytes_per_element)
    depth = _f(depth_tokens)
    routed_read = m.routed * (1.0 - m.expert_keep**tokens)
    w_read = head * m.head + row * m.row * tokens + scale * (m.dense + routed_read)
    ctx = np.minimum(depth[..., None], m.windows)
    b_state = _f(recurrent_state_bytes)
    kv_read = b * ((m.kv_read_elements * ctx).sum(axis=-1) * kv_bpe + m.state_elements * np.where(b_state > 0, b_state, kv_bpe))
    kv_write = tokens * m.write_elements * kv_bpe
    attention = (m.attention_coef * ctx).sum(axis=-1)
    flops = tokens * (2.0 * m.matmul_params + attention)
    bw = _f(bandwidth_gb_per_s) * GB
    eta_kv = _f(bandwidth_fraction if kv_bandwidth_fraction is None else kv_bandwidth_fraction)
    alu_peak = _f(alu_peak_tflops) * TFLOP
    alu = np.where(alu_peak > 0, _f(alu_flops_per_weight) * m.matmul_params / np.where(alu_peak > 0, alu_peak, 1.0), 0.0)
    scores = b * (m.score_coef * ctx).sum(axis=-1)
    memory = w_read / (_f(bandwidth_fraction) * bw) + (kv_read + kv_write) / (eta_kv * bw) + _f(decode_score_bytes) * scores / bw + alu
    memory = memory + _f(ecc_overhead) * (w_read + kv_read + kv_write) / bw
    peak = _f(peak_tflops) * TFLOP
    has_peak = peak > 0
    safe_peak = np.where(has_peak, peak, 1.0)
    compute = np.where(has_peak, flops / (_f(compute_fraction) * safe_peak), 0.0)
    overhead = (m.n_layers + _f(recurrent_layer_extra) * m.recurrent_layers) * _f(layer_overhead_us) * US + _f(step_overhead_us) * US
    overhead = overhead + tokens * _f(host_sampling_ns_per_vocab) * m.vocab * NS
    dispatched = np.where(_f(grouped_experts) > 0, 1.0, tokens)
    overhead = overhead + _f(expert_overhead_us) * US * m.experts * (1.0 - m.expert_keep**dispatched)
    time = np.maximum(memory, compute) + overhead
    ceiling = np.maximum(w_read / bw, np.where(has_peak, flops / safe_peak, 0.0))
    return GridStep(
        weight_bytes=w_read,
        kv_read_bytes=kv_read,
        kv_write_bytes=kv_write,
        flops=flops,
        memory_time_s=memory,
        compute_time_s=compute,
        overhead_time_s=overhead,
        time_s=time,
        ceiling_time_s=ceiling,
    )
