"""Each model family's config dialect, read into the field names the accounting uses.

transformers' config classes name the same quantity differently per family (GLM's `n_routed_experts`,
ERNIE's `moe_num_experts` and `moe_k`, Step 3.5's `num_attention_groups` and `moe_layers_enum`), and
some families add a shape the common accounting lacks (Gemma 4's global layers and per-layer
embeddings, Step 3.5's sliding layers with their own head count). `ingest.architecture` reads one
dialect; the translations and the shape helpers of single families live here, with the checked
whole-number reader both use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tokometer.errors import IngestError

# Plausibility of a config's counts. The accounting loops over layers (and the offload curves over
# layer counts), so a billion layers would hang it; the deepest published model has 126 layers.
MAX_LAYERS = 100_000
# Any other size or count (hidden size, vocabulary, experts, heads): the largest published is about
# 10^6 (a vocabulary); 10^12 is far beyond any, and products of two such stay exact in a float.
MAX_CONFIG_COUNT = 10**12


def config_int(cfg: Mapping[str, Any], key: str, default: int | None = None) -> int:
    """`cfg[key]` as a whole number within its limit (`default` when absent or null), else an IngestError."""
    value = cfg.get(key)
    if value is None:  # absent or JSON null: the default
        value = default
    if value is None:
        raise IngestError(f"config is missing {key!r}")
    limit = MAX_LAYERS if key in ("num_hidden_layers", "n_layer") else MAX_CONFIG_COUNT
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= limit:
        raise IngestError(f"config field {key!r} must be a whole number from 0 to {limit:,}, got {repr(value)[:40]}")
    return int(value)


def gemma4_global(cfg: Mapping[str, Any], hidden: int, n_heads: int, n_kv: int, head_dim: int) -> tuple[int, int, int]:
    """Gemma 4 global (full) layers: (attention weights, KV elements per token, n_heads * head_dim).

    Global layers use `global_head_dim` and `num_global_key_value_heads`; with `attention_k_eq_v`
    they have no v_proj (V is K), though the cache still holds a K and a V tensor per token.
    """
    kv_proj, g_dim, g_kv = _gemma4_global_kv(cfg, hidden, n_kv, head_dim)
    params = hidden * n_heads * g_dim + kv_proj + n_heads * g_dim * hidden + 2 * g_dim
    return params, 2 * g_kv * g_dim, n_heads * g_dim


def _gemma4_global_kv(cfg: Mapping[str, Any], hidden: int, n_kv: int, head_dim: int) -> tuple[int, int, int]:
    """A Gemma 4 global layer's (K and V projection weights, head dim, KV heads): `global_head_dim` and
    `num_global_key_value_heads`, and no v_proj with `attention_k_eq_v`."""
    g_dim = config_int(cfg, "global_head_dim", head_dim) or head_dim
    g_kv = config_int(cfg, "num_global_key_value_heads", n_kv) or n_kv
    return (1 if cfg.get("attention_k_eq_v") else 2) * hidden * g_kv * g_dim, g_dim, g_kv


def gemma4_shared_layer_delta(
    cfg: Mapping[str, Any], kinds: list[str], hidden: int, n_kv: int, head_dim: int, inter: int
) -> float:
    """Weights Gemma 3n/4's KV-shared layers (the last `num_kv_shared_layers`) have beyond (+) or short of
    (-) a plain layer: no k_proj, v_proj or k_norm (they read an earlier layer's K/V), and with
    `use_double_wide_mlp` an MLP twice `intermediate_size` wide (Gemma 4 E2B). Source: Google MaxText
    `checkpoint_conversion/utils/hf_shape.py` (GEMMA4_SMALL_HF_WEIGHTS_TO_SHAPE, @e591f30c), the HF
    tensor shapes of the E2B/E4B checkpoints."""
    n_shared = min(len(kinds), config_int(cfg, "num_kv_shared_layers", 0) or 0)
    if not n_shared:
        return 0.0
    global_kv_proj, g_dim, _ = _gemma4_global_kv(cfg, hidden, n_kv, head_dim)
    delta = 0.0
    for kind in kinds[len(kinds) - n_shared:]:
        if kind == "full":
            delta -= global_kv_proj + g_dim  # k_norm over the global head dim
        else:
            delta -= 2 * hidden * n_kv * head_dim + head_dim
        if cfg.get("use_double_wide_mlp"):
            delta += 3 * hidden * inter
    return delta


def gemma4_per_layer_embedding(cfg: Mapping[str, Any], n_layers: int) -> float:
    """Gemma 3n/4 per-layer embeddings (E2B/E4B): a second table of which a token reads one small row."""
    width = config_int(cfg, "hidden_size_per_layer_input", 0)
    if not width:
        return 0.0
    return float(config_int(cfg, "vocab_size_per_layer_input", config_int(cfg, "vocab_size")) * n_layers * width)


def gemma4_per_layer_projections(cfg: Mapping[str, Any], hidden: int, n_layers: int) -> float:
    """The per-layer-input gate and projection of each layer plus the model-level projection."""
    width = config_int(cfg, "hidden_size_per_layer_input", 0)
    if not width:
        return 0.0
    return float(n_layers * (2 * hidden * width + hidden) + hidden * n_layers * width + width)


ARCH_ALIASES = {
    "gemma3_text": "gemma3",
    "gemma4_text": "gemma4",
    "gemma4_unified": "gemma4",
    "llama4_text": "llama4",
    "qwen3_5_text": "qwen3_5",
    "qwen3_5_moe_text": "qwen3_5_moe",
    "kimi_k2": "deepseek_v3",  # Kimi K2: DeepseekV3ForCausalLM with 384 experts and 64 heads
    # GLM-4.7-Flash (Glm4MoeLite) and GLM-5 (GlmMoeDsa): DeepSeek-V3's and V3.2's tensors (MLA with a
    # q latent, kv_a_proj_with_mqa, routed + shared experts with a score-correction bias; GLM-5 adds
    # V3.2's lightning indexer) at GLM widths, in the same config fields (transformers' configs)
    "glm4_moe_lite": "deepseek_v3",
    "glm_moe_dsa": "deepseek_v32",
    # Ministral 3 (Ministral3Config): Mistral's decoder tensors (GQA without bias, SwiGLU, RMSNorm)
    "ministral3": "mistral",
}


def glm4_moe_fields(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """GLM-4.5/4.6 (`glm4_moe`) in the fields the GQA MoE accounting reads: the first
    `first_k_dense_replace` layers dense, `n_routed_experts` routed and `n_shared_experts` shared
    experts of `moe_intermediate_size` (transformers `Glm4MoeConfig`)."""
    out = dict(cfg)
    first = config_int(cfg, "first_k_dense_replace", 0)
    out["num_experts"] = config_int(cfg, "n_routed_experts")
    out["mlp_only_layers"] = list(range(first))
    out["shared_expert_intermediate_size"] = config_int(cfg, "n_shared_experts", 0) * config_int(cfg, "moe_intermediate_size")
    return out


def ernie4_5_moe_fields(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """ERNIE 4.5 MoE (`ernie4_5_moe`) in the fields the GQA MoE accounting reads (transformers
    `Ernie4_5_MoeConfig` and its decoder layer): `moe_num_experts` experts of `moe_intermediate_size`,
    `moe_k` per token, `moe_num_shared_experts` shared experts as one MLP of their summed width, and
    MoE on layer i when moe_layer_start_index <= i <= moe_layer_end_index and (i + 1) is a multiple of
    `moe_layer_interval`; the other layers carry the dense `intermediate_size` MLP."""
    out = dict(cfg)
    n_layers = config_int(cfg, "num_hidden_layers")
    start = config_int(cfg, "moe_layer_start_index", 1)
    end_raw = cfg.get("moe_layer_end_index", -1)
    end = n_layers - 1 if end_raw is None or end_raw == -1 else config_int(cfg, "moe_layer_end_index")
    interval = config_int(cfg, "moe_layer_interval", 1) or 1
    out["num_experts"] = config_int(cfg, "moe_num_experts")
    out["num_experts_per_tok"] = config_int(cfg, "moe_k")
    out["mlp_only_layers"] = [i for i in range(n_layers) if not (start <= i <= end and (i + 1) % interval == 0)]
    out["shared_expert_intermediate_size"] = config_int(cfg, "moe_num_shared_experts", 0) * config_int(cfg, "moe_intermediate_size")
    return out


def step3p5_fields(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """Step 3.5 (`step3p5`, Step3p5Config) in the fields the GQA MoE accounting reads: `num_attention_groups`
    KV heads, `moe_num_experts` experts of `moe_intermediate_size`, `moe_top_k` per token, MoE on the layers
    `moe_layers_enum` lists (every layer from 3 when it lists none) with a shared expert of `share_expert_dim`;
    the other layers carry the dense `intermediate_size` MLP."""
    out = dict(cfg)
    n_layers = config_int(cfg, "num_hidden_layers")
    if cfg.get("num_key_value_heads") is None and cfg.get("num_attention_groups") is not None:
        out["num_key_value_heads"] = config_int(cfg, "num_attention_groups")
    out["num_experts"] = config_int(cfg, "moe_num_experts", config_int(cfg, "n_routed_experts", 0))
    out["num_experts_per_tok"] = config_int(cfg, "moe_top_k", config_int(cfg, "num_experts_per_tok", 0))
    listed = cfg.get("moe_layers_enum")
    items = listed.split(",") if isinstance(listed, str) else list(listed or [])
    moe = {int(i) for i in items if str(i).strip()} or set(range(3, n_layers))
    out["mlp_only_layers"] = [i for i in range(n_layers) if i not in moe]
    out["shared_expert_intermediate_size"] = config_int(cfg, "share_expert_dim", 0)
    return out


def step3p5_sliding(cfg: Mapping[str, Any], attn: int, hidden: int, n_heads: int, head_dim: int) -> tuple[int, int]:
    """Step 3.5's sliding-window layers project their own head count (`attention_other_setting`), over
    the same KV heads as the full layers: (attention weights of one sliding layer, its n_heads * head_dim)."""
    other = cfg.get("attention_other_setting")
    if not isinstance(other, Mapping):
        return attn, n_heads * head_dim
    heads = config_int(other, "num_attention_heads", n_heads)
    dim = config_int(other, "head_dim", head_dim)
    if dim != head_dim or config_int(other, "num_attention_groups", 0) not in (0, config_int(cfg, "num_key_value_heads")):
        raise IngestError("step3p5 sliding layers with their own head_dim or KV heads are not modelled")
    per_head = 2 * hidden * head_dim + (hidden if cfg.get("use_head_wise_attn_gate") else 0)  # q and o rows, gate
    return attn + (heads - n_heads) * per_head, heads * head_dim
