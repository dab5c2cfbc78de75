"""Token mixers of hybrid models: which layers attend and which recur, their weights and their state.

Hybrid decoders interleave softmax attention (a KV cache that grows with the context) with
recurrent mixers whose memory is a fixed state per sequence: Gated DeltaNet linear attention
(Qwen3-Next, Qwen3.5), Mamba-1 (Jamba) and Mamba-2 (Mamba-2, Nemotron-H, Falcon-H1). Decoding
reads that state once per token and writes it back, so it belongs to the KV accounting as a
per-sequence constant (docs/PHYSICS.md section 1), never per token.

`hybrid_layers` turns a Hugging Face config into one `Layer` per decoder layer: its mixers
(attention and/or recurrent, with their parameters, KV elements per token and state elements) and
its feed-forward kind. The layouts follow each family's config class when the config leaves
them implicit: Qwen3-Next and Qwen3.5 put full attention on every `full_attention_interval`-th
layer (4), Jamba on layer `i % attn_layer_period == attn_layer_offset` with experts on
`i % expert_layer_period == expert_layer_offset`, Nemotron-H spells its layers in
`hybrid_override_pattern` (M Mamba-2, * attention, - MLP, E MoE), Falcon-H1 runs attention and
Mamba-2 side by side in every layer, and pure Mamba models have no attention at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tokometer.domain.specs import AttentionKind

HYBRID_ARCHITECTURES = (
    "qwen3_next",
    "qwen3_5",
    "qwen3_5_moe",
    "jamba",
    "nemotron_h",
    "falcon_h1",
    "mamba",
    "mamba2",
)

FeedForward = Literal["dense", "moe", "none"]


@dataclass(frozen=True, slots=True)
class Mixer:
    """One token mixer of one layer: weights, KV elements stored per token, fixed state per sequence."""

    kind: AttentionKind  # full | sliding | linear
    params: float
    kv_elements_per_token: int = 0
    state_elements: int = 0
    attention_dim: int = 0  # n_heads * head_dim, for the score/mix FLOPs (0 for recurrent mixers)
    window_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Layer:
    mixers: tuple[Mixer, ...]
    feed_forward: FeedForward
    n_norms: int = 2  # hidden-sized norm vectors in the layer


def _get(cfg: Mapping[str, Any], *keys: str, default: int | None = None) -> int:
    """First present key among `keys` (configs of one family name the same field differently)."""
    for key in keys:
        value = cfg.get(key)
        if value is not None and not isinstance(value, bool):
            if not isinstance(value, int | float) or value < 0:
                raise ValueError(f"config field {key!r} must be a non-negative number, got {value!r}")
            return int(value)
    if default is None:
        raise ValueError(f"config is missing {keys[0]!r}")
    return default


def attention(
    hidden: int,
    n_heads: int,
    n_kv: int,
    head_dim: int,
    *,
    kind: AttentionKind = "full",
    window: int | None = None,
    output_gate: bool = False,
    qk_norm: bool = False,
) -> Mixer:
    """GQA attention: q (doubled by an output gate), k, v, o projections; K and V cached per token."""
    q_out = n_heads * head_dim * (2 if output_gate else 1)
    params = hidden * q_out + 2 * hidden * n_kv * head_dim + n_heads * head_dim * hidden
    if qk_norm:
        params += 2 * head_dim
    return Mixer(
        kind=kind,
        params=float(params),
        kv_elements_per_token=2 * n_kv * head_dim,
        attention_dim=n_heads * head_dim,
        window_tokens=window if kind == "sliding" else None,
    )


def gated_delta_net(cfg: Mapping[str, Any], hidden: int) -> Mixer:
    """Gated DeltaNet linear attention (Qwen3-Next, Qwen3.5).

    Weights: in_proj_qkvz `hidden x (2 nk dk + 2 nv dv)`, in_proj_ba `hidden x 2 nv`, a causal conv
    of `kernel` taps over `2 nk dk + nv dv` channels, dt_bias and A_log (`nv`), a gated norm (`dv`)
    and out_proj `nv dv x hidden`.
    State per sequence: the recurrent matrix `nv x dk x dv` plus `kernel - 1` conv inputs.
    """
    nk = _get(cfg, "linear_num_key_heads")
    nv = _get(cfg, "linear_num_value_heads")
    dk = _get(cfg, "linear_key_head_dim")
    dv = _get(cfg, "linear_value_head_dim")
    kernel = _get(cfg, "linear_conv_kernel_dim", default=4)
    conv_dim = 2 * nk * dk + nv * dv
    params = hidden * (2 * nk * dk + 2 * nv * dv) + hidden * 2 * nv + conv_dim * kernel + 2 * nv + dv + nv * dv * hidden
    state = nv * dk * dv + (kernel - 1) * conv_dim
    return Mixer(kind="linear", params=float(params), state_elements=state)


def mamba2(cfg: Mapping[str, Any], hidden: int) -> Mixer:
    """Mamba-2 block (Mamba-2, Nemotron-H, Falcon-H1), with `d_inner = n_heads * head_dim`.

    Weights: in_proj `hidden x (2 d_inner + 2 g N + n_heads)`, conv (`kernel` taps + bias) over
    `d_inner + 2 g N` channels, dt_bias, A_log and D (`n_heads`), a gated norm (`d_inner`), out_proj.
    State per sequence: the SSM state `n_heads x head_dim x N` plus `kernel - 1` conv inputs.
    """
    n_heads = _get(cfg, "mamba_num_heads", "mamba_n_heads", "num_heads")
    head_dim = _get(cfg, "mamba_head_dim", "mamba_d_head", "head_dim")
    d_state = _get(cfg, "ssm_state_size", "mamba_d_state", "state_size", default=128)
    groups = _get(cfg, "n_groups", "mamba_n_groups", default=1)
    kernel = _get(cfg, "conv_kernel", "mamba_d_conv", default=4)
    d_inner = n_heads * head_dim
    conv_dim = d_inner + 2 * groups * d_state
    params = (
        hidden * (2 * d_inner + 2 * groups * d_state + n_heads)
        + conv_dim * (kernel + 1)
        + 3 * n_heads
        + d_inner
        + d_inner * hidden
    )
    state = n_heads * head_dim * d_state + (kernel - 1) * conv_dim
    return Mixer(kind="linear", params=float(params), state_elements=state)


def mamba1(cfg: Mapping[str, Any], hidden: int) -> Mixer:
    """Mamba-1 block (Mamba, Jamba), with `d_inner = expand * hidden`.

    Weights: in_proj `hidden x 2 d_inner`, conv (`kernel` taps + bias), x_proj
    `d_inner x (dt_rank + 2 N)`, dt_proj `dt_rank x d_inner` + bias, A_log `d_inner x N`, D,
    out_proj `d_inner x hidden` (Jamba adds small dt/B/C norms).
    State per sequence: `d_inner x N` plus `kernel - 1` conv inputs of `d_inner`.
    """
    expand = _get(cfg, "mamba_expand", "expand", default=2)
    d_inner = expand * hidden
    d_state = _get(cfg, "mamba_d_state", "state_size", default=16)
    kernel = _get(cfg, "mamba_d_conv", "conv_kernel", default=4)
    rank = _get(cfg, "mamba_dt_rank", "time_step_rank", default=-(-hidden // 16))
    params = (
        hidden * 2 * d_inner
        + d_inner * (kernel + 1)
        + d_inner * (rank + 2 * d_state)
        + rank * d_inner
        + d_inner
        + d_inner * d_state
        + d_inner
        + d_inner * hidden
        + rank
        + 2 * d_state
    )
    state = d_inner * d_state + (kernel - 1) * d_inner
    return Mixer(kind="linear", params=float(params), state_elements=state)


def _qwen_linear_layout(cfg: Mapping[str, Any], n_layers: int) -> list[bool]:
    """True where the layer is full attention: `layer_types`, else every `full_attention_interval`-th."""
    explicit = cfg.get("layer_types")
    if isinstance(explicit, Sequence) and not isinstance(explicit, str) and len(explicit) == n_layers:
        return ["linear" not in str(t) for t in explicit]
    interval = _get(cfg, "full_attention_interval", default=4) or 4
    return [(i + 1) % interval == 0 for i in range(n_layers)]


def hybrid_layers(cfg: Mapping[str, Any], arch: str, n_layers: int, hidden: int) -> list[Layer]:
    """One `Layer` per decoder layer of a hybrid (or attention-free) architecture."""
    if arch in ("mamba", "mamba2"):
        block = mamba1(cfg, hidden) if arch == "mamba" else mamba2(cfg, hidden)
        return [Layer((block,), "none", n_norms=1)] * n_layers

    n_heads = _get(cfg, "num_attention_heads")
    n_kv = _get(cfg, "num_key_value_heads", default=n_heads) or n_heads
    head_dim = _get(cfg, "head_dim", "attention_head_dim", default=hidden // n_heads if n_heads else 0)

    if arch in ("qwen3_next", "qwen3_5", "qwen3_5_moe"):
        full = attention(hidden, n_heads, n_kv, head_dim, output_gate=bool(cfg.get("attn_output_gate", True)), qk_norm=True)
        linear = gated_delta_net(cfg, hidden)
        moe = arch != "qwen3_5" and bool(_get(cfg, "num_experts", default=0))
        ff: FeedForward = "moe" if moe else "dense"
        return [Layer((full if is_full else linear,), ff) for is_full in _qwen_linear_layout(cfg, n_layers)]

    if arch == "jamba":
        a_period = _get(cfg, "attn_layer_period", default=8) or 8
        a_offset = _get(cfg, "attn_layer_offset", default=4)
        e_period = _get(cfg, "expert_layer_period", default=2) or 2
        e_offset = _get(cfg, "expert_layer_offset", default=1)
        n_experts = _get(cfg, "num_experts", default=16)
        block_types = cfg.get("layers_block_type")
        explicit = isinstance(block_types, Sequence) and not isinstance(block_types, str) and len(block_types) == n_layers
        attn = attention(hidden, n_heads, n_kv, head_dim)
        ssm = mamba1(cfg, hidden)
        layers = []
        for i in range(n_layers):
            is_attention = str(block_types[i]) == "attention" if explicit and block_types else i % a_period == a_offset
            is_moe = n_experts > 1 and i % e_period == e_offset
            layers.append(Layer((attn if is_attention else ssm,), "moe" if is_moe else "dense"))
        return layers

    if arch == "nemotron_h":
        pattern = str(cfg.get("hybrid_override_pattern") or "")
        if len(pattern) != n_layers:
            raise ValueError(
                f"hybrid_override_pattern has {len(pattern)} layers, num_hidden_layers is {n_layers}"
            )
        attn = attention(hidden, n_heads, n_kv, head_dim)
        ssm = mamba2(cfg, hidden)
        layers = []
        for char in pattern:
            if char == "M":
                layers.append(Layer((ssm,), "none", n_norms=1))
            elif char == "*":
                layers.append(Layer((attn,), "none", n_norms=1))
            elif char == "-":
                layers.append(Layer((), "dense", n_norms=1))
            elif char == "E":
                layers.append(Layer((), "moe", n_norms=1))
            else:
                raise ValueError(f"hybrid_override_pattern has an unknown layer kind {char!r} (M, *, - or E)")
        return layers

    if arch == "falcon_h1":
        both = (attention(hidden, n_heads, n_kv, head_dim), mamba2(cfg, hidden))
        return [Layer(both, "dense")] * n_layers

    raise ValueError(f"{arch!r} is not a hybrid architecture")


__all__ = ["HYBRID_ARCHITECTURES", "Layer", "Mixer", "attention", "gated_delta_net", "hybrid_layers", "mamba1", "mamba2"]
