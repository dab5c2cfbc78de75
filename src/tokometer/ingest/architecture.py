"""Hugging Face `config.json` fields -> `ModelSpec`: parameters by how decoding reads them, KV per token.

Exact accounting for llama, mistral, qwen2, qwen3, qwen2_moe, qwen3_moe, mixtral, gemma/gemma2/gemma3
(sliding-window pattern), deepseek_v2/v3 (MLA, shared experts, dense first layers, MTP module
excluded), gpt_oss (MoE, alternating sliding window, attention sinks) and phi3. Anything else with
the usual transformer fields falls back to a generic dense estimate and says so in `warnings`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tokometer.errors import IngestError, InputError
from tokometer.specs import AttentionGroup, AttentionKind, ModelSpec, ParamGroups

KNOWN_ARCHITECTURES = (
    "llama",
    "mistral",
    "qwen2",
    "qwen3",
    "qwen2_moe",
    "qwen3_moe",
    "mixtral",
    "gemma",
    "gemma2",
    "gemma3",
    "gemma3_text",
    "deepseek_v2",
    "deepseek_v3",
    "gpt_oss",
    "phi3",
)


def _int(cfg: Mapping[str, Any], key: str, default: int | None = None) -> int:
    value = cfg.get(key)
    if value is None:  # absent or JSON null: the default
        value = default
    if value is None:
        raise IngestError(f"config is missing {key!r}")
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise IngestError(f"config field {key!r} must be a non-negative integer, got {value!r}")
    return int(value)


def language_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Multimodal configs (gemma3, llava...) nest the language model under `text_config`."""
    text = config.get("text_config")
    if isinstance(text, Mapping) and "hidden_size" in text:
        merged = dict(text)
        for key in ("tie_word_embeddings", "torch_dtype", "quantization_config"):
            if key not in merged and key in config:
                merged[key] = config[key]
        merged.setdefault("model_type", config.get("model_type", ""))
        if str(merged["model_type"]).endswith("_text"):
            merged["model_type"] = str(merged["model_type"])[: -len("_text")]
        return merged
    return dict(config)


def _layer_types(cfg: Mapping[str, Any], arch: str, n_layers: int) -> list[str]:
    """Per layer: 'full' or 'sliding'. Explicit `layer_types` wins over the family's pattern."""
    explicit = cfg.get("layer_types")
    if isinstance(explicit, Sequence) and not isinstance(explicit, str) and len(explicit) == n_layers:
        kinds = []
        for item in explicit:
            name = str(item)
            if "sliding" in name or "local" in name:
                kinds.append("sliding")
            elif "linear" in name or "mamba" in name or "ssm" in name:
                kinds.append("linear")
            else:
                kinds.append("full")
        return kinds
    window = cfg.get("sliding_window")
    if not window:
        return ["full"] * n_layers
    if arch == "gemma2":
        return ["sliding" if i % 2 == 0 else "full" for i in range(n_layers)]
    if arch == "gemma3":
        pattern = int(cfg.get("sliding_window_pattern", 6) or 6)
        return ["full" if (i + 1) % pattern == 0 else "sliding" for i in range(n_layers)]
    if arch == "gpt_oss":
        return ["sliding" if i % 2 == 0 else "full" for i in range(n_layers)]
    if arch in ("mistral", "qwen2", "qwen3", "mixtral", "qwen2_moe", "qwen3_moe"):
        use = cfg.get("use_sliding_window", arch in ("mistral", "mixtral"))
        if not use:
            return ["full"] * n_layers
        max_window_layers = int(cfg.get("max_window_layers", n_layers) or n_layers)
        if arch.startswith("qwen"):
            return ["sliding" if i >= max_window_layers else "full" for i in range(n_layers)]
        return ["sliding"] * n_layers
    return ["full"] * n_layers


def spec_from_config(
    config: Mapping[str, Any],
    name: str,
    *,
    source: str | None = None,
    tokenizer: str | None = None,
    default_quant: str | None = None,
    model_id: str | None = None,
) -> ModelSpec:
    """Account a model from its HF config: parameters per read class and KV stored per token."""
    cfg = language_config(config)
    arch = str(cfg.get("model_type") or "").lower()
    if arch == "gemma3_text":
        arch = "gemma3"
    warnings: list[str] = []
    if arch not in KNOWN_ARCHITECTURES:
        warnings.append(
            f"architecture {arch or '(none)'!r} is not modelled exactly; generic dense transformer estimate"
        )
    hidden = _int(cfg, "hidden_size")
    n_layers = _int(cfg, "num_hidden_layers")
    n_heads = _int(cfg, "num_attention_heads")
    if hidden == 0 or n_layers == 0 or n_heads == 0:
        raise IngestError("config has zero hidden_size, num_hidden_layers or num_attention_heads")
    n_kv = _int(cfg, "num_key_value_heads", n_heads) or n_heads
    head_dim = int(cfg.get("head_dim") or hidden // n_heads)
    vocab = _int(cfg, "vocab_size")
    inter = _int(cfg, "intermediate_size", 4 * hidden)
    tied = bool(cfg.get("tie_word_embeddings", arch.startswith("gemma")))

    embedding = float(vocab * hidden)
    lm_head = 0.0 if tied else float(vocab * hidden)
    final_norm = float(hidden)

    n_experts = 0
    top_k = 0
    dense_layers_params = 0.0
    routed = 0.0
    attention_groups: list[AttentionGroup]

    if arch in ("deepseek_v2", "deepseek_v3"):
        q_lora = cfg.get("q_lora_rank")
        kv_lora = _int(cfg, "kv_lora_rank")
        rope = _int(cfg, "qk_rope_head_dim")
        nope = _int(cfg, "qk_nope_head_dim")
        v_dim = _int(cfg, "v_head_dim")
        head_dim = nope + rope  # query/key width per head (the config's hidden/heads means nothing here)
        q_dim = n_heads * (nope + rope)
        if q_lora:
            q_params = hidden * int(q_lora) + int(q_lora) + int(q_lora) * q_dim
        else:
            q_params = hidden * q_dim
        attn = (
            q_params
            + hidden * (kv_lora + rope)
            + kv_lora
            + kv_lora * n_heads * (nope + v_dim)
            + n_heads * v_dim * hidden
        )
        norms = 2 * hidden
        first_dense = _int(cfg, "first_k_dense_replace", 0)
        freq = _int(cfg, "moe_layer_freq", 1) or 1
        n_experts = _int(cfg, "n_routed_experts")
        top_k = _int(cfg, "num_experts_per_tok")
        moe_inter = _int(cfg, "moe_intermediate_size")
        n_shared = _int(cfg, "n_shared_experts", 0)
        moe_layers = [i for i in range(n_layers) if i >= first_dense and i % freq == 0]
        n_moe = len(moe_layers)
        n_dense = n_layers - n_moe
        router = hidden * n_experts + (n_experts if arch == "deepseek_v3" else 0)
        dense_layers_params = float(
            n_layers * (attn + norms)
            + n_dense * 3 * hidden * inter
            + n_moe * (router + n_shared * 3 * hidden * moe_inter)
        )
        routed = float(n_moe * n_experts * 3 * hidden * moe_inter)
        attention_groups = [
            AttentionGroup(
                kind="mla",
                n_layers=n_layers,
                kv_elements_per_token=kv_lora + rope,
                attention_dim=n_heads * (nope + rope),
            )
        ]
        if cfg.get("num_nextn_predict_layers"):
            warnings.append("multi-token-prediction (MTP) module excluded from the accounting")
    else:
        q = hidden * n_heads * head_dim
        kv = 2 * hidden * n_kv * head_dim
        o = n_heads * head_dim * hidden
        attn = q + kv + o
        if arch == "qwen2" or arch == "qwen2_moe" or cfg.get("attention_bias"):
            attn += n_heads * head_dim + 2 * n_kv * head_dim
            if arch == "gpt_oss" or (cfg.get("attention_bias") and arch not in ("qwen2", "qwen2_moe")):
                attn += hidden  # o_proj bias
        if arch in ("qwen3", "qwen3_moe", "gemma3"):
            attn += 2 * head_dim  # q_norm, k_norm
        if arch == "gpt_oss":
            attn += n_heads  # attention sinks
        norms = (4 if arch in ("gemma2", "gemma3") else 2) * hidden
        mlp_dense = 3 * hidden * inter
        if cfg.get("mlp_bias"):
            mlp_dense += 2 * inter + hidden

        n_experts = int(cfg.get("num_local_experts") or cfg.get("num_experts") or 0)
        top_k = int(cfg.get("num_experts_per_tok") or cfg.get("experts_per_token") or 0)
        if n_experts and top_k:
            moe_inter = int(cfg.get("moe_intermediate_size") or inter)
            step = int(cfg.get("decoder_sparse_step", 1) or 1)
            mlp_only = set(cfg.get("mlp_only_layers") or [])
            moe_layers = [
                i for i in range(n_layers) if i not in mlp_only and (i + 1) % step == 0
            ]
            n_moe = len(moe_layers)
            expert = 3 * hidden * moe_inter
            router = hidden * n_experts
            if arch == "gpt_oss":
                expert += 2 * moe_inter + hidden  # gate_up and down biases
                router += n_experts
            shared_inter = int(cfg.get("shared_expert_intermediate_size") or 0)
            shared = 3 * hidden * shared_inter + (hidden if shared_inter else 0)
            dense_layers_params = float(
                n_layers * (attn + norms)
                + (n_layers - n_moe) * mlp_dense
                + n_moe * (router + shared)
            )
            routed = float(n_moe * n_experts * expert)
        else:
            n_experts, top_k = 0, 0
            dense_layers_params = float(n_layers * (attn + norms + mlp_dense))

        kinds = _layer_types(cfg, arch, n_layers)
        window = cfg.get("sliding_window")
        attention_groups = []
        kind: AttentionKind
        for kind in ("full", "sliding", "linear"):
            count = kinds.count(kind)
            if count:
                attention_groups.append(
                    AttentionGroup(
                        kind=kind,
                        n_layers=count,
                        kv_elements_per_token=0 if kind == "linear" else 2 * n_kv * head_dim,
                        window_tokens=int(window) if kind == "sliding" and window else None,
                        attention_dim=n_heads * head_dim,
                    )
                )

    params = ParamGroups(
        embedding=embedding,
        lm_head=lm_head,
        dense=dense_layers_params + final_norm,
        routed_experts=routed,
    )
    max_ctx = cfg.get("max_position_embeddings")
    return ModelSpec(
        id=model_id,
        name=name,
        architecture=arch or "unknown",
        n_layers=n_layers,
        hidden_size=hidden,
        n_heads=n_heads,
        n_kv_heads=n_kv,
        head_dim=head_dim,
        vocab_size=vocab,
        params=params,
        attention=tuple(attention_groups),
        tied_embeddings=tied,
        n_experts=n_experts,
        n_experts_per_token=top_k,
        max_context_tokens=int(max_ctx) if isinstance(max_ctx, int | float) and max_ctx > 0 else None,
        tokenizer=tokenizer,
        default_quant=default_quant,
        source=source,
        warnings=tuple(warnings),
    )


def typical_layer_count(total_params: float) -> int:
    """Layer count of a typical dense decoder of this size (16 * P_B**(1/3): 8B -> 32, 70B -> 66)."""
    return max(1, int(round(16.0 * (total_params / 1e9) ** (1.0 / 3.0))))


def bare_spec(
    total_params: float,
    *,
    active_params: float | None = None,
    n_layers: int | None = None,
    name: str | None = None,
) -> ModelSpec:
    """A model from bare parameter counts (the seed's calculator). No KV accounting without a config."""
    if not total_params > 0:
        raise InputError(f"parameter count must be positive, got {total_params!r}")
    active = total_params if active_params is None else active_params
    if not 0 < active <= total_params:
        raise InputError("active parameters must be positive and at most the total")
    warnings = ["bare parameter counts: no KV-cache or attention accounting (give a model config for that)"]
    if n_layers is None:
        n_layers = typical_layer_count(total_params)
        warnings.append(f"layer count not given; assumed {n_layers} for per-layer overheads")
    if active < total_params:
        warnings.append("bare MoE counts: batched decode reads only the active share (experts touched at batch not modelled)")
    label = name or (
        f"{total_params / 1e9:g}B" + (f" ({active / 1e9:g}B active)" if active < total_params else "")
    )
    return ModelSpec(
        id=None,
        name=label,
        architecture="bare",
        n_layers=n_layers,
        hidden_size=0,
        n_heads=0,
        n_kv_heads=0,
        head_dim=0,
        vocab_size=0,
        params=ParamGroups(embedding=0.0, lm_head=0.0, dense=active, routed_experts=total_params - active),
        attention=(),
        warnings=tuple(warnings),
    )
