"""Frozen value types shared by every layer: hardware, quantization formats, models, engines, workloads.

They carry units in their field names and do no I/O. `to_dict()` gives the one JSON shape
used by `--json`, the web API and the run store.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from tokometer.domain.units import BITS_PER_BYTE

APPLE_ALUS_PER_CORE: Final = 128  # fp32 ALUs per Apple GPU core (M1-M5), as the catalog's derived peaks count them
NVIDIA_SOC_FP32_LANES_PER_SM: Final = 128  # FP32 lanes per SM on NVIDIA SoC GPUs (Orin GA10B, GB10, Thor)
REFERENCE_UNIT_CLOCK_GHZ: Final = 1.278  # M1's GPU clock: Apple's b_unit is GB/s per core at this clock

ComputeDtype = Literal["fp32", "fp16", "fp8", "int8", "fp4"]
AttentionKind = Literal["full", "sliding", "mla", "linear"]
HardwareKind = Literal["gpu", "apu", "soc", "cpu"]
HARDWARE_KINDS: tuple[HardwareKind, ...] = ("gpu", "apu", "soc", "cpu")
Segment = Literal["desktop", "laptop", "workstation", "datacenter", "soc", "server"]
SEGMENTS: tuple[Segment, ...] = ("desktop", "laptop", "workstation", "datacenter", "soc", "server")
QuantUsage = Literal["weights", "kv", "both"]
# plain floats, block-quantized (ggml), mixes of blocks, grouped (GPTQ/AWQ); and the two formats a user
# makes up: a bits-per-weight figure (`--bits`) and a file size (`--weights-gb`)
QuantKind = Literal["plain", "block", "mix", "group", "user-bits", "file-size"]
BARE_ARCHITECTURE: Final = "bare"  # a model given as bare numbers (`--params`), not a known architecture
Backend = Literal["cuda", "rocm", "metal", "vulkan", "sycl", "cpu"]
BACKENDS: tuple[Backend, ...] = ("cuda", "rocm", "metal", "vulkan", "sycl", "cpu")  # the one backend list


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class _Plain:
    def to_dict(self) -> dict[str, Any]:
        out = _plain(self)
        assert isinstance(out, dict)
        return out


@dataclass(frozen=True, slots=True)
class HardwareSpec(_Plain):
    """One accelerator or memory system, with datasheet peaks (dense, no sparsity)."""

    id: str
    name: str
    vendor: str
    kind: HardwareKind
    segment: Segment
    memory_gb: float
    memory_bandwidth_gb_per_s: float
    launch_year: int | None
    source: str
    backend: str = "cuda"
    memory_type: str | None = None
    fp32_tflops: float | None = None
    fp16_tflops: float | None = None  # dense tensor fp16/bf16, FP32 accumulate where vendors distinguish
    fp16_acc16_tflops: float | None = None  # dense tensor fp16 with FP16 accumulate (GeForce: twice the above)
    fp16_mma_sync_tflops: float | None = None  # dense fp16 through mma.sync where the datasheet peak needs wgmma (Hopper)
    # the INT32 pipe's rate (64 INT32 lanes per SM from Volta to Hopper and Orin), which bounds llama.cpp's quantized
    # GEMMs where the tensor rate is far above it (`roofline.int32_cap`)
    int32_tops: float | None = None
    fp8_tflops: float | None = None
    int8_tops: float | None = None
    fp4_tflops: float | None = None
    pcie_gen: int | None = None
    pcie_lanes: int | None = None
    nvlink_gb_per_s: float | None = None
    tdp_w: float | None = None
    aliases: tuple[str, ...] = ()
    calibration_ids: tuple[str, ...] = ()
    spec_source: str | None = None
    notes: str | None = None
    compute_source: str | None = None  # where the compute peaks come from
    compute_peak_derived: bool = False  # peaks computed (units x clock x FLOPs/cycle), not a datasheet figure
    compute_units: int | None = None  # SMs (NVIDIA), CUs (AMD), Xe cores (Intel), GPU cores (Apple): memory-request issuers
    compute_units_source: str | None = None
    # serving cost (issue 11): on-demand cloud list price per device-hour, its source and date
    price_per_hour_usd: float | None = None
    price_source: str | None = None
    price_date: str | None = None
    gpu_memory_limit_gb: float | None = None  # what the GPU may use when the user says so (Apple: iogpu.wired_limit_mb)
    architecture: str | None = None  # GPU architecture family (ARCH_CLASSES), where it sets the fit's class
    architecture_source: str | None = None
    family: str | None = None  # GPU architecture family (`domain.families`): a level of the fit below the class
    # False: the device as a build without a matrix-engine GEMM path sees it, every GEMM on the vector ALUs at
    # fp32_tflops (`usecases.resolve.without_matrix_engines`: a SYCL build without GGML_SYCL_F16)
    matrix_gemm: bool = True
    # an APU's CPU cores (`catalog.cpu_side`): the peaks a `--backend cpu` run is read against
    # (`usecases.resolve.cpu_view`); derived, at base clock where the vendor gives one
    cpu_cores: int | None = None
    cpu_fp32_tflops: float | None = None
    cpu_fp16_tflops: float | None = None
    cpu_int8_tops: float | None = None
    cpu_compute_source: str | None = None

    @property
    def compute_peak_unverified(self) -> bool:
        """A peak the catalog could not check against a vendor document: its `compute_source` says
        "not verified" (the hardware.toml header's convention); it is flagged `compute_peak_derived` too."""
        return "not verified" in (self.compute_source or "").lower()

    def peak_tflops(self, dtype: ComputeDtype) -> float | None:
        """Dense peak for `dtype`; None when the catalog gives none (`compute_peak_derived` says how sure)."""
        return {
            "fp32": self.fp32_tflops,
            "fp16": self.fp16_tflops,
            "fp8": self.fp8_tflops,
            "int8": self.int8_tops,
            "fp4": self.fp4_tflops,
        }[dtype]

    @property
    def unit_clock_ghz(self) -> float | None:
        """An Apple GPU core's clock (GHz), read back from the catalog's ALU peak: fp32 / (cores x 128 ALUs x 2).

        Apple publishes no clocks; the catalog derives each chip's peak as cores x 128 ALUs x 2 FLOPs
        (FMA) x clock, so the clock comes back out of it (1.278 GHz for M1, 1.398 M2, 1.38 M3, 1.47-1.578
        M4). The shader rate: fp32 where given (M5's fp16 counts its Neural Accelerators), else fp16,
        which Apple GPUs run at the fp32 rate. None elsewhere: other vendors' shader widths per unit
        differ by architecture, so their peaks do not give the clock.
        """
        alu_tflops = self.fp32_tflops or self.fp16_tflops
        if not self.compute_units or not alu_tflops:
            return None
        if self.vendor == "apple":
            return alu_tflops * 1e3 / (self.compute_units * APPLE_ALUS_PER_CORE * 2)
        if self.vendor == "nvidia" and self.kind == "apu" and self.fp32_tflops:
            return self.fp32_tflops * 1e3 / (self.compute_units * NVIDIA_SOC_FP32_LANES_PER_SM * 2)
        return None

    @property
    def stream_units(self) -> float | None:
        """Compute units as memory-request issuers: N, or on Apple N x clock / 1.278 GHz (M1's).

        An Apple GPU core's load path moves a fixed number of bytes per clock (32 B, P. Turner's
        metal-benchmarks), so the loads it turns over per second scale with its clock (docs/PHYSICS.md
        section 4); b_unit is then GB/s per core at M1's clock. None without a unit count.
        """
        if not self.compute_units:
            return None
        clock = self.unit_clock_ghz
        return self.compute_units * (clock / REFERENCE_UNIT_CLOCK_GHZ if clock else 1.0)

    @property
    def inline_ecc(self) -> bool:
        """GDDR on a datacenter card (A40, L40S...): ECC on by default, stored inline with the data.

        GDDR has no side-band ECC bits, so the check bytes share the bus with the data and cost
        bandwidth; HBM and LPDDR parts carry ECC out of band, consumer and workstation cards ship with
        it off (docs/PHYSICS.md section 4).
        """
        memory = (self.memory_type or "").lower()
        return self.segment == "datacenter" and "gddr" in memory

    @property
    def hardware_class(self) -> str:
        """Coarse class used to pick efficiency for hardware the fit never saw: by memory technology."""
        if self.kind == "cpu":
            return "cpu"
        if self.kind == "soc" or self.vendor == "apple":
            return "apple"
        if self.kind == "apu":
            return "apu"
        if self.segment == "laptop":
            return "laptop-gpu"
        if self.kind == "gpu" and self.architecture in ARCH_CLASSES:
            # Intel's discrete generations realise different shares of the same GDDR under one
            # backend (Alchemist ~30-40 % of bandwidth in llama.cpp SYCL decode, Battlemage ~65 %):
            # the family, not the memory system, is what a new card of theirs shares with the data
            return str(self.architecture)
        if self.memory_type and "hbm" in self.memory_type.lower():
            # HBM: very wide and deep; single-stream matvec kernels keep too few bytes in flight
            # to saturate it (Little's law), so engines realise a smaller share than on GDDR.
            return "hbm-gpu"
        return "gddr-gpu"


# GPU architecture families that are a hardware class of their own (docs/PHYSICS.md section 4):
# Intel Xe-HPG (Arc A-series, Alchemist) and Xe2 (Arc B-series, Battlemage), one backend (SYCL) apart
ARCH_CLASSES: Final = frozenset({"xe-hpg", "xe2"})


@dataclass(frozen=True, slots=True)
class QuantFormat(_Plain):
    """A weight or KV-cache number format with its real storage cost, scales included."""

    id: str
    name: str
    bits_per_weight: float
    usage: QuantUsage
    compute_dtype: ComputeDtype
    source: str
    kind: QuantKind = "plain"
    ggml_type: str | None = None
    block_size: int | None = None
    type_size_bytes: int | None = None
    aliases: tuple[str, ...] = ()
    notes: str | None = None
    # read classes a checkpoint in this format keeps at 16 bits (HF NVFP4/FP8/GPTQ/AWQ quantize only
    # the linear layers: the embedding table and the LM head stay bf16)
    unquantized: tuple[str, ...] = ()
    container: str | None = None  # the file format its checkpoints come in when not plain ("gguf" for K-quant mixes)

    @property
    def bytes_per_weight(self) -> float:
        return self.bits_per_weight / BITS_PER_BYTE

    @property
    def is_gguf(self) -> bool:
        """A GGUF tensor type (a ggml type) or a GGUF file mix (Q4_K_M...): what llama.cpp runs."""
        return self.ggml_type is not None or self.container == "gguf"


@dataclass(frozen=True, slots=True)
class AttentionGroup(_Plain):
    """Layers that share one attention type; what each stores per token of context.

    `kv_elements_per_token` counts K and V elements stored per token per layer
    (`2 * n_kv_heads * head_dim` for GQA, `kv_lora_rank + qk_rope_head_dim` for MLA).
    Sliding layers keep at most `window_tokens`; linear layers keep a constant state.
    `n_layers` store a cache; `shared_layers` more attend over those caches without storing their own
    (Gemma 3n/4 `num_kv_shared_layers`): they read the KV and compute scores like any layer, but write none.
    """

    kind: AttentionKind
    n_layers: int
    kv_elements_per_token: int
    window_tokens: int | None = None
    state_elements: int = 0
    attention_dim: int = 0  # n_heads * head_dim used by the score/mix FLOPs
    # the same for one decoded token when decode runs another form (0: `attention_dim`). MLA with absorbed
    # projections (DeepSeek's decode kernels, FlashMLA) scores each head's query against the cached latent
    # and rope key (kv_lora_rank + rope dims) and mixes the kv_lora_rank latent values: 2 n_heads
    # (kv_lora_rank + rope) + 2 n_heads kv_lora_rank FLOPs per context token, i.e. 4 x n_heads (2 kv_lora_rank + rope) / 2
    decode_attention_dim: int = 0
    shared_layers: int = 0

    @property
    def reading_layers(self) -> int:
        """Layers whose attention reads this group's cache each step: the storing ones plus the sharing ones."""
        return self.n_layers + self.shared_layers

    @property
    def decode_dim(self) -> int:
        """`attention_dim` of a decoded token's score and mix FLOPs (`decode_attention_dim` when set)."""
        return self.decode_attention_dim or self.attention_dim

    def cached_tokens(self, context_tokens: float) -> float:
        if self.kind == "linear":
            return 0.0
        if self.window_tokens is not None:
            return min(context_tokens, float(self.window_tokens))
        return context_tokens


@dataclass(frozen=True, slots=True)
class ParamGroups(_Plain):
    """Parameter (or byte) counts split by how decoding reads them (docs/PHYSICS.md section 1).

    - `embedding`: input table; decoding reads one row per token.
    - `lm_head`: output projection, read in full every step (0 when tied: the head reads `embedding`).
    - `dense`: every other weight a token passes through (attention, norms, dense MLPs,
      shared experts, routers), read in full every step.
    - `routed_experts`: all routed experts of all MoE layers; a step reads the touched ones.
    - `resident`: held in memory but never read while generating text (a vision tower and its
      projector, multi-token-prediction layers): it counts for memory, not for speed.
    """

    embedding: float
    lm_head: float
    dense: float
    routed_experts: float
    resident: float = 0.0

    @property
    def total(self) -> float:
        return self.embedding + self.lm_head + self.dense + self.routed_experts + self.resident

    @property
    def language_total(self) -> float:
        """Everything but the resident-only weights: what the language model itself holds."""
        return self.total - self.resident

    def scaled(self, factor: float) -> ParamGroups:
        return ParamGroups(
            self.embedding * factor,
            self.lm_head * factor,
            self.dense * factor,
            self.routed_experts * factor,
            self.resident * factor,
        )


@dataclass(frozen=True, slots=True)
class ModelSpec(_Plain):
    """A model's architecture reduced to what the cost model needs, plus provenance."""

    name: str
    architecture: str
    n_layers: int
    hidden_size: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    vocab_size: int
    params: ParamGroups
    attention: tuple[AttentionGroup, ...]
    tied_embeddings: bool = False
    n_experts: int = 0
    n_experts_per_token: int = 0
    max_context_tokens: int | None = None
    tokenizer: str | None = None
    default_quant: str | None = None
    source: str | None = None
    exact_weight_bytes: ParamGroups | None = None  # from a GGUF/safetensors file
    warnings: tuple[str, ...] = ()
    id: str | None = None
    mtp_layers: int = 0  # multi-token-prediction modules published beside the layers (not in `params`)
    moe_layers: int | None = None  # layers that hold routed experts (None: every layer of a MoE model)

    @property
    def total_params(self) -> float:
        return self.params.total

    @property
    def recurrent_layers(self) -> int:
        """Layers whose mixer is recurrent (Gated DeltaNet, Mamba): a fixed state per sequence, no KV cache."""
        return sum(g.n_layers for g in self.attention if g.kind == "linear")

    @property
    def recurrent_state_elements(self) -> int:
        """State elements one sequence keeps over all recurrent layers (read and written every decoded token)."""
        return sum(g.n_layers * g.state_elements for g in self.attention if g.kind == "linear")

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0 and self.params.routed_experts > 0

    @property
    def moe_layer_count(self) -> int:
        """Layers that run routed experts: the config's MoE layers (DeepSeek's first dense layers, Llama 4's
        interleaving, a hybrid's Mamba and attention layers excluded), every layer where it does not say."""
        return self.n_layers if self.moe_layers is None else self.moe_layers

    def expert_slots(self, batch: float = 1.0) -> float:
        """Routed experts a step runs, summed over the MoE layers: L_moe * E * (share touched by `batch`
        tokens); k * L_moe at batch 1."""
        return self.moe_layer_count * self.n_experts * self.expert_fraction_read(batch) if self.is_moe else 0.0

    def expert_fraction_read(self, batch: float) -> float:
        """Share of routed-expert weights touched by `batch` tokens: `1 - (1 - k/E)**B` (uniform routing)."""
        if not self.is_moe:
            return 0.0
        k_over_e = self.n_experts_per_token / self.n_experts
        return float(1.0 - (1.0 - k_over_e) ** batch)

    def active_params(self, batch: float = 1.0) -> float:
        """Parameters read per decode step at `batch` streams, embedding rows excluded."""
        head = self.params.lm_head if not self.tied_embeddings else self.params.embedding
        return head + self.params.dense + self.params.routed_experts * self.expert_fraction_read(batch)

    def matmul_params_per_token(self) -> float:
        """Parameters each token multiplies through (2 FLOPs each): its own k experts, not the union."""
        head = self.params.lm_head if not self.tied_embeddings else self.params.embedding
        routed = self.params.routed_experts * (
            self.n_experts_per_token / self.n_experts if self.is_moe else 0.0
        )
        return head + self.params.dense + routed


def stream_bandwidth_share(
    stream_units: float | None, bandwidth_gb_per_s: float, unit_bandwidth_gb_per_s: float | None
) -> float:
    """min(1, N_units * b_unit / BW): the share of the datasheet bandwidth a decode stream can keep busy.

    Little's law: a stream sustains (bytes in flight) / (memory latency); each compute unit keeps a
    bounded number of loads in flight, so N units reach at most N * b_unit GB/s (docs/PHYSICS.md
    section 4). `stream_units`: `HardwareSpec.stream_units` (Apple cores counted at their clock);
    `bandwidth_gb_per_s`: the datasheet BW; `unit_bandwidth_gb_per_s`: the fitted b_unit (GB/s per
    unit). 1 when the fit found no limit or the catalog gives no unit count. The one copy of the
    formula: prediction scales its eta's by it (`Efficiency.for_hardware`), the fit stretches each
    row's stream terms by its inverse (`fitting.calibration`).
    """
    if not unit_bandwidth_gb_per_s or not stream_units:
        return 1.0
    return min(1.0, stream_units * unit_bandwidth_gb_per_s / bandwidth_gb_per_s)


@dataclass(frozen=True, slots=True)
class Efficiency(_Plain):
    """How far an engine on a hardware class sits from the datasheet (docs/PHYSICS.md section 4)."""

    bandwidth_fraction: float  # eta_bw: achieved share of datasheet bandwidth (plain float weights)
    layer_overhead_us: float  # tau_layer
    step_overhead_us: float  # tau_step
    prefill_efficiency_max: float  # eta_prefill for long prompts
    prefill_half_tokens: float  # prompt length at which eta_prefill is half its max
    decode_compute_fraction: float = 0.5  # eta_c for batched decode matmuls
    prefill_chunk_tokens: int = 512  # weights are re-read once per prefill chunk
    source: str = "default"
    residual_log_sd: float = 0.2  # spread of log(measured/predicted), for intervals (the one default)
    quantized_bandwidth_fraction: float | None = None  # eta_bw for block-quantized weights (dequant kernels)
    prefill_attention_fraction: float | None = None  # eta for prefill attention FLOPs (default: matmul's max)
    prefill_residual_log_sd: float = 0.3  # spread of log(measured/predicted) prefill, for intervals
    quantized_prefill_efficiency_max: float | None = None  # eta_prefill max for block-quantized weights
    attention_score_bytes: float = 0.0  # bytes an unfused prefill attention moves per score (0: fused)
    prefill_batch_tokens: int | None = None  # tokens a pipeline keeps in flight per prefill batch (llama.cpp -b)
    kv_bandwidth_fraction: float | None = None  # eta_kv: share of datasheet bandwidth for KV-cache traffic (default eta_bw)
    decode_alu_flops_per_weight: float = 0.0  # k_alu: shader ops per weight a matvec step does not hide behind memory
    decode_score_bytes: float = 0.0  # s_dec: bytes an unfused decode attention moves per score (0: fused)
    inline_ecc_overhead: float = 0.0  # e_ecc: extra (W + KV) / BW time on cards whose ECC shares the GDDR bus
    unit_bandwidth_gb_per_s: float | None = None  # b_unit: GB/s one compute unit's kernels keep in flight (None: no limit)
    applied_stream_share: float = 1.0  # min(1, N_units * b_unit / BW) that `for_hardware` folded into the eta's
    host_sampling_ns_per_vocab: float = 0.0  # c_samp: host ns per vocabulary entry per sampled token (server engines)
    expert_overhead_us: float = 0.0  # tau_expert: fixed cost per routed expert a step runs, per MoE layer
    # tau_launch: us per layer a decode step pays launching each op from the host, in a CUDA build without CUDA
    # graphs (EngineSpec.ungraphed_layer_us, never fitted); prefill's long kernels hide it, so only decode pays
    launch_layer_us: float = 0.0
    # the engine runs all of a step's experts in one grouped kernel (EngineSpec.grouped_moe_kernel): tau_expert
    # is charged for the k experts of one token, whatever the batch (`roofline.expert_dispatch_time_s`)
    grouped_experts: bool = False
    # engines (engines.toml ids) whose measured rows trained this entry; () where the table did not record them.
    # Another engine reading the entry (a pooled child such as oMLX under mlx) was never measured here.
    engines_seen: tuple[str, ...] = ()
    # C_kv: the most GB/s the engine's decode attention streams from the KV cache on an Apple GPU, whatever
    # the bus (MLX's sdpa_vector kernels run a fixed count of threadgroups; docs/PHYSICS.md section 4); None: no cap
    kv_stream_gb_per_s: float | None = None
    # K: FP16 tensor FLOPs the engine's quantized GEMMs get per INT32 operation of the device, where unpacking
    # the weights on the INT32 lanes bounds them (`roofline.int32_cap`; docs/PHYSICS.md section 4); None: no bound
    int32_flop_per_op: float | None = None
    # b_state: bytes a decode step moves per element of a recurrent (linear-attention) layer's state, every pass
    # the engine's kernels make over it (llama.cpp: FP32 state, fused GATED_DELTA_NET op, copy into the cache);
    # None: one read at the KV dtype. r_rec: the fixed cost of a recurrent layer beyond an attention layer's, in
    # tau_layer (a decomposed delta rule's extra kernels). Both documented per engine, never fitted
    # (`roofline.recurrent_state_bytes`; docs/PHYSICS.md section 4)
    recurrent_state_bytes: float | None = None
    recurrent_layer_extra: float = 0.0
    # (m, p): the device family's multipliers on decode and prefill time that `domain.families.family_scaled` folded in
    family_time_scales: tuple[float, float] = (1.0, 1.0)

    def prefill_max_for(self, quantized: bool) -> float:
        if quantized and self.quantized_prefill_efficiency_max is not None:
            return self.quantized_prefill_efficiency_max
        return self.prefill_efficiency_max

    def bandwidth_fraction_for(self, quantized: bool) -> float:
        """Block-quantized matvec kernels (Q4_K, GPTQ...) stream bytes less efficiently than plain floats."""
        if quantized and self.quantized_bandwidth_fraction is not None:
            return self.quantized_bandwidth_fraction
        return self.bandwidth_fraction

    def ecc_overhead_for(self, hardware: HardwareSpec) -> float:
        """e_ecc on a card with inline ECC (HardwareSpec.inline_ecc), else 0: extra seconds per datasheet-byte-second."""
        return self.inline_ecc_overhead if hardware.inline_ecc else 0.0

    def stream_share(self, hardware: HardwareSpec) -> float:
        """`stream_bandwidth_share` of this b_unit on one device: the share its decode kernels keep busy."""
        return stream_bandwidth_share(hardware.stream_units, hardware.memory_bandwidth_gb_per_s, self.unit_bandwidth_gb_per_s)

    def for_hardware(self, hardware: HardwareSpec) -> Efficiency:
        """These values on one device: the decode stream's shares of bandwidth scaled by `stream_share`.

        The eta's (weights, KV) shrink by the share and the unfused attention's per-score bytes grow by
        its inverse, so every consumer (roofline, layouts, the sweep, the simulator) sees the limit;
        the result carries no `unit_bandwidth_gb_per_s`, so applying it twice changes nothing.
        """
        share = self.stream_share(hardware)
        cap = self.kv_stream_gb_per_s if hardware.backend == "metal" else None
        if cap:
            # the KV stream at min(eta_kv * N * b_unit, C_kv): the cap folds into eta_kv once, then is spent
            eta_kv = self.kv_bandwidth_fraction if self.kv_bandwidth_fraction is not None else self.bandwidth_fraction
            capped = min(eta_kv * min(share, 1.0), cap / hardware.memory_bandwidth_gb_per_s)
            return dataclasses.replace(self, kv_bandwidth_fraction=capped / min(share, 1.0), kv_stream_gb_per_s=None).for_hardware(hardware)
        if share >= 1.0:
            return dataclasses.replace(self, unit_bandwidth_gb_per_s=None) if self.unit_bandwidth_gb_per_s else self
        return dataclasses.replace(
            self,
            bandwidth_fraction=self.bandwidth_fraction * share,
            quantized_bandwidth_fraction=None if self.quantized_bandwidth_fraction is None else self.quantized_bandwidth_fraction * share,
            kv_bandwidth_fraction=None if self.kv_bandwidth_fraction is None else self.kv_bandwidth_fraction * share,
            decode_score_bytes=self.decode_score_bytes / share,
            unit_bandwidth_gb_per_s=None,
            applied_stream_share=share,
        )

    def kv_fraction_for(self, quantized: bool) -> float:
        """Attention reads the KV cache with its own kernels (per head, one query): eta_kv, else the weights' eta."""
        return self.kv_bandwidth_fraction if self.kv_bandwidth_fraction is not None else self.bandwidth_fraction_for(quantized)


@dataclass(frozen=True, slots=True)
class EngineSpec(_Plain):
    """An inference engine: its memory habits and default efficiency."""

    id: str
    name: str
    source: str
    efficiency: Efficiency
    runtime_overhead_gb: float
    usable_memory_fraction: float
    kv_allocation: str  # paged | contiguous
    default_kv_dtype: str = "fp16"
    based_on: str | None = None
    # fitted as its own group under `based_on` (its rows measure another runtime on the parent's kernels),
    # not pooled into the parent's: unseen, it borrows the parent's fit with a band widened for an unseen engine
    own_fit: bool = False
    fp16_accumulate: bool = False  # fp16 GEMMs accumulate in fp16 (llama.cpp's cuBLAS path)
    tensor_wgmma: bool = True  # its prefill kernels reach Hopper's wgmma-only peak (llama.cpp: mma.sync, no)
    fp4_block_tensor_rate: bool = True  # block FP4 weights run at the FP4 tensor peak (llama.cpp: no, the fp16 one)
    # one grouped kernel per MoE projection runs every touched expert at once (vLLM/SGLang fused_moe, TRT-LLM's
    # CUTLASS grouped GEMM): tau_expert is a per-MoE-layer cost that does not grow with the experts a batch touches
    grouped_moe_kernel: bool = False
    # us per layer its CUDA build pays on top of the fitted tau_layer: a build with CUDA graphs compiled out launches
    # every op of a decode step from the host (llamafile's GPU modules); 0: graphs on, as llama.cpp builds them
    ungraphed_layer_us: float = 0.0
    backends: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    notes: str | None = None
    # weight formats it runs: quant ids, or "gguf" for every GGUF type and mix (`usecases/formats.py`);
    # empty: not stated, anything goes. Experimental ones are accepted with a warning, never advised.
    weight_formats: tuple[str, ...] = ()
    experimental_formats: tuple[str, ...] = ()
    formats_source: str | None = None


@dataclass(frozen=True, slots=True)
class Workload(_Plain):
    """What the user asks of the model: one request shape at a concurrency."""

    prompt_tokens: int = 512
    output_tokens: int = 256
    context_tokens: int | None = None  # depth at which decode speed is reported; default: prompt
    batch: int = 1
    sessions_context_tokens: int | None = None  # context per session for the memory verdict


@dataclass(frozen=True, slots=True)
class Interval(_Plain):
    """A band around an estimate, in the estimate's own unit."""

    low: float
    high: float
    coverage: float = 0.8


@dataclass(frozen=True, slots=True)
class Bound(_Plain):
    """Which resource limits a step and by how much: seconds each would take alone."""

    bound: str  # memory | compute | overhead
    memory_time_s: float
    compute_time_s: float
    overhead_time_s: float


@dataclass(frozen=True, slots=True)
class Notes(_Plain):
    """Caveats attached to a result, in the order they were found."""

    items: tuple[str, ...] = field(default_factory=tuple)
