"""The time of one engine step from the roofline of the mixed batch it carries.

One step carries T tokens: one per decoding sequence plus the prefill chunks scheduled with them.

    bytes  = W_read(T) + kv_token_bytes * (sum of decode depths + prefix tokens of each chunk)
             + kv_token_bytes * T                                   (new K/V written)
    flops  = 2 * P_matmul * T + 4 * A * (sum of decode depths + prefill pairs)
    t_step = max(W_read(T) / BW', gemm_s)                                        (linear layers)
           + max(kv bytes / BW', 4 * A * pairs / (f_max * peak))                  (attention)
           + tau_layers + tau_step + tau_seq * S + comm(T)   with BW' = eta_bw * BW
    gemm_s = 2 * P_matmul * (D * (T + T_half) / f_max + Q * (T + Q_half) / q_max) / (T * peak)

with D decode tokens and Q prompt tokens (T = D + Q): each token kind has its own efficiency curve
`f * T / (T + half)` over the step's tokens, eta_c for decodes and the prefill curve (q_max,
Q_half) for prompt tokens, so a prefill-only step of c tokens costs what the single-stream prefill
physics says, `2 P c / (q_max c / (c + Q_half) * peak)` (docs/PHYSICS.md section 5). For a MoE model
the prompt tokens' routed-expert share of those FLOPs runs at the tokens each expert receives,
`T k / E`, not at T (`StepCost.prefill_gemm_scale`, the single-stream `roofline.prefill_matmul_time`).

Two rooflines, summed, not one over the whole step: in every layer the GEMMs (QKV, output, MLP)
and the attention kernel run one after the other, each bound by its own resource, so a
compute-bound GEMM does not hide the KV stream of a memory-bound decode attention (the per-operator
roofline of LLM-Viewer, Yuan et al., "LLM Inference Unveiled: Survey and Roofline Model Insights",
2024; Vidur, Agrawal et al., MLSys 2024, profiles the two operator classes separately for the same
reason). Attention runs at the plateau f_max of the compute curve: its tiles run along the sequence,
not along the batch's tokens T. S is the number of sequences that emit a token in the step (each
decode, each prompt that finishes its prefill): tau_seq is their sampling and bookkeeping.

W_read is docs/PHYSICS.md section 1 (weights once per step, embedding rows per token, MoE experts
touched by T tokens), the attention FLOPs section 3 (a prefill chunk of c tokens after `done`
tokens attends to `c * done + c**2 / 2` pairs), eta_c(T) the fitted batched-compute efficiency
(`ServingEfficiency`), comm(T) the tensor-parallel all-reduces (two per layer, ring algorithm, as
in `costmodel.layout`, the cheaper of NCCL's low-latency and bulk protocols for the step's
message size) and pipeline hops. Under TP each device reads 1/tp of the weights and its
KV-head share. Under PP a step is one pass of `pp` micro-batches of T / pp tokens through the stages
(vLLM keeps `pp` batches in flight): every sequence gets one token per pass, each GPU reads its
stage's weights and runs its layers' launches once per micro-batch (`pp` times a pass, so the
weights and per-layer overheads of the whole model per step), while FLOPs and KV per token split `pp`
ways; a micro-batch touches `1 - (1 - k/E)^(T/pp)` of the experts. So PP adds memory (a larger batch),
not decode speed at a given batch, as in the single-stream estimate; the pipeline's fill and drain
are not charged (a prompt's chunk alone still counts its FLOPs over `pp`, so TTFT at low load under
PP reads fast). Sliding-window caps are not applied to the
per-token KV read here (the full-attention layers dominate the models served in practice).

MLA (DeepSeek-V2/V3/R1, Kimi K2): prefill expands the latent into per-head keys and values (A =
n_heads * (nope + rope)), while decode runs the absorbed form over the cached latent: each head scores
its query against kv_lora_rank + rope dims and mixes kv_lora_rank latent values, so a decoded token
costs 4 * A_dec per context token with A_dec = n_heads * (2 * kv_lora_rank + rope) / 2 (2.8x the
expanded form for DeepSeek-V3), over the same latent bytes (`decode_attention_flops_per_pair`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from tokometer.costmodel.layout import Setup, held_weight_bytes, kv_shards, moe_comm_costs
from tokometer.costmodel.links import ACTIVATION_BYTES, allreduce_costs
from tokometer.costmodel.memory import kv_elements_per_token
from tokometer.costmodel.roofline import compute_peak, expert_slice_scale
from tokometer.domain.serving_specs import ServingEfficiency, eager_prefill_floor_s
from tokometer.domain.specs import _Plain
from tokometer.domain.units import GB, TFLOP, US

if TYPE_CHECKING:
    import numpy as np

Tokens = TypeVar("Tokens", float, "np.ndarray")

# Rows of the smallest tensor-core tile along the tokens a grouped expert GEMM runs: the m16n8k16 MMA
# (PTX ISA, "mma.sync" shapes), the BLOCK_SIZE_M = 16 of the fused-MoE kernels' small-batch configs;
# larger batches take larger tiles (Hopper's wgmma is m64), chosen to fit. Each expert's m tokens fill
# whole tiles, on average half a tile of padding: a useful share of m / (m + tile / 2)
# (docs/PHYSICS.md section 7, MoE at batch B).
GEMM_TILE_TOKENS = 16.0


@dataclass(frozen=True, slots=True)
class StepCost(_Plain):
    """Per-device coefficients of one step's bytes, FLOPs and fixed costs; `time_s` evaluates them."""

    weight_fixed_bytes: float  # LM head + dense layers, read once per step
    embedding_row_bytes: float  # per token
    routed_bytes: float  # all routed experts (MoE); the touched share is read
    experts_k_over_e: float
    kv_token_bytes: float  # K+V of one token of context, this device's share
    matmul_flops_per_token: float
    attention_flops_per_pair: float  # 4 * sum(n_layers * n_heads * head_dim), this device's share
    bandwidth_bytes_per_s: float  # the weights' stream: 1 / (1 / (eta_bw * BW) + e_ecc / BW)
    peak_flops: float  # 0: compute time not modelled
    compute_fraction_max: float
    compute_half_tokens: float
    prefill_fraction_max: float  # plateau of prompt tokens' GEMM efficiency
    prefill_half_tokens: float
    overhead_s: float  # per-layer launches + the engine's per-layer step overhead, for the layers this device runs
    sequence_overhead_s: float  # per sequence that emits a token in the step
    comm_fixed_s: float  # all-reduce launches and hops per step (low-latency protocol)
    comm_per_token_s: float  # all-reduce and hop payload per token (low-latency protocol)
    comm_bulk_fixed_s: float  # the same under the bulk protocol (a longer start, the full link rate)
    comm_bulk_per_token_s: float
    moe_comm_fixed_s: float = 0.0  # EP all-to-all dispatch + combine (or DP's expert all-gather) per step
    moe_comm_per_token_s: float = 0.0
    overlap: bool = False  # two-batch overlap: the MoE communication hides under the step's compute and memory time
    expert_flops_per_token: float = 0.0  # the routed experts' share of matmul_flops_per_token, this device
    expert_tokens_per_token: float = 0.0  # k / E: tokens each expert receives per token of the step (x imbalance)
    gemm_tile_tokens: float = GEMM_TILE_TOKENS
    kv_bandwidth_bytes_per_s: float = 0.0  # the KV stream: 1 / (1 / (eta_kv * BW) + e_ecc / BW); 0: the weights' rate
    score_s_per_token_read: float = 0.0  # unfused attention's per-head scores per context token read (decode_score_bytes)
    # a decoded token's attention FLOPs per context token when decode runs another form than prefill
    # (MLA's absorbed projections over the latent; `AttentionGroup.decode_dim`); 0: `attention_flops_per_pair`
    decode_attention_flops_per_pair: float = 0.0
    # host floor of a step that carries prompt tokens when the engine runs prefill eagerly (no CUDA
    # graph): n_layers x the engine's host time per layer of a MoE model (`eager_prefill_layer_us`); 0: none
    eager_prefill_s: float = 0.0
    # steps of at most this many tokens replay a captured graph, prompt tokens included, and are not floored
    # (`SchedulerPolicy.graphed_step_tokens`, vLLM's largest capture size); 0: every step with prompt tokens is
    graphed_step_tokens: float = 0.0
    # MoE: the routed experts' share of `matmul_flops_per_token` (this device); prompt tokens' expert GEMMs run
    # at the efficiency of the tokens each expert receives, `T * expert_tokens_per_token`, not of the step's T
    prefill_routed_share: float = 0.0
    # MoE: prompt tokens' routed-expert GEMM time over the whole experts' when TP splits every expert (`roofline.expert_slice_scale`)
    expert_slice_scale: float = 1.0

    def prefill_gemm_scale(self, tokens: Tokens) -> Tokens:
        """Prompt tokens' GEMM seconds over the dense form `(T + Q_half) / T` (1 for a dense model): the
        routed experts' share `r` runs at `m / (m + Q_half)` with `m = T * k / E` the tokens one expert gets,

            (1 - r) + r * (m + Q_half) * T / (m * (T + Q_half)),

        the single-stream prefill's per-matrix efficiency (`roofline.prefill_matmul_time`, one physics for
        `estimate` and `simulate`), times `expert_slice_scale` when tensor parallelism splits every expert
        (`roofline.expert_slice_scale`). Works on numpy arrays of token counts too."""
        r = self.prefill_routed_share
        if not r:
            return tokens * 0.0 + 1.0
        m = tokens * self.expert_tokens_per_token
        routed = self.expert_slice_scale * (m + self.prefill_half_tokens) * tokens / (m * (tokens + self.prefill_half_tokens))
        scale: Tokens = (1.0 - r) + r * routed
        return scale

    def attention_flops(self, pairs: float, decode_pairs: float) -> float:
        """FLOPs of a step's attention over `pairs` query-key pairs, `decode_pairs` of them decoded tokens'."""
        extra = self.decode_attention_flops_per_pair - self.attention_flops_per_pair if self.decode_attention_flops_per_pair else 0.0
        return self.attention_flops_per_pair * pairs + extra * decode_pairs

    def memory_s(self, weight_bytes: Tokens, kv_tokens_read: Tokens, tokens: Tokens) -> tuple[Tokens, Tokens]:
        """(weights, KV) memory seconds of a step, each term as `roofline.decode_step` charges it, so that a
        decode-only step of B sequences reads what the single-stream decode of batch B reads (one formula),
        but for the batch-1 matvec's unhidden shader work (`unhidden_alu_time_s`): a serving step's linear
        layers run as tensor-core GEMMs, and charging it raised the serving rows' leave-one-source-out error
        (static-batch tput_out median 7.6 % -> 9.1 %, p90 21.8 % -> 23.6 %). Works on numpy arrays of steps too."""
        kv_rate = self.kv_bandwidth_bytes_per_s or self.bandwidth_bytes_per_s
        weights = weight_bytes / self.bandwidth_bytes_per_s
        kv = self.kv_token_bytes * (kv_tokens_read + tokens) / kv_rate + self.score_s_per_token_read * kv_tokens_read
        return weights, kv

    def expert_padding_s(self, tokens: float, decode_tokens: float) -> float:
        """Extra GEMM seconds of the grouped expert GEMMs: each touched expert's `m` tokens fill whole
        tiles of `tile` rows, half a tile of padding on average, so the useful share is `m / (m + tile / 2)`
        and the padding adds `tile / (2 m)` of the expert FLOPs. `m` is the step's `tokens * k / E` over the
        share of experts touched (at least 1)."""
        if not self.expert_flops_per_token or tokens <= 0 or not self.peak_flops:
            return 0.0
        touched: float = 1.0 - (1.0 - self.experts_k_over_e) ** tokens
        m = tokens * self.expert_tokens_per_token / touched
        waste = 0.5 * self.gemm_tile_tokens / m
        # prompt tokens' padding is inside their per-expert efficiency when it is charged (`prefill_gemm_scale`)
        prompt = 0.0 if self.prefill_routed_share else tokens - decode_tokens
        fraction = (decode_tokens / self.compute_fraction_max + prompt / self.prefill_fraction_max) / tokens
        return float(waste * self.expert_flops_per_token * tokens * fraction / self.peak_flops)

    def with_moe_comm(self, roof_s: float, tokens: float) -> float:
        """The step's roofline time with its MoE communication: added, or under two-batch overlap, hidden
        behind it (`max`): the other micro-batch computes while one's tokens cross the link."""
        comm = self.moe_comm_fixed_s + self.moe_comm_per_token_s * tokens
        return (roof_s if roof_s >= comm else comm) if self.overlap else roof_s + comm

    def comm_s(self, tokens: Tokens) -> Tokens:
        """Seconds of the step's all-reduces and hops over `tokens`: the cheaper protocol (links.allreduce_costs).
        Written as `(a + b - |a - b|) / 2` so that a numpy array of token counts works too."""
        low = self.comm_fixed_s + self.comm_per_token_s * tokens
        bulk = self.comm_bulk_fixed_s + self.comm_bulk_per_token_s * tokens
        return (low + bulk - abs(low - bulk)) / 2.0

    def weight_bytes(self, tokens: float) -> float:
        routed = self.routed_bytes * (1.0 - (1.0 - self.experts_k_over_e) ** tokens) if self.routed_bytes else 0.0
        return self.weight_fixed_bytes + self.embedding_row_bytes * tokens + routed

    def gemm_s(self, tokens: float, prefill_tokens: float = 0.0) -> float:
        """Seconds of the step's linear layers at their efficiency, `prefill_tokens` of `tokens` being prompt tokens."""
        if not self.peak_flops or tokens <= 0:
            return 0.0
        decode = tokens - prefill_tokens
        work = (decode * (tokens + self.compute_half_tokens) / self.compute_fraction_max
                + prefill_tokens * (tokens + self.prefill_half_tokens) / self.prefill_fraction_max
                * (self.prefill_gemm_scale(tokens) if self.prefill_routed_share and prefill_tokens else 1.0))
        return self.matmul_flops_per_token * work / (tokens * self.peak_flops)

    def split(
        self, tokens: float, kv_tokens_read: float, attention_pairs: float, sequences: float = 1.0,
        prefill_tokens: float = 0.0, decode_pairs: float | None = None,
    ) -> tuple[float, float, float, float, float]:
        """(weights memory, GEMM compute, KV memory, attention compute, fixed) time of a step, seconds.
        `decode_pairs` of the `attention_pairs` are decoded tokens' (default: all of them in a step
        without prompt tokens, none otherwise)."""
        weights, kv = self.memory_s(self.weight_bytes(tokens), kv_tokens_read, tokens)
        matmul = attention = 0.0
        if self.peak_flops and tokens > 0:
            matmul = self.gemm_s(tokens, prefill_tokens) + self.expert_padding_s(tokens, tokens - prefill_tokens)
            if decode_pairs is None:
                decode_pairs = attention_pairs if not prefill_tokens else 0.0
            attention = self.attention_flops(attention_pairs, decode_pairs) / (self.compute_fraction_max * self.peak_flops)
        fixed = self.overhead_s + self.sequence_overhead_s * sequences + self.comm_s(tokens)
        return weights, matmul, kv, attention, fixed

    def time_s(
        self, tokens: float, kv_tokens_read: float, attention_pairs: float, sequences: float = 1.0,
        prefill_tokens: float = 0.0, decode_pairs: float | None = None,
    ) -> float:
        """Seconds of one step; `sequences` emit a token in it (B for a decode step of B), `prefill_tokens`
        of its `tokens` are prompt tokens (0: a decode step); `decode_pairs` as in `split`."""
        weights, matmul, kv, attention, fixed = self.split(
            tokens, kv_tokens_read, attention_pairs, sequences, prefill_tokens, decode_pairs)
        roof = max(weights, matmul) + max(kv, attention)
        if self.moe_comm_fixed_s or self.moe_comm_per_token_s:
            roof = self.with_moe_comm(roof, tokens)
        if prefill_tokens and roof + fixed < self.eager_prefill_s and tokens > self.graphed_step_tokens:  # eager: host-bound
            return self.eager_prefill_s
        return roof + fixed


def attention_peak_scale(setup: Setup, gemm_fraction: float = 1.0) -> float:
    """The step's GEMM peak over its attention kernels' peak (>= 1). Attention multiplies queries by the
    cached keys and values in the KV cache's precision, whatever the weights are stored in: BF16/FP16
    tensor cores for a 16-bit cache (FlashAttention-2/3, FlashInfer, FlashMLA), FP8 ones only when the
    cache itself is FP8 (FlashAttention-3's FP8 path, TensorRT-LLM's FP8 context FMHA). So FP8 or FP4
    weights do not speed attention up past the cache's own rate; the attention FLOPs are scaled to the
    step's GEMM peak (`attention_flops_per_pair`) so that every reader of the coefficients agrees.
    `gemm_fraction`: the share of that peak the engine's GEMMs realise (`fp8_gemm_fraction`)."""
    peak = (setup.peak.tflops or 0.0) * gemm_fraction
    if not peak:
        return 1.0
    attention = compute_peak(setup.hardware, "fp8" if setup.kv_bytes_per_element <= 1.0 else "fp16").tflops
    return peak / attention if attention and attention < peak else 1.0


def step_cost(
    setup: Setup, serving: ServingEfficiency, *, eager_prefill_layer_us: float = 0.0, fp8_gemm_fraction: float = 1.0,
    graphed_step_tokens: int = 0,
) -> StepCost:
    """Coefficients for `setup` (model, weights, hardware, single-stream efficiency, TP/DP/EP/PP layout).
    `eager_prefill_layer_us`: the engine's host time per layer of a MoE model in a prefill forward run
    without CUDA graphs (`SchedulerPolicy.eager_prefill_layer_us`): a floor on every step with prompt
    tokens, `n_layers` of it (under PP each stage launches its layers once per micro-batch: `n_layers`
    a step); dense models are not charged (no source separates it, and their GPU work covers it).
    `fp8_gemm_fraction`: the share of the FP8 tensor peak the engine's FP8 GEMMs realise against its
    BF16 GEMMs' share of the BF16 peak (`SchedulerPolicy.fp8_gemm_fraction`: dynamic activation
    quantisation); applied only when the step's GEMMs run at the FP8 peak.

    Per GPU, for a step of T tokens over the whole replica (docs/PHYSICS.md section 7): the non-expert
    weights split `tp * pp` ways, read by every attention rank once per micro-batch (`pp` per step);
    the routed experts split `tp * dp * pp` ways, likewise; each of the `dp` attention ranks carries
    T / dp tokens, their KV and attention;
    the expert FLOPs of the busiest EP rank are `ep_imbalance` times the mean.
    """
    model = setup.model
    weights = setup.weights
    lay = setup.layout
    tp, pp, dp = lay.tp, lay.pp, lay.dp
    # Pipeline parallel: a step is one pass of `pp` micro-batches of T / pp tokens through the `pp` stages
    # (vLLM keeps `pp` batches in flight), so each GPU reads its stage's weights once per micro-batch,
    # `pp` times a step, and runs its layers' launches as often; FLOPs and KV per token split `pp` ways.
    split = float(tp)
    moe = float(tp * dp * pp)
    head = weights.embedding if model.tied_embeddings else weights.lm_head
    rows = weights.embedding / model.vocab_size if model.vocab_size else 0.0
    routed = weights.routed_experts if model.is_moe else 0.0
    k_over_e = model.n_experts_per_token / model.n_experts if model.is_moe else 0.0
    # a micro-batch of T / pp tokens touches 1 - (1 - k/E)^(T / pp) of the experts: the same form in T
    micro_k_over_e = 1.0 - (1.0 - k_over_e) ** (1.0 / pp) if pp > 1 else k_over_e
    kv_token = kv_elements_per_token(model) * setup.kv_bytes_per_element / (kv_shards(model, tp) * pp * dp)
    gemm_fraction = fp8_gemm_fraction if setup.peak.dtype == "fp8" else 1.0
    scale = attention_peak_scale(setup, gemm_fraction)  # attention at the KV cache's precision, in GEMM-peak FLOPs
    attention = scale * sum(4.0 * g.n_layers * g.attention_dim for g in model.attention if g.kind != "linear")
    decode_attention = scale * sum(4.0 * g.n_layers * g.decode_dim for g in model.attention if g.kind != "linear")
    imbalance = lay.ep_imbalance if lay.ep > 1 else 1.0
    expert_params = model.params.routed_experts * k_over_e if model.is_moe else 0.0
    expert_flops = 2.0 * expert_params * imbalance / moe
    matmul_flops = 2.0 * (model.matmul_params_per_token() - expert_params) / moe + expert_flops
    if lay.ep == 1:
        # without EP the grouped GEMMs' padding is left to the fitted compute efficiency (the Mixtral
        # serving rows were fitted with it), and the FLOPs are the same expression as before EP existed
        matmul_flops = 2.0 * model.matmul_params_per_token() / moe
        expert_flops = 0.0
    # the routed experts' share of this device's GEMM FLOPs per token (`StepCost.prefill_gemm_scale`)
    if not model.is_moe or not matmul_flops:
        routed_share = 0.0
    elif expert_flops:
        routed_share = expert_flops / matmul_flops
    else:
        routed_share = expert_params / model.matmul_params_per_token()
    eff = setup.efficiency
    link = lay.link
    token_bytes = model.hidden_size * ACTIVATION_BYTES
    hops = (0.0, 0.0)  # (fixed s, s per token) of the pipeline hops, whatever the all-reduce protocol
    if link is not None and pp > 1:
        hop_link = lay.group_link(lay.devices) or link
        hops = ((pp - 1) * hop_link.hop_latency_us * US, (pp - 1) * token_bytes / hop_link.effective_bytes_per_s)
    comm = bulk = hops  # low-latency and bulk all-reduce protocols, each (fixed s, s per token)
    if link is not None and tp > 1:
        per_step = 2 * model.n_layers
        comm, bulk = (
            (hops[0] + per_step * fixed_s, hops[1] + per_step * per_byte_s * token_bytes / (dp * pp))
            for fixed_s, per_byte_s in allreduce_costs(tp, lay.group_link(tp) or link)
        )
    moe_fixed, moe_per_token = moe_comm_costs(model, lay)
    bw = setup.hardware.memory_bandwidth_gb_per_s * GB
    ecc = eff.ecc_overhead_for(setup.hardware)
    # the per-head score traffic of an unfused decode attention, per context token a sequence reads
    # (roofline.decode_score_elements at depth 1; window caps are not applied here, as for the KV read)
    heads_layers = sum(g.n_layers * g.attention_dim / max(1, model.head_dim) for g in model.attention) / (tp * pp)
    return StepCost(
        weight_fixed_bytes=(head + weights.dense) / split,
        embedding_row_bytes=rows / moe,
        routed_bytes=routed / (tp * dp),
        experts_k_over_e=micro_k_over_e,
        kv_token_bytes=kv_token,
        matmul_flops_per_token=matmul_flops,
        attention_flops_per_pair=attention / moe,
        decode_attention_flops_per_pair=decode_attention / moe if decode_attention != attention else 0.0,
        bandwidth_bytes_per_s=bw / (1.0 / eff.bandwidth_fraction_for(setup.quantized) + ecc),
        kv_bandwidth_bytes_per_s=bw / (1.0 / eff.kv_fraction_for(setup.quantized) + ecc),
        score_s_per_token_read=eff.decode_score_bytes * heads_layers / (dp * bw),
        peak_flops=(setup.peak.tflops or 0.0) * gemm_fraction * TFLOP,
        compute_fraction_max=serving.compute_fraction_max,
        compute_half_tokens=serving.compute_half_tokens,
        prefill_fraction_max=serving.prefill_fraction_max or eff.prefill_max_for(setup.quantized),
        prefill_half_tokens=eff.prefill_half_tokens,
        overhead_s=model.n_layers * (eff.layer_overhead_us + serving.layer_step_overhead_us) * US,
        sequence_overhead_s=serving.sequence_overhead_us * US,
        comm_fixed_s=comm[0],
        comm_per_token_s=comm[1],
        comm_bulk_fixed_s=bulk[0],
        comm_bulk_per_token_s=bulk[1],
        moe_comm_fixed_s=moe_fixed * pp,
        moe_comm_per_token_s=moe_per_token,
        overlap=lay.overlap and (moe_fixed > 0 or moe_per_token > 0),
        expert_flops_per_token=expert_flops,
        expert_tokens_per_token=k_over_e * imbalance / pp,
        eager_prefill_s=eager_prefill_floor_s(model, eager_prefill_layer_us),
        graphed_step_tokens=float(graphed_step_tokens),
        prefill_routed_share=routed_share,
        expert_slice_scale=expert_slice_scale(model, lay.expert_ways, eff.prefill_half_tokens),
    )


def kv_token_bytes_total(setup: Setup) -> float:
    """K+V bytes one token of context occupies across the whole replica (heads replicated under TP)."""
    tp = setup.layout.tp
    copies = max(1, round(tp / kv_shards(setup.model, tp)))
    return kv_elements_per_token(setup.model) * setup.kv_bytes_per_element * copies


def kv_capacity_tokens(
    setup: Setup, *, memory_fraction: float, memory_of: str, runtime_overhead_gb: float
) -> float:
    """Tokens of KV cache the engine can hold on one replica.

    "total": `fraction * device_memory - weights - runtime` (vLLM `gpu_memory_utilization`);
    "free": `fraction * (device_memory - weights - runtime)` (TensorRT-LLM, LMDeploy).
    """
    devices = setup.layout.devices
    memory = setup.hardware.memory_gb * GB * devices
    held = held_weight_bytes(setup.weights, setup.layout) + runtime_overhead_gb * GB * devices
    free = memory * memory_fraction - held if memory_of == "total" else (memory - held) * memory_fraction
    per_token = kv_token_bytes_total(setup)
    if per_token <= 0:
        return float("inf") if free > 0 else 0.0
    return max(0.0, free / per_token)
