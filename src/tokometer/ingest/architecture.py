"""Hugging Face `config.json` fields -> `ModelSpec`: parameters by how decoding reads them, KV per token.

Exact accounting for llama, mistral, qwen2, qwen3, qwen2_moe, qwen3_moe, mixtral, gemma/gemma2/gemma3
(sliding-window pattern), deepseek_v2/v3 (MLA, shared experts, dense first layers, MTP module
excluded), gpt_oss (MoE, alternating sliding window, attention sinks) and phi3. Anything else with
the usual transformer fields falls back to a generic dense estimate and says so in `warnings`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from tokometer.costmodel.mixers import HYBRID_ARCHITECTURES, Layer, hybrid_layers
from tokometer.domain.specs import (
    BARE_ARCHITECTURE,
    AttentionGroup,
    AttentionKind,
    ModelSpec,
    ParamGroups,
)
from tokometer.errors import IngestError, InputError
from tokometer.ingest.dialects import (
    ARCH_ALIASES,
    MAX_CONFIG_COUNT,
    MAX_LAYERS,
    ernie4_5_moe_fields,
    gemma4_global,
    gemma4_per_layer_embedding,
    gemma4_per_layer_projections,
    gemma4_shared_layer_delta,
    glm4_moe_fields,
    step3p5_fields,
    step3p5_sliding,
)
from tokometer.ingest.dialects import config_int as _int

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
    "deepseek_v32",
    "gpt_oss",
    "phi3",
    "gemma4",
    "llama4",
    "internlm",
    "internlm2",
    "glm4_moe",
    "minimax_m2",
    "ernie4_5_moe",
    "step3p5",
    *HYBRID_ARCHITECTURES,
)


# the fields the accounting reads as whole numbers: anything else there (a list, a string) is refused up front
_COUNT_KEYS = frozenset({
    "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size",
    "intermediate_size", "num_local_experts", "num_experts", "n_routed_experts", "num_experts_per_tok",
    "experts_per_token", "top_k_experts", "moe_intermediate_size", "shared_expert_intermediate_size",
    "max_window_layers", "decoder_sparse_step", "first_k_dense_replace", "moe_layer_freq", "kv_lora_rank",
    "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "num_kv_shared_layers", "n_shared_experts",
    "interleave_moe_layer_step", "max_position_embeddings", "intermediate_size_mlp",
})
_EXPERT_COUNT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts")
_EXPERTS_PER_TOKEN_KEYS = ("num_experts_per_tok", "experts_per_token", "top_k_experts")


def check_config_numbers(cfg: Mapping[str, Any]) -> None:
    """Refuse what no model has, before any accounting: a non-finite or astronomically large number
    in a top-level field, more layers than `MAX_LAYERS`, an explicit zero KV heads beside attention
    heads, or more experts per token than there are experts."""
    for key, value in cfg.items():
        if key in _COUNT_KEYS and value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise IngestError(f"config field {key!r} must be a number, got {repr(value)[:40]}")
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if value != value or value in (float("inf"), float("-inf")) or abs(value) > MAX_CONFIG_COUNT:
            raise IngestError(f"config field {key!r} = {str(value)[:40]} is implausible (expected a finite number of at most {MAX_CONFIG_COUNT:,})")
    for key in ("num_hidden_layers", "n_layer"):
        layers = cfg.get(key)
        if isinstance(layers, int | float) and not isinstance(layers, bool) and layers > MAX_LAYERS:
            raise IngestError(f"{key} = {layers:,} is implausible (at most {MAX_LAYERS:,}; the deepest published model has 126)")
    heads, kv_heads = cfg.get("num_attention_heads"), cfg.get("num_key_value_heads")
    if isinstance(kv_heads, int | float) and not isinstance(kv_heads, bool) and kv_heads == 0 and isinstance(heads, int | float) and heads:
        raise IngestError("num_key_value_heads = 0: attention needs at least one key/value head (omit the field for multi-head attention)")
    experts = next((cfg[k] for k in _EXPERT_COUNT_KEYS if isinstance(cfg.get(k), int | float) and cfg[k]), None)
    per_token = next(((k, cfg[k]) for k in _EXPERTS_PER_TOKEN_KEYS if isinstance(cfg.get(k), int | float) and cfg[k]), None)
    if experts is not None and per_token is not None and per_token[1] > experts:
        raise IngestError(f"{per_token[0]} = {per_token[1]} routes each token to more experts than the model has ({experts})")


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
    if arch == "llama4" and cfg.get("attention_chunk_size"):
        # RoPE layers attend within chunks of attention_chunk_size; every 4th (NoPE) layer is global
        no_rope = cfg.get("no_rope_layers")
        if isinstance(no_rope, Sequence) and not isinstance(no_rope, str) and len(no_rope) == n_layers:
            return ["sliding" if flag else "full" for flag in no_rope]
        interval = int(cfg.get("no_rope_layer_interval", 4) or 4)
        return ["full" if (i + 1) % interval == 0 else "sliding" for i in range(n_layers)]
    window = cfg.get("sliding_window")
    if not window:
        return ["full"] * n_layers
    if arch == "gemma2":
        return ["sliding" if i % 2 == 0 else "full" for i in range(n_layers)]
    if arch in ("gemma3", "gemma4"):
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


def mtp_layer_count(config: Mapping[str, Any]) -> int:
    """Multi-token-prediction modules a checkpoint publishes beside its layers, as each family's config
    names them: DeepSeek-V3 and GLM `num_nextn_predict_layers`, Qwen3-Next/Qwen3.5 `mtp_num_hidden_layers`,
    MiniMax-M2 `num_mtp_modules` (with `use_mtp`). Speculative decoding's `mtp` method needs one."""
    cfg = language_config(config)
    if cfg.get("use_mtp") is False:
        return 0
    counts = [cfg.get(k) for k in ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules")]
    return max((int(c) for c in counts if isinstance(c, int | float) and not isinstance(c, bool) and c > 0), default=0)


def spec_from_config(
    config: Mapping[str, Any],
    name: str,
    *,
    source: str | None = None,
    tokenizer: str | None = None,
    default_quant: str | None = None,
    model_id: str | None = None,
) -> ModelSpec:
    """Account a model from its HF config: parameters per read class and KV stored per token (the
    MTP modules are counted apart, `mtp_layers`, never in the weights a token reads)."""
    spec = _spec_from_config(config, name, source=source, tokenizer=tokenizer, default_quant=default_quant, model_id=model_id)
    mtp = mtp_layer_count(config)
    return replace(spec, mtp_layers=mtp) if mtp else spec


def _spec_from_config(
    config: Mapping[str, Any],
    name: str,
    *,
    source: str | None,
    tokenizer: str | None,
    default_quant: str | None,
    model_id: str | None,
) -> ModelSpec:
    cfg = language_config(config)
    check_config_numbers(cfg)
    arch = str(cfg.get("model_type") or "").lower()
    arch = ARCH_ALIASES.get(arch, arch)
    if arch in HYBRID_ARCHITECTURES:
        try:
            return _hybrid_spec(cfg, arch, name, source=source, tokenizer=tokenizer, default_quant=default_quant, model_id=model_id)
        except ValueError as exc:
            raise IngestError(str(exc)) from None
    warnings: list[str] = []
    if arch == "glm4_moe":
        cfg = glm4_moe_fields(cfg)
    if arch == "ernie4_5_moe":
        cfg = ernie4_5_moe_fields(cfg)
    if arch == "step3p5":
        cfg = step3p5_fields(cfg)
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
    resident = 0.0
    dense_layers_params = 0.0
    routed = 0.0
    attention_groups: list[AttentionGroup]

    if arch in ("deepseek_v2", "deepseek_v3", "deepseek_v32"):
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
        router = hidden * n_experts + (n_experts if arch in ("deepseek_v3", "deepseek_v32") else 0)
        index_dim = _int(cfg, "index_head_dim", 0) if arch == "deepseek_v32" else 0
        if index_dim:
            # DeepSeek Sparse Attention: a lightning indexer per layer (its own query heads from the
            # q latent, one shared key of index_head_dim per token, per-head weights)
            index_heads = _int(cfg, "index_n_heads")
            attn += int(q_lora or hidden) * index_heads * index_dim + hidden * index_dim + 2 * index_dim + hidden * index_heads
            warnings.append(
                f"DeepSeek Sparse Attention: decode attends to the top {_int(cfg, 'index_topk', 2048):,} tokens; "
                "KV reads are counted over the whole context, so long-context decode is underestimated"
            )
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
                kv_elements_per_token=kv_lora + rope + index_dim,  # + the indexer's key per token
                attention_dim=n_heads * (nope + rope),  # prefill: heads expanded from the latent (MHA form)
                decode_attention_dim=n_heads * (2 * kv_lora + rope) // 2,  # decode: absorbed, over the latent
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
            if arch == "gpt_oss" or (cfg.get("attention_bias") and arch not in ("qwen2", "qwen2_moe", "glm4_moe")):
                attn += hidden  # o_proj bias (GLM-4.5 biases q, k and v only)
        if arch in ("qwen3", "qwen3_moe", "gemma3", "gemma4", "step3p5") or (arch == "glm4_moe" and cfg.get("use_qk_norm")):
            attn += 2 * head_dim  # q_norm, k_norm
        if arch == "minimax_m2" and cfg.get("use_qk_norm", True):
            attn += (n_heads + n_kv) * head_dim  # MiniMax-M2 normalises q and k over all heads at once
        if arch == "gpt_oss":
            attn += n_heads  # attention sinks
        if cfg.get("use_head_wise_attn_gate"):
            attn += hidden * n_heads  # Step 3.5: a sigmoid gate per head on the attention output (g_proj)
        norms = (4 if arch in ("gemma2", "gemma3", "gemma4") else 2) * hidden
        kinds = _layer_types(cfg, arch, n_layers)
        full_attn, full_kv, full_dim = attn, 2 * n_kv * head_dim, n_heads * head_dim
        if arch == "gemma4":
            full_attn, full_kv, full_dim = gemma4_global(cfg, hidden, n_heads, n_kv, head_dim)
        sliding_attn, sliding_dim = attn, n_heads * head_dim
        if arch == "step3p5":
            sliding_attn, sliding_dim = step3p5_sliding(cfg, attn, hidden, n_heads, head_dim)
        # per-layer attention weights beyond the uniform `attn` (Gemma 4's global layers and Step 3.5's
        # sliding layers differ)
        attn_extra = kinds.count("full") * (full_attn - attn) + kinds.count("sliding") * (sliding_attn - attn)
        n_kv_layers = n_layers - int(cfg.get("num_kv_shared_layers") or 0)
        # Llama 4: dense layers use intermediate_size_mlp; experts and the shared expert intermediate_size
        mlp_dense = 3 * hidden * (_int(cfg, "intermediate_size_mlp", inter) if arch == "llama4" else inter)
        if cfg.get("mlp_bias"):
            mlp_dense += 2 * inter + hidden

        n_experts = int(cfg.get("num_local_experts") or cfg.get("num_experts") or 0)
        top_k = int(cfg.get("num_experts_per_tok") or cfg.get("experts_per_token") or 0)
        if n_experts and top_k:
            moe_inter = int(cfg.get("moe_intermediate_size") or inter)
            step = int(cfg.get("interleave_moe_layer_step" if arch == "llama4" else "decoder_sparse_step", 1) or 1)
            mlp_only = set(cfg.get("mlp_only_layers") or [])
            moe_layers = [
                i for i in range(n_layers) if i not in mlp_only and (i + 1) % step == 0
            ]
            listed = cfg.get("moe_layers")
            if arch == "llama4" and isinstance(listed, Sequence) and listed:
                moe_layers = [int(i) for i in listed if 0 <= int(i) < n_layers]
            n_moe = len(moe_layers)
            expert = 3 * hidden * moe_inter
            router = hidden * n_experts
            if arch == "gpt_oss":
                expert += 2 * moe_inter + hidden  # gate_up and down biases
                router += n_experts
            shared_inter = int(cfg.get("shared_expert_intermediate_size") or (moe_inter if arch == "llama4" else 0))
            shared = 3 * hidden * shared_inter + (hidden if shared_inter else 0)
            dense_layers_params = float(
                n_layers * (attn + norms)
                + (n_layers - n_moe) * mlp_dense
                + n_moe * (router + shared)
            )
            routed = float(n_moe * n_experts * expert)
        elif arch == "gemma4" and cfg.get("enable_moe_block"):
            # Gemma 4 MoE: a dense MLP and a routed expert block side by side in every layer
            n_moe = n_layers
            n_experts = _int(cfg, "num_experts")
            top_k = _int(cfg, "top_k_experts", _int(cfg, "num_experts_per_tok", 0))
            moe_inter = _int(cfg, "moe_intermediate_size", _int(cfg, "expert_intermediate_size", inter))
            dense_layers_params = float(n_layers * (attn + norms + mlp_dense + hidden * n_experts))
            routed = float(n_layers * n_experts * 3 * hidden * moe_inter)
        else:
            n_experts, top_k, n_moe = 0, 0, 0
            dense_layers_params = float(n_layers * (attn + norms + mlp_dense))
        dense_layers_params += attn_extra
        if arch == "gemma4":
            # a second table read one 256-wide row per layer per token: memory, not bytes per token
            resident += gemma4_per_layer_embedding(cfg, n_layers)
            dense_layers_params += gemma4_per_layer_projections(cfg, hidden, n_layers)
            dense_layers_params += gemma4_shared_layer_delta(cfg, kinds, hidden, n_kv, head_dim, inter)

        window = cfg.get("attention_chunk_size") if arch == "llama4" else cfg.get("sliding_window")
        attention_groups = []
        kind: AttentionKind
        for kind in ("full", "sliding", "linear"):
            count = kinds.count(kind)
            # layers that reuse an earlier layer's KV (Gemma 3n/4 num_kv_shared_layers) store none
            stored = sum(1 for i, k in enumerate(kinds) if k == kind and i < n_kv_layers)
            if count:
                attention_groups.append(
                    AttentionGroup(
                        kind=kind,
                        n_layers=stored if kind != "linear" else count,
                        # ...but they attend over the shared cache: they read it every step
                        shared_layers=count - stored if kind != "linear" and stored else 0,
                        kv_elements_per_token=0 if kind == "linear" else (full_kv if kind == "full" else 2 * n_kv * head_dim),
                        window_tokens=int(window) if kind == "sliding" and window else None,
                        attention_dim=full_dim if kind == "full" else sliding_dim,
                    )
                )
        attention_groups = [g for g in attention_groups if g.n_layers]

    params = ParamGroups(
        embedding=embedding,
        lm_head=lm_head,
        dense=dense_layers_params + final_norm,
        routed_experts=routed,
        resident=resident,
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
        moe_layers=n_moe if n_experts else None,
        max_context_tokens=int(max_ctx) if isinstance(max_ctx, int | float) and max_ctx > 0 else None,
        tokenizer=tokenizer,
        default_quant=default_quant,
        source=source,
        warnings=tuple(warnings),
    )


def _feed_forward_params(cfg: Mapping[str, Any], arch: str, hidden: int) -> tuple[float, float, float, int, int]:
    """(dense MLP, MoE shared + router, all routed experts of one MoE layer, n_experts, top_k).

    Gated MLPs (SwiGLU) hold 3 matrices; Nemotron-H's squared-ReLU MLPs and experts hold 2.
    """
    matrices = 2 if arch == "nemotron_h" else 3
    inter = _int(cfg, "intermediate_size", 4 * hidden)
    dense = float(matrices * hidden * inter)
    n_experts = int(cfg.get("num_experts") or cfg.get("n_routed_experts") or 0)
    top_k = int(cfg.get("num_experts_per_tok") or 0)
    if not n_experts or not top_k:
        return dense, 0.0, 0.0, 0, 0
    expert_inter = int(cfg.get("moe_intermediate_size") or inter)
    shared_inter = int(cfg.get("shared_expert_intermediate_size") or cfg.get("moe_shared_expert_intermediate_size") or 0)
    n_shared = int(cfg.get("n_shared_experts") or 1) if shared_inter else 0
    shared = float(n_shared * matrices * hidden * shared_inter + (hidden if arch.startswith("qwen") and shared_inter else 0))
    router = float(hidden * n_experts)
    return dense, shared + router, float(n_experts * matrices * hidden * expert_inter), n_experts, top_k


def _groups(layers: Sequence[Layer]) -> list[AttentionGroup]:
    """Layers with the same mixer shape share one group; recurrent mixers keep a fixed state."""
    counts: dict[tuple[str, int, int, int, int | None], int] = {}
    for layer in layers:
        for m in layer.mixers:
            key = (m.kind, m.kv_elements_per_token, m.state_elements, m.attention_dim, m.window_tokens)
            counts[key] = counts.get(key, 0) + 1
    return [
        AttentionGroup(kind=kind, n_layers=n, kv_elements_per_token=kv, state_elements=state, attention_dim=dim, window_tokens=window)  # type: ignore[arg-type]
        for (kind, kv, state, dim, window), n in counts.items()
    ]


def _hybrid_spec(
    cfg: Mapping[str, Any],
    arch: str,
    name: str,
    *,
    source: str | None,
    tokenizer: str | None,
    default_quant: str | None,
    model_id: str | None,
) -> ModelSpec:
    """Hybrid attention/recurrent decoders (see `costmodel.mixers`): params per layer, KV and state."""
    hidden = _int(cfg, "hidden_size", _int(cfg, "d_model", 0))
    n_layers = _int(cfg, "num_hidden_layers", _int(cfg, "n_layer", 0))
    vocab = _int(cfg, "vocab_size")
    if hidden == 0 or n_layers == 0:
        raise IngestError("config has zero hidden_size or num_hidden_layers")
    layers = hybrid_layers(cfg, arch, n_layers, hidden)
    dense_ff, moe_fixed, moe_routed, n_experts, top_k = _feed_forward_params(cfg, arch, hidden)
    dense = float(hidden)  # final norm
    routed = 0.0
    n_moe = 0
    for layer in layers:
        dense += sum(m.params for m in layer.mixers) + layer.n_norms * hidden
        if layer.feed_forward == "dense":
            dense += dense_ff
        elif layer.feed_forward == "moe":
            dense += moe_fixed
            routed += moe_routed
            n_moe += 1
    if not routed:
        n_experts, top_k = 0, 0
    tied = bool(cfg.get("tie_word_embeddings", arch.startswith("mamba")))
    n_heads = int(cfg.get("num_attention_heads") or 0)
    n_kv = int(cfg.get("num_key_value_heads") or n_heads)
    head_dim = int(cfg.get("head_dim") or cfg.get("attention_head_dim") or (hidden // n_heads if n_heads else 0))
    if arch == "mamba2":
        n_heads, n_kv, head_dim = 0, 0, 0
    max_ctx = cfg.get("max_position_embeddings")
    return ModelSpec(
        id=model_id,
        name=name,
        architecture=arch,
        n_layers=n_layers,
        hidden_size=hidden,
        n_heads=n_heads,
        n_kv_heads=n_kv,
        head_dim=head_dim,
        vocab_size=vocab,
        params=ParamGroups(
            embedding=float(vocab * hidden),
            lm_head=0.0 if tied else float(vocab * hidden),
            dense=dense,
            routed_experts=routed,
        ),
        attention=tuple(_groups(layers)),
        tied_embeddings=tied,
        n_experts=n_experts,
        n_experts_per_token=top_k,
        moe_layers=n_moe if n_experts else None,
        max_context_tokens=int(max_ctx) if isinstance(max_ctx, int | float) and max_ctx > 0 else None,
        tokenizer=tokenizer,
        default_quant=default_quant,
        source=source,
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
        architecture=BARE_ARCHITECTURE,
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
