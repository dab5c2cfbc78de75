"""Where the model runs: tensor/pipeline parallelism and CPU offload (docs/PHYSICS.md, section 7).

Pure functions over frozen values. `Setup.step()` is `decode_step` with a deployment applied:

- **Tensor parallel** over `tp` devices: each device reads `1/tp` of the weights and its share of
  the KV cache (KV heads split at most `n_kv_heads` ways; an MLA latent is replicated), then two
  all-reduces per layer of `B * hidden * 2` bytes cross the link. Per-layer kernel launches do not
  shrink, so two devices never give 2x.
- **Pipeline parallel** over `pp` stages: a token walks through the stages one after another, so
  per-token time is the sum of the stage times (the same bytes as one device) plus `pp - 1` hops.
  It adds memory, not single-stream speed.
- **CPU offload**: layers left off the GPU run at system-RAM bandwidth (llama.cpp computes them
  there) or have their weights streamed over PCIe every step. Time adds per part.
- **Expert offload** (MoE, llama.cpp `--n-cpu-moe N` / `-ot exps=CPU`): the routed experts of
  `expert_layers` layers live in system RAM and are computed on the CPU; attention, shared experts,
  routers, embeddings, the head and the whole KV cache stay on the GPU. Time adds per part, and each
  such layer sends its activations to the host and back.

Links and collective costs (`Link`, `parse_link`, the all-reduce protocols) are in `links.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from tokometer.costmodel.links import (
    ACTIVATION_BYTES,
    Link,
    activation_bytes,
    allreduce_costs,
    allreduce_time_s,
    alltoall_costs,
    hop_time_s,
)
from tokometer.costmodel.memory import embedding_row_bytes, head_bytes, head_params
from tokometer.costmodel.pipeline import pipeline_prefill_factor
from tokometer.costmodel.roofline import (
    Peak,
    Prefill,
    Step,
    alu_peak_tflops,
    bound,
    decode_score_elements,
    decode_step,
    expert_dispatch_time_s,
    expert_slice_scale,
    host_sampling_time_s,
)
from tokometer.domain.specs import Efficiency, HardwareSpec, ModelSpec, ParamGroups, _Plain
from tokometer.domain.units import GB, TFLOP, US

OffloadMode = Literal["cpu", "stream"]  # offloaded layers computed on the CPU, or their weights streamed
OFFLOAD_MODES: tuple[OffloadMode, ...] = ("cpu", "stream")

IDEAL = Efficiency(
    bandwidth_fraction=1.0,
    layer_overhead_us=0.0,
    step_overhead_us=0.0,
    prefill_efficiency_max=1.0,
    prefill_half_tokens=0.0,
    decode_compute_fraction=1.0,
    source="ideal: eta = 1, no fixed costs",
)


def kv_shards(model: ModelSpec, tp: int) -> int:
    """Ways the KV cache splits under TP: by KV heads, at most `n_kv_heads`; an MLA latent is replicated."""
    if any(g.kind == "mla" for g in model.attention):
        return 1
    return max(1, min(tp, model.n_kv_heads or tp))


# --- layout ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Offload(_Plain):
    """Layers kept off the GPU. `mode` cpu: computed there at RAM speed; stream: weights cross PCIe.

    `expert_layers` > 0 (with every layer on the GPU): the routed experts of that many layers sit in
    system RAM and run on the CPU, the rest of those layers on the GPU.
    """

    gpu_layers: int
    cpu: HardwareSpec
    cpu_efficiency: Efficiency
    link: Link  # GPU <-> host
    mode: OffloadMode = "cpu"
    cpu_peak: Peak | None = None
    expert_layers: int = 0

    def active(self, n_layers: int) -> bool:
        """Whether anything is off the GPU: some layers, or some layers' experts."""
        return self.gpu_layers < n_layers or self.expert_layers > 0

    def expert_share(self, n_layers: int) -> float:
        """Share of the routed-expert weights in system RAM: `expert_layers / n_layers`."""
        return min(self.expert_layers, n_layers) / n_layers if n_layers else 0.0


@dataclass(frozen=True, slots=True)
class Layout(_Plain):
    """Where one replica runs: `tp` x `dp` x `pp` GPUs over `nodes` nodes (docs/PHYSICS.md section 7).

    vLLM's convention (docs "Data Parallel Deployment", "Expert Parallel Deployment"): attention runs
    `dp` data-parallel ranks of `tp` tensor-parallel GPUs each (its weights replicated over the ranks,
    each rank its own batch and KV); the MoE layers of a stage form one group of `tp * dp` GPUs, with
    the routed experts spread over `ep` of them (`ep` divides `tp * dp`; each expert split `tp * dp / ep`
    ways, tensor-parallel, when `ep` is smaller; `ep = 1` shards every expert over the group). So
    `--ep 8 --dp 8` is 8 GPUs (SGLang's `--tp 8 --dp 8 --enable-dp-attention --ep 8`). `link` joins the
    GPUs of a node, `inter_link` the nodes (or an NVLink domain spanning them, NVL72). `overlap`: the
    engine runs two micro-batches so one's expert all-to-all hides under the other's compute
    (two-batch overlap); `ep_imbalance`: the busiest EP rank's tokens over the mean (1: balanced, as
    an expert-parallel load balancer aims for).
    """

    tp: int = 1
    pp: int = 1
    link: Link | None = None
    offload: Offload | None = None
    ep: int = 1
    dp: int = 1
    nodes: int = 1
    inter_link: Link | None = None
    overlap: bool = False
    ep_imbalance: float = 1.0

    @property
    def devices(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def moe_devices(self) -> int:
        """GPUs one MoE layer spreads over: the `tp * dp` GPUs of a pipeline stage."""
        return self.tp * self.dp

    @property
    def expert_ways(self) -> int:
        """Ways each routed expert is split along its intermediate dimension: `tp * dp / ep` (1: whole experts)."""
        return self.moe_devices // max(1, self.ep)

    @property
    def gpus_per_node(self) -> int:
        return max(1, self.devices // max(1, self.nodes))

    def local_gpus(self, group: int) -> int:
        """How many of a `group` of consecutive GPUs share the fast link: the node, or an NVLink domain
        (NVL72) spanning nodes."""
        domain = self.gpus_per_node
        if self.inter_link is not None and self.inter_link.domain_gpus:
            domain = max(domain, self.inter_link.domain_gpus)
        return max(1, min(group, domain))

    def group_link(self, group: int) -> Link | None:
        """The link a collective over `group` consecutive GPUs is limited by: the node's, or the network's
        when the group spans nodes outside one NVLink domain."""
        if self.local_gpus(group) < group and self.inter_link is not None:
            return self.inter_link
        return self.link


# Engines that overlap the expert all-to-all with compute by splitting a step into two micro-batches
# (one computes while the other's tokens cross the link): engine -> (its flag, source). Off by default
# in each engine, so `--overlap` turns it on.
OVERLAP_POLICIES: dict[str, tuple[str, str]] = {
    "vllm": ("--enable-dbo", "vLLM Dual Batch Overlap, https://docs.vllm.ai/en/stable/design/dbo/ (DP+EP deployments)"),
    "sglang": (
        "--enable-two-batch-overlap",
        "SGLang two-batch overlap, https://lmsys.org/blog/2025-05-05-large-scale-ep/ (section 'Two-batch Overlap')",
    ),
}


def gpu_weight_bytes(weights: ParamGroups, layout: Layout) -> float:
    """Weight bytes one GPU holds: everything but the routed experts split `tp` ways per pipeline stage
    (replicated over the `dp` attention ranks), the routed experts split over all `tp * dp` GPUs of the
    stage (expert parallel, or tensor parallel inside each expert)."""
    rest = weights.total - weights.routed_experts
    return (rest / layout.tp + weights.routed_experts / layout.moe_devices) / layout.pp


def replicated_weights(weights: ParamGroups, layout: Layout) -> ParamGroups:
    """The weights the whole replica holds, by class: every class but the routed experts once per attention rank."""
    if layout.dp == 1:
        return weights
    d = layout.dp
    return ParamGroups(weights.embedding * d, weights.lm_head * d, weights.dense * d, weights.routed_experts, weights.resident * d)


def held_weight_bytes(weights: ParamGroups, layout: Layout) -> float:
    """Weight bytes the whole replica holds: `weights.total` plus the attention ranks' copies under DP."""
    if layout.dp == 1:
        return weights.total  # exactly, as before DP existed
    return gpu_weight_bytes(weights, layout) * layout.devices


# --- the step with a layout --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LeverStep(_Plain):
    """One decode step with the layout applied (`step`), next to the whole model on one device (`single`).

    For offload, `gpu_bytes`/`cpu_bytes` split what the step reads; in stream mode `cpu_bytes` are the
    weights that cross PCIe. Communication (all-reduces, hops, host transfers) is in `step.overhead_time_s`.
    """

    step: Step
    single: Step
    allreduce_time_s: float = 0.0
    hop_time_s: float = 0.0
    transfer_time_s: float = 0.0
    gpu_bytes: float = 0.0
    cpu_bytes: float = 0.0
    gpu_time_s: float = 0.0
    cpu_time_s: float = 0.0

    @property
    def time_s(self) -> float:
        return self.step.time_s

    @property
    def comm_time_s(self) -> float:
        return self.allreduce_time_s + self.hop_time_s + self.transfer_time_s


@dataclass(frozen=True, slots=True)
class Setup:
    """A model with its weights on hardware, run by an engine (efficiency), laid out by `layout`."""

    model: ModelSpec
    weights: ParamGroups
    hardware: HardwareSpec
    efficiency: Efficiency
    peak: Peak
    kv_bytes_per_element: float
    quantized: bool = False
    layout: Layout = Layout()

    def step(self, batch: int = 1, depth_tokens: float = 0.0, tokens_per_stream: int = 1) -> LeverStep:
        single = decode_step(
            self.model,
            self.weights,
            self.hardware,
            self.efficiency,
            batch=batch,
            depth_tokens=depth_tokens,
            kv_bytes_per_element=self.kv_bytes_per_element,
            peak=self.peak,
            quantized=self.quantized,
            tokens_per_stream=tokens_per_stream,
        )
        off = self.layout.offload
        if off is not None and off.gpu_layers < self.model.n_layers:
            return _offloaded(self, single, off, batch * tokens_per_stream)
        if off is not None and off.expert_layers > 0:
            return _experts_offloaded(self, single, off, batch * tokens_per_stream)
        if self.layout.devices > 1:
            return _parallel(self, single, batch * tokens_per_stream)
        return LeverStep(step=single, single=single)

    def ideal(self) -> Setup:
        """The same layout at eta = 1 with no fixed costs (links keep their latency: that is physics)."""
        off = self.layout.offload
        layout = self.layout if off is None else replace(self.layout, offload=replace(off, cpu_efficiency=IDEAL))
        return replace(self, efficiency=IDEAL, layout=layout)

    def with_gpu_layers(self, gpu_layers: int) -> Setup:
        off = self.layout.offload
        if off is None:
            raise ValueError("no offload in this layout")
        return replace(self, layout=replace(self.layout, offload=replace(off, gpu_layers=gpu_layers)))

    def with_expert_layers(self, expert_layers: int) -> Setup:
        """Every layer on the GPU, the routed experts of `expert_layers` of them in system RAM."""
        off = self.layout.offload
        if off is None:
            raise ValueError("no offload in this layout")
        moved = replace(off, gpu_layers=self.model.n_layers, expert_layers=expert_layers)
        return replace(self, layout=replace(self.layout, offload=moved))


def _parallel(setup: Setup, single: Step, tokens: int) -> LeverStep:
    """TP x DP x PP (x EP): weights and compute split over the GPUs (stages run one after another), plus sync costs.

    Attention and the other non-expert weights split `tp` ways, the routed experts `tp * dp` ways (each
    GPU reads its share of the touched experts); each of the `dp` attention ranks carries `B / dp`
    streams and their KV. Communication: two all-reduces per layer within a rank, one all-to-all
    dispatch and one combine per layer under EP (`moe_comm_s`), `pp - 1` hops.
    """
    lay = setup.layout
    model = setup.model
    link = lay.link
    if link is None:
        raise ValueError("a layout over several devices needs a link")
    eff = setup.efficiency
    bw = setup.hardware.memory_bandwidth_gb_per_s * GB
    kv = single.kv_read_bytes + single.kv_write_bytes
    if lay.dp > 1:
        kv /= lay.dp
    routed = setup.weights.routed_experts * model.expert_fraction_read(tokens) if model.is_moe else 0.0
    weights = single.weight_bytes / lay.tp if lay.dp == 1 else (single.weight_bytes - routed) / lay.tp + routed / lay.moe_devices
    shards = kv_shards(model, lay.tp)
    memory = (
        weights / (eff.bandwidth_fraction_for(setup.quantized) * bw)
        + kv / shards / (eff.kv_fraction_for(setup.quantized) * bw)
        + eff.ecc_overhead_for(setup.hardware) * (weights + kv / shards) / bw
        + (single.alu_time_s + single.score_time_s) / lay.tp / lay.dp
    )
    compute = single.compute_time_s / lay.tp / lay.dp
    payload = activation_bytes(model, tokens / lay.dp)
    tp_link = lay.group_link(lay.tp) or link
    allreduce = 2 * model.n_layers * allreduce_time_s(payload, lay.tp, tp_link)
    allreduce += moe_comm_s(model, lay, tokens)
    hops = (lay.pp - 1) * hop_time_s(activation_bytes(model, tokens), lay.group_link(lay.devices) or link)
    overhead = single.overhead_time_s + allreduce + hops
    step = replace(
        single,
        memory_time_s=memory,
        compute_time_s=compute,
        overhead_time_s=overhead,
        time_s=max(memory, compute) + overhead,
        ceiling_time_s=single.ceiling_time_s / lay.moe_devices,
        bound=bound(memory, compute, overhead),
    )
    return LeverStep(step=step, single=single, allreduce_time_s=allreduce, hop_time_s=hops)


DISPATCH_BYTES = 1.0  # FP8 dispatch, as DeepEP and TensorRT-LLM's wide-EP kernels send tokens (plus a scale per 128)
COMBINE_BYTES = 2.0  # BF16 combine


def moe_comm_costs(model: ModelSpec, layout: Layout) -> tuple[float, float]:
    """(seconds fixed, seconds per token of the replica's step) of the MoE layers' communication per GPU.

    Expert parallel (`ep > 1`): per MoE layer an all-to-all dispatch of each token's hidden state to its
    top-k experts (`hidden * k` elements at `DISPATCH_BYTES`) and a combine back (`COMBINE_BYTES`);
    each GPU sends the tokens of its share, `T / (tp * dp)`, and `(ep - 1) / ep` of them leave it, over
    the node's link or, across nodes, the network (`links.alltoall_costs`). The busiest rank moves
    `ep_imbalance` times the mean. Without EP but with attention DP (`dp > 1`), the experts are split
    tensor-parallel over the `tp * dp` GPUs and each MoE layer all-gathers the tokens and reduce-scatters
    the result, priced as one all-reduce of the step's activations over the group. Every layer is
    counted as a MoE layer (DeepSeek's 3 dense of 61 are not told apart).
    """
    if not model.is_moe:
        return 0.0, 0.0
    group = layout.moe_devices
    layers = model.n_layers / layout.pp
    link = layout.link
    if link is None or group <= 1:
        return 0.0, 0.0
    if layout.ep > 1:
        fixed, per_byte = alltoall_costs(group, layout.local_gpus(group), link, layout.inter_link)
        per_token = model.hidden_size * model.n_experts_per_token * (DISPATCH_BYTES + COMBINE_BYTES) / group
        return 2.0 * layers * fixed, layers * per_byte * per_token * layout.ep_imbalance
    if layout.dp > 1:
        (fixed, per_byte), _ = allreduce_costs(group, layout.group_link(group) or link)
        return layers * fixed, layers * per_byte * model.hidden_size * ACTIVATION_BYTES
    return 0.0, 0.0


def moe_comm_s(model: ModelSpec, layout: Layout, tokens: float) -> float:
    fixed, per_token = moe_comm_costs(model, layout)
    return fixed + per_token * tokens if per_token or fixed else 0.0


def _head_bytes(model: ModelSpec, weights: ParamGroups, tokens: float) -> tuple[float, float, float]:
    """(LM head bytes, embedding-row bytes, head FLOPs) of one step over `tokens` tokens."""
    return head_bytes(model, weights), embedding_row_bytes(model, weights) * tokens, 2.0 * head_params(model) * tokens


def _stream_extra_s(
    eff: Efficiency, hardware: HardwareSpec, model: ModelSpec, *, weights: float, layers: float, nbytes: float, single: Step
) -> float:
    """The decode stream's terms beyond bytes / (eta BW) for one part of a split (roofline.decode_step):

    k_alu * weights / peak_fp32 + layers' share of s_dec * scores / BW + e_ecc * bytes / BW, with
    `weights` the matmul parameters this part multiplies and `layers` its share of the attention layers.
    """
    bw = hardware.memory_bandwidth_gb_per_s * GB
    peak = alu_peak_tflops(hardware)
    alu = eff.decode_alu_flops_per_weight * weights / (peak * TFLOP) if peak else 0.0
    scores = layers * single.batch * eff.decode_score_bytes * decode_score_elements(model, single.depth_tokens) / bw
    return alu + scores + eff.ecc_overhead_for(hardware) * nbytes / bw


def _offloaded(setup: Setup, single: Step, off: Offload, tokens: int) -> LeverStep:
    """`gpu_layers` of `n_layers` on the GPU; the rest at RAM speed (cpu) or streamed over PCIe (stream).

    llama.cpp keeps the output layer on the CPU unless every layer is offloaded, and reads the
    embedding row there; in stream mode the head and all KV stay on the GPU. Each part dispatches
    its own layers' routed experts (`expert_dispatch_time_s` with that part's tau_expert): charging
    none of them once a layer left the GPU made 47 of 48 layers read faster than all 48.
    """
    model = setup.model
    eff = setup.efficiency
    share = off.gpu_layers / model.n_layers
    head, rows, head_flops = _head_bytes(model, setup.weights, tokens)
    layer_weights = single.weight_bytes - head - rows
    kv = single.kv_read_bytes + single.kv_write_bytes
    bw = setup.hardware.memory_bandwidth_gb_per_s * GB
    eta = eff.bandwidth_fraction_for(setup.quantized)
    peak = setup.peak.tflops * TFLOP if setup.peak.tflops else None
    tau_gpu = off.gpu_layers * (eff.layer_overhead_us + eff.launch_layer_us) * US

    if off.mode == "stream":
        streamed = (1.0 - share) * layer_weights
        gpu_bytes = single.bytes - streamed
        gpu_memory = (gpu_bytes - kv) / (eta * bw) + kv / (eff.kv_fraction_for(setup.quantized) * bw) + _stream_extra_s(
            eff, setup.hardware, model, weights=model.matmul_params_per_token(), layers=1.0, nbytes=gpu_bytes, single=single
        )
        transfer = streamed / off.link.effective_bytes_per_s
        compute = single.compute_time_s
        gpu_time = max(gpu_memory, compute)
        overhead = single.overhead_time_s
        ceiling = max((single.weight_bytes - streamed) / bw, single.flops / peak if peak else 0.0)
        ceiling += streamed / (off.link.bandwidth_gb_per_s * GB)
        memory = gpu_memory + transfer
        step = replace(
            single,
            memory_time_s=memory,
            compute_time_s=compute,
            overhead_time_s=overhead,
            time_s=gpu_time + transfer + overhead,
            ceiling_time_s=ceiling,
            bound=bound(memory, compute, overhead),
        )
        return LeverStep(
            step=step, single=single, transfer_time_s=transfer, gpu_bytes=gpu_bytes, cpu_bytes=streamed,
            gpu_time_s=gpu_time, cpu_time_s=0.0,
        )

    cpu_eff = off.cpu_efficiency
    cpu_bw = off.cpu.memory_bandwidth_gb_per_s * GB
    cpu_peak = off.cpu_peak.tflops * TFLOP if off.cpu_peak and off.cpu_peak.tflops else None
    gpu_bytes = share * (layer_weights + kv)
    cpu_bytes = single.bytes - gpu_bytes
    gpu_flops = share * (single.flops - head_flops)
    cpu_flops = single.flops - gpu_flops
    matmul = model.matmul_params_per_token()
    gpu_memory = share * layer_weights / (eta * bw) + share * kv / (eff.kv_fraction_for(setup.quantized) * bw) + _stream_extra_s(
        eff, setup.hardware, model, weights=share * matmul, layers=share, nbytes=gpu_bytes, single=single
    )
    gpu_compute = gpu_flops / (eff.decode_compute_fraction * peak) if peak else 0.0
    cpu_kv = (1.0 - share) * kv
    cpu_memory = (
        (cpu_bytes - cpu_kv) / (cpu_eff.bandwidth_fraction_for(setup.quantized) * cpu_bw)
        + cpu_kv / (cpu_eff.kv_fraction_for(setup.quantized) * cpu_bw)
    ) + _stream_extra_s(
        cpu_eff, off.cpu, model, weights=(1.0 - share) * matmul, layers=1.0 - share, nbytes=cpu_bytes, single=single
    )
    cpu_compute = cpu_flops / (cpu_eff.decode_compute_fraction * cpu_peak) if cpu_peak else 0.0
    transfer = 2.0 * hop_time_s(activation_bytes(model, tokens), off.link) if off.gpu_layers > 0 else 0.0
    overhead = (
        tau_gpu
        + (model.n_layers - off.gpu_layers) * cpu_eff.layer_overhead_us * US
        + share * expert_dispatch_time_s(model, eff, tokens)
        + (1.0 - share) * expert_dispatch_time_s(model, cpu_eff, tokens)
        + eff.step_overhead_us * US
        + tokens * host_sampling_time_s(model, eff)
        + transfer
    )
    gpu_ceiling = max(share * layer_weights / bw, gpu_flops / peak if peak else 0.0)
    cpu_ceiling = max((single.weight_bytes - share * layer_weights) / cpu_bw, cpu_flops / cpu_peak if cpu_peak else 0.0)
    return _split_step(
        single, gpu=(gpu_memory, gpu_compute, gpu_ceiling, gpu_bytes), cpu=(cpu_memory, cpu_compute, cpu_ceiling, cpu_bytes),
        overhead_s=overhead, transfer_s=transfer,
    )


def _split_step(
    single: Step, *, gpu: tuple[float, float, float, float], cpu: tuple[float, float, float, float],
    overhead_s: float, transfer_s: float,
) -> LeverStep:
    """One step whose layers run partly on the GPU, partly on the CPU, one part after the other:

        t = max(t_mem,gpu, t_comp,gpu) + max(t_mem,cpu, t_comp,cpu) + overhead

    `gpu` and `cpu` are each (memory s, compute s, ceiling s, bytes read); `overhead_s` already holds
    the link transfer `transfer_s`, which is kept apart for the breakdown.
    """
    gpu_memory, gpu_compute, gpu_ceiling, gpu_bytes = gpu
    cpu_memory, cpu_compute, cpu_ceiling, cpu_bytes = cpu
    gpu_time = max(gpu_memory, gpu_compute)
    cpu_time = max(cpu_memory, cpu_compute)
    memory = gpu_memory + cpu_memory
    compute = gpu_compute + cpu_compute
    step = replace(
        single,
        memory_time_s=memory,
        compute_time_s=compute,
        overhead_time_s=overhead_s,
        time_s=gpu_time + cpu_time + overhead_s,
        ceiling_time_s=gpu_ceiling + cpu_ceiling,
        bound=bound(memory, compute, overhead_s),
    )
    return LeverStep(
        step=step, single=single, transfer_time_s=transfer_s, gpu_bytes=gpu_bytes, cpu_bytes=cpu_bytes,
        gpu_time_s=gpu_time, cpu_time_s=cpu_time,
    )


def _experts_offloaded(setup: Setup, single: Step, off: Offload, tokens: int) -> LeverStep:
    """Every layer on the GPU but the routed experts of `expert_layers` of them, which sit in system RAM
    and are computed on the CPU (llama.cpp `--n-cpu-moe`, `-ot exps=CPU`). Time adds per part:

        t = max(B_gpu / (eta BW), F_gpu / (eta_c P)) + max(B_cpu / (eta_cpu BW_cpu), F_cpu / (eta_c,cpu P_cpu))
            + n_layers tau + expert_layers tau_cpu + tau_step + 2 expert_layers (hop + S / (eta_link BW_link))
            + (1 - s) t_exp,gpu + s t_exp,cpu

    `B_cpu = s * routed * (1 - (1 - k/E)^T)` bytes with `s = expert_layers / n_layers`, `F_cpu = s * 2
    * routed * k/E * T` FLOPs for `T` tokens; the GPU reads the rest, KV included. Each offloaded
    layer copies its activations (`T * hidden * 2` bytes) to the host and the expert output back.
    """
    model = setup.model
    eff = setup.efficiency
    share = off.expert_share(model.n_layers)
    routed = setup.weights.routed_experts
    cpu_bytes = share * routed * model.expert_fraction_read(tokens)
    routed_params_per_token = model.params.routed_experts * (model.n_experts_per_token / model.n_experts)
    cpu_flops = share * 2.0 * routed_params_per_token * tokens
    gpu_bytes = single.bytes - cpu_bytes
    gpu_flops = single.flops - cpu_flops
    bw = setup.hardware.memory_bandwidth_gb_per_s * GB
    peak = setup.peak.tflops * TFLOP if setup.peak.tflops else None
    cpu_eff = off.cpu_efficiency
    cpu_bw = off.cpu.memory_bandwidth_gb_per_s * GB
    cpu_peak = off.cpu_peak.tflops * TFLOP if off.cpu_peak and off.cpu_peak.tflops else None
    cpu_weights = share * routed_params_per_token
    kv = single.kv_read_bytes + single.kv_write_bytes
    gpu_memory = (
        (gpu_bytes - kv) / (eff.bandwidth_fraction_for(setup.quantized) * bw) + kv / (eff.kv_fraction_for(setup.quantized) * bw)
    ) + _stream_extra_s(
        eff, setup.hardware, model, weights=model.matmul_params_per_token() - cpu_weights, layers=1.0, nbytes=gpu_bytes, single=single
    )
    gpu_compute = gpu_flops / (eff.decode_compute_fraction * peak) if peak else 0.0
    cpu_memory = cpu_bytes / (cpu_eff.bandwidth_fraction_for(setup.quantized) * cpu_bw) + _stream_extra_s(
        cpu_eff, off.cpu, model, weights=cpu_weights, layers=0.0, nbytes=cpu_bytes, single=single
    )
    cpu_compute = cpu_flops / (cpu_eff.decode_compute_fraction * cpu_peak) if cpu_peak else 0.0
    transfer = 2.0 * off.expert_layers * hop_time_s(activation_bytes(model, tokens), off.link)
    # the offloaded layers' routed experts are dispatched by the CPU backend, not the GPU's
    dispatch = share * (expert_dispatch_time_s(model, cpu_eff, tokens) - expert_dispatch_time_s(model, eff, tokens))
    overhead = single.overhead_time_s + off.expert_layers * cpu_eff.layer_overhead_us * US + dispatch + transfer
    gpu_ceiling = max((single.weight_bytes - cpu_bytes) / bw, gpu_flops / peak if peak else 0.0)
    cpu_ceiling = max(cpu_bytes / cpu_bw, cpu_flops / cpu_peak if cpu_peak else 0.0)
    return _split_step(
        single, gpu=(gpu_memory, gpu_compute, gpu_ceiling, gpu_bytes), cpu=(cpu_memory, cpu_compute, cpu_ceiling, cpu_bytes),
        overhead_s=overhead, transfer_s=transfer,
    )


def layout_prefill(setup: Setup, pre: Prefill | None) -> Prefill | None:
    """Prefill with the layout: TP splits the work `tp` ways and all-reduces `T * hidden * 2` bytes twice
    per layer; PP overlaps the chunks in flight across its stages (`pipeline_prefill_factor`) and adds
    its hops, while the per-chunk fixed costs (graph build, scheduling, launches on the one host
    thread that drives every GPU) are not overlapped; offloaded weights (layers, or experts kept in RAM) cross PCIe once per chunk (llama.cpp
    computes large batches on the GPU, copying CPU-resident weights over)."""
    if pre is None:
        return None
    lay = setup.layout
    model = setup.model
    off = lay.offload
    if off is not None and off.active(model.n_layers):
        layer_weights = setup.weights.dense + setup.weights.routed_experts
        streamed = (1.0 - off.gpu_layers / model.n_layers) * layer_weights
        streamed += off.expert_share(model.n_layers) * setup.weights.routed_experts  # experts in RAM
        extra = pre.n_chunks * streamed / off.link.effective_bytes_per_s
        time_s = pre.time_s + extra
        return replace(
            pre, memory_time_s=pre.memory_time_s + extra, transfer_time_s=extra, time_s=time_s, tok_s=pre.prompt_tokens / time_s
        )
    if lay.devices <= 1 or lay.link is None:
        return pre
    chunk = pre.prompt_tokens / max(1, pre.n_chunks)
    payload = activation_bytes(model, chunk)
    comm = pre.n_chunks * (
        2 * model.n_layers * allreduce_time_s(payload, lay.tp, lay.link) + (lay.pp - 1) * hop_time_s(payload, lay.link)
    )
    eff = setup.efficiency
    pipe = pipeline_prefill_factor(pre.n_chunks, eff.prefill_chunk_tokens, eff.prefill_batch_tokens, lay.pp, model.n_layers)
    # tensor-parallel experts: each GPU's routed GEMMs run on slices of the intermediate dimension (roofline.expert_slice_scale)
    sliced = (expert_slice_scale(model, lay.expert_ways, eff.prefill_half_tokens) - 1.0) * pre.routed_time_s
    compute = (pre.compute_time_s + sliced) / lay.tp * pipe
    memory = pre.memory_time_s / lay.tp * pipe
    overhead = pre.overhead_time_s
    time_s = max(compute, memory) + overhead + comm
    return replace(
        pre,
        compute_time_s=compute,
        memory_time_s=memory,
        overhead_time_s=overhead + comm,
        comm_time_s=comm,
        time_s=time_s,
        tok_s=pre.prompt_tokens / time_s,
    )
