"""The roofline: which resource bounds a step, decode step time, prefill, the band.

The batch at which decode turns compute-bound is `costmodel.curves.compute_bound_batch` (one rule for
the CLI, the web and the plots).

docs/PHYSICS.md sections 3-5. Pure functions over frozen values.

    t_step = max(t_stream, flops_step / (eta_c * peak)) + n_layers * tau_layer + tau_step
    t_stream = W / (eta_bw * BW) + KV / (eta_kv * BW) + e_ecc * (W + KV) / BW + s_dec * S(c) / BW
               + k_alu * N_weights / peak_fp32

with eta_bw, eta_kv and s_dec already scaled by the Little's-law share min(1, N_units * b_unit / BW)
(`Efficiency.for_hardware`, applied once where an estimate settles its efficiency).

The ceiling is the same with eta = 1, no overheads and no KV traffic: BW / W_read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from tokometer.costmodel.memory import kv_read_bytes, kv_write_bytes, weight_bytes_read
from tokometer.domain.specs import (
    ComputeDtype,
    Efficiency,
    HardwareSpec,
    Interval,
    ModelSpec,
    ParamGroups,
    _Plain,
)
from tokometer.domain.units import GB, NS, TFLOP, US

Z_80 = 1.2816  # two-sided 80 % interval of a normal in log space: Phi^-1(0.9)
BAND_COVERAGE = 0.8  # the share of measurements the band is meant to hold

Bound = Literal["memory", "compute", "overhead"]


def bound(memory_time_s: float, compute_time_s: float, overhead_time_s: float) -> Bound:
    """Which resource sets a step's time: fixed overheads when they exceed the roof, else the larger
    of reading memory and computing (a tie counts as memory). The one rule for every layout."""
    if overhead_time_s > max(memory_time_s, compute_time_s):
        return "overhead"
    return "memory" if memory_time_s >= compute_time_s else "compute"


# the dtype of a peak that is the FP32 vector (shader) rate of a GEMM run without the matrix engines
# (`usecases.resolve.vector_peak`): weights dequantized to FP32 and multiplied by a plain FP32 GEMM
VECTOR_DTYPE = "fp32-vector"


@dataclass(frozen=True, slots=True)
class Peak(_Plain):
    """The compute peak used, and which datasheet figure it came from."""

    tflops: float | None
    dtype: str | None
    note: str | None = None
    derived: bool = False  # computed from units x clock x FLOPs/cycle: a wider band applies


def compute_peak(
    hardware: HardwareSpec,
    dtype: ComputeDtype,
    fp16_accumulate: bool = False,
    wgmma: bool = True,
    int32_flop_per_op: float | None = None,
) -> Peak:
    """Dense peak for the format's compute dtype; falls back to fp16 then fp32, saying so.

    Engines that accumulate fp16 GEMMs in fp16 (llama.cpp) get the FP16-accumulate tensor rate
    where the datasheet gives one (GeForce cards: twice the FP32-accumulate figure). Engines whose
    kernels do not issue Hopper's wgmma (`wgmma=False`, llama.cpp) are held to the device's
    `fp16_mma_sync_tflops` (twice that for 8-bit types), the rate the Ampere-era mma.sync path
    reaches (`mma_sync_cap`), and, where the engine's fit found one (`Efficiency.int32_flop_per_op`),
    to that many FLOPs per INT32 operation of the device (`int32_cap`). A peak the catalog derived
    rather than read from a datasheet, or could not check against one, is flagged and says which.
    """
    peak = _datasheet_peak(hardware, dtype, fp16_accumulate)
    if not wgmma:
        peak = int32_cap(hardware, mma_sync_cap(hardware, peak), int32_flop_per_op)
    if peak.tflops and hardware.compute_peak_derived:
        how = (
            "not verified against a vendor datasheet"
            if hardware.compute_peak_unverified
            else "derived from units x clock x FLOPs per cycle, not a datasheet figure"
        )
        note = f"{hardware.name}: compute peak {how}; prefill is less certain"
        return Peak(peak.tflops, peak.dtype, f"{peak.note}; {note}" if peak.note else note, derived=True)
    return peak


def int32_rate_tflops(hardware: HardwareSpec, peak: Peak) -> float:
    """The device's INT32 rate in tera-ops (x2 for 8-bit types, whose MMA does twice the FLOPs per operand
    unpacked) that `int32_cap` multiplies; 0 where the catalog gives none or the peak is no tensor peak."""
    rate = hardware.int32_tops
    if not rate or not peak.tflops or peak.dtype is None or peak.dtype.startswith("fp32"):
        return 0.0  # the vector-ALU GEMM (`VECTOR_DTYPE`) and fp32 peaks unpack on the same lanes they multiply on
    return rate * (2.0 if peak.dtype.startswith(("fp8", "int8")) else 1.0)


def int32_bound_tflops(peak_tflops: float, rate_tflops: float, flop_per_op: float | None) -> float:
    """min(peak, K x rate): the one rule `int32_cap` prices an estimate with and the fit rescales its rows by
    (`fitting.features.int32_scale`); the peak unchanged without a K or an INT32 rate."""
    if not flop_per_op or not rate_tflops:
        return peak_tflops
    return min(peak_tflops, flop_per_op * rate_tflops)


def int32_cap(hardware: HardwareSpec, peak: Peak, flop_per_op: float | None) -> Peak:
    """min(peak, K x `int32_rate_tflops`), K = `flop_per_op`: llama.cpp's quantized GEMM unpacks each weight
    tile with integer shifts, masks and scale products before its MMA, on the SM's 64 INT32 lanes, so where
    the tensor rate is 15-16x the INT32 rate (A100, Hopper through mma.sync, Orin) the INT32 pipe can bound it
    (docs/PHYSICS.md section 4, "the INT32 bound"). K is the FP16 tensor FLOPs the kernels get per INT32
    operation, fitted on the engine's prompt rows (`fitting.calibration.fit_int32`); None (no fit) and devices
    without `int32_tops` in the catalog are unchanged."""
    tflops = peak.tflops or 0.0
    bound = int32_bound_tflops(tflops, int32_rate_tflops(hardware, peak), flop_per_op)
    if bound >= tflops:
        return peak
    return Peak(bound, f"{peak.dtype}-int32", peak.note, peak.derived)


def mma_sync_cap(hardware: HardwareSpec, peak: Peak) -> Peak:
    """min(peak, fp16_mma_sync_tflops x (2 for 8-bit types)): Hopper's datasheet tensor peak is reached
    only through the asynchronous warpgroup wgmma instruction; mma.sync (the Ampere-era instruction
    that llama.cpp's own CUDA kernels issue) runs at about half of it, the Ampere per-SM rate
    (Luo et al. 2025, "Dissecting the NVIDIA Hopper Architecture through Microbenchmarking",
    arXiv:2501.12084). llama.cpp's measured prefill on an H100 PCIe is 1.36-1.40x an A100 PCIe's
    (XD-L3, cuBLAS and MMQ paths alike), where the datasheets differ 2.4x and the mma.sync rates 1.2x.
    Devices without the figure, and fp32 peaks, are unchanged."""
    cap = hardware.fp16_mma_sync_tflops
    if not cap or not peak.tflops or peak.dtype in (None, "fp32"):
        return peak
    if peak.dtype in ("fp8", "int8"):
        cap *= 2.0
    if peak.tflops <= cap:
        return peak
    return Peak(cap, f"{peak.dtype}-mma.sync", peak.note, peak.derived)


def _datasheet_peak(hardware: HardwareSpec, dtype: ComputeDtype, fp16_accumulate: bool) -> Peak:
    value = hardware.peak_tflops(dtype)
    if value and dtype == "fp16" and fp16_accumulate and hardware.fp16_acc16_tflops:
        return Peak(hardware.fp16_acc16_tflops, "fp16-acc16")
    if value:
        return Peak(value, dtype)
    if hardware.vendor == "nvidia" and (hardware.launch_year or 0) >= 2018 and not hardware.fp16_tflops:
        # tensor-core GPUs: the fp32 SIMD rate would understate matmuls several-fold
        return Peak(
            None,
            None,
            f"{hardware.name} has no fp16 tensor peak in the catalog; compute time not modelled "
            "(add fp16_tflops in a user catalog entry)",
        )
    fallback: ComputeDtype
    for fallback in ("fp16", "fp32"):
        value = hardware.peak_tflops(fallback)
        if value:
            if fallback == "fp16" and fp16_accumulate and hardware.fp16_acc16_tflops:
                value = hardware.fp16_acc16_tflops
            note = f"{hardware.name} has no {dtype} peak in its datasheet; {fallback} peak used"
            return Peak(value, fallback, note if fallback != dtype else None)
    return Peak(None, None, f"{hardware.name} has no published compute peak; compute time not modelled")


def attention_flops_per_token(model: ModelSpec, depth_tokens: float) -> float:
    """Scores and mixing for one decoded token at depth c: 4 * n_heads * head_dim * c per layer (MLA:
    its absorbed decode form over the latent, `AttentionGroup.decode_dim`)."""
    return sum(
        4.0 * g.reading_layers * g.decode_dim * g.cached_tokens(depth_tokens) for g in model.attention
    )


def decode_score_elements(model: ModelSpec, depth_tokens: float) -> float:
    """Attention scores one decoded token produces at depth c: sum over layers of n_heads * min(c, window).

    An unfused decode attention (llama.cpp without flash attention) computes them per query head:
    it re-reads K and V for each head of a GQA group unless a cache serves them, and writes and reads
    the fp32 scores for the softmax. Times `Efficiency.decode_score_bytes` (fitted) over the bandwidth,
    it is the cost of depth beyond the KV bytes themselves (docs/PHYSICS.md section 4).
    """
    return sum(g.reading_layers * (g.attention_dim / max(1, model.head_dim)) * g.cached_tokens(depth_tokens) for g in model.attention)


def _causal_pairs(window_tokens: int | None, prompt_tokens: float) -> float:
    """Query-key pairs a causal prompt of T tokens scores: T^2 / 2, or T w - w^2 / 2 under a window w."""
    t, w = prompt_tokens, window_tokens
    return t * t / 2.0 if w is None or t <= w else t * w - w * w / 2.0


def prefill_attention_flops(model: ModelSpec, prompt_tokens: float) -> float:
    """Causal prefill of T tokens: about 2 * n_heads * head_dim * T^2 per layer (window-capped)."""
    return sum(
        4.0 * g.reading_layers * g.attention_dim * _causal_pairs(g.window_tokens, prompt_tokens)
        for g in model.attention
        if g.kind != "linear"
    )


def prefill_score_elements(model: ModelSpec, prompt_tokens: float) -> float:
    """Attention scores a causal prefill produces: sum over layers of n_heads * pairs (T^2 / 2 each).

    An unfused attention (llama.cpp without flash attention, eager transformers) writes this score
    matrix to memory, reads it for the softmax, writes it back and reads it again for the value
    product; FlashAttention keeps it on chip. Multiplied by `Efficiency.attention_score_bytes`
    (bytes moved per score, 0 when fused) and divided by the bandwidth, it is the time the
    unfused kernels spend in memory (docs/PHYSICS.md section 5).
    """
    head_dim = max(1, model.head_dim)
    return sum(
        g.reading_layers * (g.attention_dim / head_dim) * _causal_pairs(g.window_tokens, prompt_tokens)
        for g in model.attention
        if g.kind != "linear"
    )


@dataclass(frozen=True, slots=True)
class Step(_Plain):
    """One decode step for `batch` streams at `depth_tokens`: bytes, FLOPs, times, bound."""

    batch: int
    depth_tokens: float
    weight_bytes: float
    kv_read_bytes: float  # all streams
    kv_write_bytes: float  # all streams
    flops: float
    memory_time_s: float
    compute_time_s: float
    overhead_time_s: float
    time_s: float
    ceiling_time_s: float
    bound: Bound
    alu_time_s: float = 0.0  # shader work of the matvec not hidden behind memory, inside memory_time_s
    score_time_s: float = 0.0  # unfused attention's per-score traffic, inside memory_time_s

    @property
    def bytes(self) -> float:
        return self.weight_bytes + self.kv_read_bytes + self.kv_write_bytes


def alu_peak_tflops(hardware: HardwareSpec) -> float | None:
    """The rate a single-stream matvec's per-weight work runs at (TFLOP/s): the shader fp32 peak on a GPU
    (dequantize, then fp32 FMA; tensor cores sit idle at batch 1); on a CPU the catalog's reduced-
    precision dot-product peak, since llama.cpp's CPU kernels multiply quantized weights by 8-bit
    activations with integer/bf16 dot-product instructions (VNNI, AVX512_BF16, NEON dotprod)."""
    if hardware.kind == "cpu":
        return hardware.fp16_tflops or hardware.fp32_tflops
    return hardware.fp32_tflops or hardware.fp16_tflops


def unhidden_alu_time_s(model: ModelSpec, hardware: HardwareSpec, efficiency: Efficiency) -> float:
    """t_alu = k_alu * N_weights / peak_fp32 (s): the matvec's shader work that memory does not hide.

    A single-stream matvec dequantizes and multiplies every weight it reads on the shader ALUs (fp32
    FMA rate, not the tensor cores); where ALU throughput per byte of bandwidth is low (Apple GPUs,
    A100's 19.5 TFLOPS against 2 TB/s) that work does not fully overlap the stream. k_alu is fitted
    per engine/backend/class (docs/PHYSICS.md section 4); once per step (weights are dequantized once).
    """
    peak = alu_peak_tflops(hardware)
    if not efficiency.decode_alu_flops_per_weight or not peak:
        return 0.0
    return efficiency.decode_alu_flops_per_weight * model.matmul_params_per_token() / (peak * TFLOP)


def host_sampling_time_s(model: ModelSpec, efficiency: Efficiency) -> float:
    """t_samp = c_samp * V (s per sampled token): the host work a server engine does for each token it emits.

    llama-server, Ollama and LM Studio copy the token's logits row to the host and run the sampler chain
    (penalties, top-k/top-p/min-p, softmax) on the CPU over all V vocabulary entries while the GPU
    waits; llama-bench decodes without sampling, so the fitted tau_step never saw it. c_samp (ns per
    vocabulary entry) is the engine's documented constant (engines.toml, docs/PHYSICS.md section 4).
    """
    return efficiency.host_sampling_ns_per_vocab * model.vocab_size * NS


def recurrent_state_bytes(model: ModelSpec, efficiency: Efficiency, kv_bytes_per_element: float) -> float:
    """State bytes one stream's decode step moves beyond one read at the KV dtype (what `kv_read_bytes` counts).

    A recurrent layer (Gated DeltaNet, Mamba) keeps a fixed state per sequence, `S` elements; the delta rule
    reads it, decays and updates it, and writes it back every token. b_state (`Efficiency.recurrent_state_bytes`,
    the engine's documented bytes per state element per step) prices every pass its kernels make:
    `n_rec * S * (b_state - b_kv)`, 0 where the engine does not document one.
    """
    if efficiency.recurrent_state_bytes is None:
        return 0.0
    return model.recurrent_state_elements * (efficiency.recurrent_state_bytes - kv_bytes_per_element)


def decode_layers(model: ModelSpec, efficiency: Efficiency) -> float:
    """Layers a decode step pays tau_layer for: each recurrent layer counts 1 + r_rec (its extra kernels)."""
    return model.n_layers + efficiency.recurrent_layer_extra * model.recurrent_layers


def expert_dispatch_time_s(model: ModelSpec, efficiency: Efficiency, tokens: float = 1.0) -> float:
    """t_exp = tau_expert * L_moe * E * (share of experts `tokens` touch) (s): k * L_moe * tau_expert at batch 1 (L_moe: the
    layers that hold routed experts, `ModelSpec.moe_layer_count`).

    A routed expert's slice is small (Qwen3.5-35B-A3B: 3 x 2048 x 512 weights, about 1.8 MB at 4.5
    bits), so each expert matvec a step runs is a short kernel (or a short phase of an indexed one)
    that pays its own ramp: the router's index read, the gather of its rows, and a memory pipeline
    that never fills before the slice is done. That fixed cost per expert is not in tau_layer (fitted on
    dense layers) nor in the stream term; tau_expert is fitted per engine/backend/class with prior 0
    (docs/PHYSICS.md section 4, "Routed-expert dispatch"). An engine whose MoE projections are one grouped
    kernel over every touched expert (`Efficiency.grouped_experts`: vLLM/SGLang fused_moe, TensorRT-LLM's
    grouped GEMM) runs those ramps side by side on different SMs: a decode step of any batch pays a batch-1
    step's, per MoE layer, and so does a prefill `chunk`: its experts' small GEMMs (c k / E tokens each) are
    charged where they cost, in the matmul time at each expert's own token count (`prefill_matmul_time`), as the
    serving simulator's step charges them (`StepCost.prefill_gemm_scale`). Charging a chunk every touched
    expert's tau_expert read DeepSeek-R1 FP8 on 8 H200 under vLLM at 457 ms TTFT for 512 tokens (370 ms of it
    24.7 us x 256 experts x 58 layers) where the simulator read 40 ms and the published runs 120-310 ms.
    An engine that runs experts one by one (llama.cpp, MLX) pays every touched expert's, decode or prefill.
    """
    if not efficiency.expert_overhead_us:
        return 0.0
    grouped = efficiency.grouped_experts
    return efficiency.expert_overhead_us * model.expert_slots(1.0 if grouped else tokens) * US


def decode_step(
    model: ModelSpec,
    weights: ParamGroups,
    hardware: HardwareSpec,
    efficiency: Efficiency,
    *,
    batch: int = 1,
    depth_tokens: float = 0.0,
    kv_bytes_per_element: float = 2.0,
    peak: Peak | None = None,
    bandwidth_gb_per_s: float | None = None,
    quantized: bool = False,
    tokens_per_stream: int = 1,
) -> Step:
    """Time of one decode step (docs/PHYSICS.md section 4). `quantized`: block-quantized weight kernels.

    `tokens_per_stream` > 1 is a speculative verification pass (docs/PHYSICS.md section 7): each stream
    feeds k+1 tokens through the weights in one step, reads its KV cache once, writes k+1 entries.
    """
    bw = (bandwidth_gb_per_s or hardware.memory_bandwidth_gb_per_s) * GB
    tokens = batch * tokens_per_stream
    w_read = weight_bytes_read(model, weights, tokens)
    kv_read = batch * (
        kv_read_bytes(model, depth_tokens, kv_bytes_per_element)
        + recurrent_state_bytes(model, efficiency, kv_bytes_per_element)
    )
    kv_write = tokens * kv_write_bytes(model, kv_bytes_per_element)
    flops = tokens * (
        2.0 * model.matmul_params_per_token() + attention_flops_per_token(model, depth_tokens)
    )
    peak_flops = (peak.tflops * TFLOP) if peak and peak.tflops else None
    alu = unhidden_alu_time_s(model, hardware, efficiency)
    score = batch * efficiency.decode_score_bytes * decode_score_elements(model, depth_tokens) / bw
    memory_time = (
        w_read / (efficiency.bandwidth_fraction_for(quantized) * bw)
        + (kv_read + kv_write) / (efficiency.kv_fraction_for(quantized) * bw)
        + efficiency.ecc_overhead_for(hardware) * (w_read + kv_read + kv_write) / bw
        + score
        + alu
    )
    compute_time = flops / (efficiency.decode_compute_fraction * peak_flops) if peak_flops else 0.0
    overhead = (
        decode_layers(model, efficiency) * (efficiency.layer_overhead_us + efficiency.launch_layer_us) * US
        + efficiency.step_overhead_us * US
        + tokens * host_sampling_time_s(model, efficiency)
        + expert_dispatch_time_s(model, efficiency, tokens)
    )
    ceiling = max(w_read / bw, flops / peak_flops if peak_flops else 0.0)
    roof = max(memory_time, compute_time)
    return Step(
        batch=batch,
        depth_tokens=depth_tokens,
        weight_bytes=w_read,
        kv_read_bytes=kv_read,
        kv_write_bytes=kv_write,
        flops=flops,
        memory_time_s=memory_time,
        compute_time_s=compute_time,
        overhead_time_s=overhead,
        time_s=roof + overhead,
        ceiling_time_s=ceiling,
        bound=bound(memory_time, compute_time, overhead),
        alu_time_s=alu,
        score_time_s=score,
    )


PrefillBinding = Literal["compute", "memory", "transfer", "communication", "overhead"]


@dataclass(frozen=True, slots=True)
class Prefill(_Plain):
    prompt_tokens: int
    flops: float
    matmul_flops: float
    attention_flops: float
    n_chunks: int
    compute_time_s: float
    memory_time_s: float
    overhead_time_s: float
    time_s: float
    tok_s: float
    efficiency: float
    bound: Literal["compute", "memory"]
    score_bytes: float = 0.0  # unfused attention's score-matrix traffic (0 under FlashAttention)
    score_time_s: float = 0.0  # that traffic at the datasheet bandwidth, inside compute_time_s
    transfer_time_s: float = 0.0  # offloaded weights copied over PCIe once per chunk, inside memory_time_s
    comm_time_s: float = 0.0  # tensor/pipeline parallel all-reduces and hops, inside overhead_time_s
    routed_time_s: float = 0.0  # the routed experts' GEMMs on one device, inside compute_time_s (MoE)

    @property
    def binding(self) -> PrefillBinding:
        """The term that takes the most of `time_s`, which the explanation words.

        `time_s = max(compute, reads) + transfer + fixed costs + communication` (the transfer rides in
        `memory_time_s`, the communication in `overhead_time_s`, `costmodel/layout.py`): `bound` says
        which side of the device's roofline the prefill sits on; `binding` which of these terms is
        largest, so a prefill that waits on PCIe or on all-reduces is not called compute- or
        memory-bound by the numbers of the compute side.
        """
        terms: dict[PrefillBinding, float] = {
            "compute": self.compute_time_s,
            "memory": self.memory_time_s - self.transfer_time_s,
            "transfer": self.transfer_time_s,
            "communication": self.comm_time_s,
            "overhead": self.overhead_time_s - self.comm_time_s,
        }
        return max(terms, key=lambda name: terms[name])


def prefill(
    model: ModelSpec,
    weights: ParamGroups,
    hardware: HardwareSpec,
    efficiency: Efficiency,
    prompt_tokens: int,
    peak: Peak,
    quantized: bool = False,
) -> Prefill | None:
    """Prompt processing of T tokens (docs/PHYSICS.md section 5), in seconds:

        t_prefill(T) = max(matmul / (eta(T) peak) + attention / (eta_att peak) + S(T) b_s / BW,
                           chunks W_read / BW) + chunks (n_layers tau_layer + tau_step + t_exp(c))
        eta(T) = eta_max * c / (c + T_half),   c = min(T, chunk): the tokens one matmul sees

    matmul = 2 P_active T FLOPs; attention = 4 n_heads head_dim T^2 / 2 FLOPs per layer; S(T) the
    attention scores (`prefill_score_elements`), t_exp(c) the routed experts a chunk of c tokens runs
    (`expert_dispatch_time_s`: nearly all E per MoE layer once c is in the hundreds), b_s the bytes an unfused kernel moves per score
    (`Efficiency.attention_score_bytes`, 0 for FlashAttention). Both attention terms grow with T^2,
    so tokens/s falls on long prompts; eta(T) makes short prompts (and small chunks) leave the matmul
    units idle.
    """
    if prompt_tokens <= 0 or not peak.tflops:
        return None
    t = float(prompt_tokens)
    matmul_flops = 2.0 * model.matmul_params_per_token() * t
    attention_flops = prefill_attention_flops(model, t)
    flops = matmul_flops + attention_flops
    chunk = max(1, efficiency.prefill_chunk_tokens)
    per_chunk = min(t, chunk)
    # block-quantized weights dequantized to FP32 for a vector-ALU GEMM run the plain GEMM kernel (its eta_max)
    gemm_quantized = quantized and peak.dtype != VECTOR_DTYPE
    eta = efficiency.prefill_max_for(gemm_quantized) * per_chunk / (per_chunk + efficiency.prefill_half_tokens)
    eta_attention = efficiency.prefill_attention_fraction or efficiency.prefill_efficiency_max
    datasheet_bw = hardware.memory_bandwidth_gb_per_s * GB
    score_bytes = efficiency.attention_score_bytes * prefill_score_elements(model, t)
    score_time = score_bytes / datasheet_bw
    eta_max, routed_share = efficiency.prefill_max_for(gemm_quantized), routed_matmul_share(model)
    matmul_time = prefill_matmul_time(
        matmul_flops, routed_share, expert_token_share(model), per_chunk, eta_max, efficiency.prefill_half_tokens,
    )
    routed_time = prefill_matmul_time(
        matmul_flops * routed_share, 1.0, expert_token_share(model), per_chunk, eta_max, efficiency.prefill_half_tokens,
    ) if routed_share else 0.0
    compute_time = (matmul_time + attention_flops / eta_attention) / (peak.tflops * TFLOP) + score_time
    n_chunks = math.ceil(t / chunk)
    bw = datasheet_bw * efficiency.bandwidth_fraction_for(quantized)
    memory_time = n_chunks * weight_bytes_read(model, weights, per_chunk) / bw
    overhead = n_chunks * (
        (model.n_layers * efficiency.layer_overhead_us + efficiency.step_overhead_us) * US
        + expert_dispatch_time_s(model, efficiency, per_chunk)
    )
    time_s = max(compute_time, memory_time) + overhead
    return Prefill(
        prompt_tokens=prompt_tokens,
        flops=flops,
        matmul_flops=matmul_flops,
        attention_flops=attention_flops,
        n_chunks=n_chunks,
        compute_time_s=compute_time,
        memory_time_s=memory_time,
        overhead_time_s=overhead,
        time_s=time_s,
        tok_s=t / time_s,
        efficiency=matmul_flops / matmul_time if matmul_time > 0 else eta,  # the realised share, MoE experts included
        bound="compute" if compute_time >= memory_time else "memory",
        score_bytes=score_bytes,
        score_time_s=score_time,
        routed_time_s=routed_time / (peak.tflops * TFLOP),
    )


def routed_matmul_share(model: ModelSpec) -> float:
    """Share of a token's matmul FLOPs spent in its routed experts (0 for a dense model)."""
    if not model.is_moe:
        return 0.0
    per_token = model.matmul_params_per_token()
    routed = model.params.routed_experts * model.n_experts_per_token / model.n_experts
    return routed / per_token if per_token > 0 else 0.0


def expert_token_share(model: ModelSpec) -> float:
    """k / E: the share of a chunk's tokens one routed expert multiplies (uniform routing); 1 when dense."""
    return model.n_experts_per_token / model.n_experts if model.is_moe else 1.0


def expert_slice_scale(model: ModelSpec, ways: int, half: float) -> float:
    """How much slower a prompt's routed-expert GEMMs run when every expert is split `ways` ways along its
    intermediate dimension (tensor-parallel experts: `tp * dp / ep` in `costmodel.layout.Layout`; 1: whole).

    Each GPU then multiplies its tokens by a slice of `I / ways` columns (gate/up) and rows (down), with
    I = routed parameters / (L_moe * E * 3 * hidden). A matrix unit's tile runs short along that dimension as
    it runs short along the tokens (`prefill_matmul_time`: `c / (c + T_half)`), so the slice realises
    `w / (w + T_half)` of what the whole expert's `I / (I + T_half)` does, with the same half-constant
    (no published kernel measurement separates the column curve). DeepSeek-V3 (I = 2,048) over 8 GPUs
    at T_half = 256: 256-wide slices, 1.78x the whole expert's time. 1 for a dense model or whole experts.
    """
    if not model.is_moe or ways <= 1 or not model.n_experts or not model.hidden_size:
        return 1.0
    width = model.params.routed_experts / (model.moe_layer_count * model.n_experts * 3.0 * model.hidden_size)
    if width <= 0:
        return 1.0
    sliced = width / ways
    return (width / (width + half)) / (sliced / (sliced + half))


def prefill_matmul_time(
    matmul_flops: float, routed_share: float, token_share: float, chunk_tokens: float, eta_max: float, half_tokens: float
) -> float:
    """Matmul FLOPs over their realised share of the peak, summed per weight matrix (docs/PHYSICS.md section 5).

    A matrix multiplied by c tokens at once runs at eta_max * c / (c + T_half): its weight tile is
    loaded once per c columns, so few columns leave the matrix units waiting on the load. A dense
    layer sees the chunk's c tokens; a routed expert only its share of them, c * k / E (8 of 128
    experts at a 512-token chunk: 32 tokens each), so an MoE model's expert matmuls run far below
    the dense ones at the same prompt:

        matmul / eta_max + (T_half / eta_max) * matmul * ((1 - r) / c + r / (c k / E)),  r = routed share

    Returns FLOP-seconds per peak-FLOP/s (divide by the peak); equal to matmul / eta(c) for a dense model.
    """
    c = max(1.0, chunk_tokens)
    per_token = (1.0 - routed_share) / c + routed_share / max(1e-9, c * token_share)
    return matmul_flops / eta_max + half_tokens / eta_max * matmul_flops * per_token


DERIVED_PEAK_LOG_SD = 0.25  # extra log spread of a peak computed from units x clock x FLOPs/cycle


def prefill_log_sd(efficiency: Efficiency, peak: Peak) -> float:
    """Log spread of the prefill band: the fit's, widened in quadrature when the peak is derived.

    A derived peak (`compute_peak_derived`) can be off by a clock or an issue-rate assumption
    (about +-30 % at 80 %: exp(1.28 * 0.25) = 1.38), on top of the engine's own spread.
    """
    sd = efficiency.prefill_residual_log_sd
    return math.hypot(sd, DERIVED_PEAK_LOG_SD) if peak.derived else sd


def interval(value: float, log_sd: float, coverage_z: float = Z_80) -> Interval:
    """An 80 % band around `value` from the residual spread in log space: `value * exp(+-z sd)`."""
    factor = math.exp(coverage_z * log_sd)
    return Interval(low=value / factor, high=value * factor, coverage=BAND_COVERAGE)
