"""The other levers (PHYSICS.md sections 6-8): devices, offload, speculative decoding, utilisation.

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

Link constants (one place, with their sources):

- All-reduce of a small message on `n` devices: `t = launch + 2 (n - 1) hop + 2 (n - 1) / n * S / (eta_link BW)`.
  `2 (n - 1)` is the ring algorithm's step count (NCCL maintainer, NVIDIA/nccl-tests#123).
  `launch = 6 us` and the NVLink `hop = 2 us` reproduce nccl-tests#123's DGX-A100 figures
  (10 us at 2 GPUs, 34 us at 8); 2 us is also the P2P-write latency over NVLink reported by
  `p2pBandwidthLatencyTest` (NVIDIA/cuda-samples#230: 1.8-2.3 us), and H100 NVLS reaches ~6 us at
  2 GPUs (NVIDIA/nccl#1259).
- A PCIe hop without peer-to-peer (consumer cards, or through the host) costs about 13 us:
  `p2pBandwidthLatencyTest` "P2P=Disabled" latencies of 11-20 us (NVIDIA/cuda-samples#230,
  NVIDIA/nccl#1127). The same figure is used for a link given only as a bandwidth.
- `eta_link = 0.8`: bulk transfers reach about 80 % of the link's rate (H100 NVLink 376 of
  450 GB/s per direction, NVIDIA/nccl#1264; PCIe 4.0 x16 about 25 of 31.5 GB/s).
- PCIe per-lane rates per direction (PCI-SIG base specifications, 128b/130b encoding):
  gen3 0.985, gen4 1.969, gen5 3.938 GB/s. NVLink: half the catalog's bidirectional figure.
- Activations cross links in 16-bit floats: 2 bytes per element.

Speculative decoding: expected tokens per target pass `(1 - a**(k+1)) / (1 - a)` (Leviathan,
Kalman & Matias 2023, "Fast Inference from Transformers via Speculative Decoding", eq. 1), one pass
costs `k * t_draft + t_verify(k + 1)`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from tokometer.costmodel.roofline import Peak, Prefill, Step, decode_step
from tokometer.errors import InputError
from tokometer.specs import Efficiency, HardwareSpec, Interval, ModelSpec, ParamGroups, _Plain
from tokometer.units import GB, TFLOP, US

ACTIVATION_BYTES = 2.0
LINK_EFFICIENCY = 0.8
ALLREDUCE_LAUNCH_US = 6.0
NVLINK_HOP_US = 2.0
PCIE_HOP_US = 13.0
PCIE_LANE_GB_PER_S = {3: 0.985, 4: 1.969, 5: 3.938}
PCIE_LANES = (1, 2, 4, 8, 16)
LINK_SOURCES = (
    "https://github.com/NVIDIA/nccl-tests/issues/123",
    "https://github.com/NVIDIA/cuda-samples/issues/230",
    "https://github.com/NVIDIA/nccl/issues/1127",
    "https://github.com/NVIDIA/nccl/issues/1259",
    "https://github.com/NVIDIA/nccl/issues/1264",
)
OFFLOAD_MODES = ("cpu", "stream")

IDEAL = Efficiency(
    bandwidth_fraction=1.0,
    layer_overhead_us=0.0,
    step_overhead_us=0.0,
    prefill_efficiency_max=1.0,
    prefill_half_tokens=0.0,
    decode_compute_fraction=1.0,
    source="ideal: eta = 1, no fixed costs",
)


# --- links -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Link(_Plain):
    """A device-to-device (or device-to-host) link: per-direction bandwidth and one hop's latency."""

    name: str
    kind: str  # nvlink | pcie | custom
    bandwidth_gb_per_s: float  # per direction, datasheet
    hop_latency_us: float
    source: str = ""

    @property
    def effective_bytes_per_s(self) -> float:
        return LINK_EFFICIENCY * self.bandwidth_gb_per_s * GB


def pcie_link(gen: int, lanes: int = 16) -> Link:
    """PCIe gen 3/4/5 with 1-16 lanes: per-lane rate x lanes, per direction."""
    if gen not in PCIE_LANE_GB_PER_S:
        raise InputError(f"PCIe generation {gen} is not modelled (3, 4 or 5)")
    if lanes not in PCIE_LANES:
        raise InputError(f"PCIe lane count must be one of {', '.join(map(str, PCIE_LANES))}, got {lanes}")
    return Link(
        name=f"pcie{gen}x{lanes}",
        kind="pcie",
        bandwidth_gb_per_s=PCIE_LANE_GB_PER_S[gen] * lanes,
        hop_latency_us=PCIE_HOP_US,
        source="PCI-SIG per-lane rates; hop latency from p2pBandwidthLatencyTest (P2P disabled)",
    )


def host_link(hardware: HardwareSpec) -> Link:
    """The device's own PCIe connection to the host (PCIe 4.0 x16 when the catalog does not say)."""
    gen = hardware.pcie_gen if hardware.pcie_gen in PCIE_LANE_GB_PER_S else 4
    lanes = hardware.pcie_lanes if hardware.pcie_lanes in PCIE_LANES else 16
    assert gen is not None and lanes is not None
    return pcie_link(gen, lanes)


_PCIE = re.compile(r"^pcie(?:[\s_-]*gen)?[\s_-]*(\d+)(?:[\s_-]*x(\d+))?$")


def parse_link(text: str | None, hardware: HardwareSpec) -> Link:
    """`nvlink`, `pcie3`/`pcie4`/`pcie5` with optional `xLANES` (`pcie4x8`), or a bandwidth in GB/s.

    Without a value: NVLink when the catalog gives the device one, else its own PCIe.
    """
    if text is None or not text.strip():
        return nvlink(hardware) if hardware.nvlink_gb_per_s else host_link(hardware)
    key = text.strip().lower()
    if key == "nvlink":
        return nvlink(hardware)
    match = _PCIE.match(key)
    if match:
        return pcie_link(int(match.group(1)), int(match.group(2) or 16))
    try:
        value = float(key.removesuffix("gb/s").strip())
    except ValueError:
        raise InputError(
            f"unknown link {text!r}: use nvlink, pcie3, pcie4 or pcie5 (optionally with lanes, "
            "e.g. pcie4x8) or a bandwidth in GB/s"
        ) from None
    if not (value > 0 and math.isfinite(value)):
        raise InputError(f"--link bandwidth must be a positive number of GB/s, got {text!r}")
    return Link(
        name=f"{value:g} GB/s",
        kind="custom",
        bandwidth_gb_per_s=value,
        hop_latency_us=PCIE_HOP_US,
        source="user-supplied bandwidth; PCIe hop latency assumed",
    )


def nvlink(hardware: HardwareSpec) -> Link:
    if not hardware.nvlink_gb_per_s:
        raise InputError(
            f"{hardware.name} has no NVLink figure in the catalog; give --link pcie4, pcie5 or a bandwidth in GB/s"
        )
    return Link(
        name="nvlink",
        kind="nvlink",
        bandwidth_gb_per_s=hardware.nvlink_gb_per_s / 2.0,
        hop_latency_us=NVLINK_HOP_US,
        source=f"{hardware.name} NVLink {hardware.nvlink_gb_per_s:g} GB/s bidirectional, halved per direction",
    )


def allreduce_time_s(payload_bytes: float, devices: int, link: Link) -> float:
    """Ring all-reduce: `launch + 2(n-1) hop + 2(n-1)/n * S / (eta_link BW)`; 0 on one device."""
    if devices <= 1:
        return 0.0
    steps = 2.0 * (devices - 1)
    return (
        ALLREDUCE_LAUNCH_US * US
        + steps * link.hop_latency_us * US
        + steps / devices * payload_bytes / link.effective_bytes_per_s
    )


def hop_time_s(payload_bytes: float, link: Link) -> float:
    """One point-to-point transfer: `hop + S / (eta_link BW)`."""
    return link.hop_latency_us * US + payload_bytes / link.effective_bytes_per_s


def activation_bytes(model: ModelSpec, tokens: float) -> float:
    """What crosses a link per sync: `tokens * hidden * 2` bytes (0 for a bare model with no hidden size)."""
    return tokens * model.hidden_size * ACTIVATION_BYTES


def kv_shards(model: ModelSpec, tp: int) -> int:
    """Ways the KV cache splits under TP: by KV heads, at most `n_kv_heads`; an MLA latent is replicated."""
    if any(g.kind == "mla" for g in model.attention):
        return 1
    return max(1, min(tp, model.n_kv_heads or tp))


# --- layout ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Offload(_Plain):
    """Layers kept off the GPU. `mode` cpu: computed there at RAM speed; stream: weights cross PCIe."""

    gpu_layers: int
    cpu: HardwareSpec
    cpu_efficiency: Efficiency
    link: Link  # GPU <-> host
    mode: str = "cpu"
    cpu_peak: Peak | None = None


@dataclass(frozen=True, slots=True)
class Layout(_Plain):
    tp: int = 1
    pp: int = 1
    link: Link | None = None
    offload: Offload | None = None

    @property
    def devices(self) -> int:
        return self.tp * self.pp


def gpu_layer_count(value: int | float | str | None, n_layers: int) -> int | None:
    """`--gpu-layers`: a layer count (`26`) or a share of the layers (`0.8`); None means all."""
    if value is None:
        return None
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        raise InputError(f"--gpu-layers must be a layer count or a fraction like 0.8, got {text!r}") from None
    if not math.isfinite(number) or number < 0:
        raise InputError(f"--gpu-layers must be zero or more, got {text!r}")
    is_fraction = "." in text or "e" in text.lower() or isinstance(value, float)
    if is_fraction:
        if number > 1:
            raise InputError(f"--gpu-layers as a fraction must be between 0 and 1, got {text}")
        return int(round(number * n_layers))
    if number > n_layers:
        raise InputError(f"--gpu-layers {int(number)} is more than the model's {n_layers} layers")
    return int(number)


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


def _bound(memory: float, compute: float, overhead: float) -> str:
    if overhead > max(memory, compute):
        return "overhead"
    return "memory" if memory >= compute else "compute"


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


def _parallel(setup: Setup, single: Step, tokens: int) -> LeverStep:
    """TP x PP: memory and compute split `tp` ways (stages run one after another), plus sync costs."""
    lay = setup.layout
    model = setup.model
    link = lay.link
    if link is None:
        raise ValueError("a layout over several devices needs a link")
    eta = setup.efficiency.bandwidth_fraction_for(setup.quantized)
    bw = setup.hardware.memory_bandwidth_gb_per_s * GB
    kv = single.kv_read_bytes + single.kv_write_bytes
    memory = (single.weight_bytes / lay.tp + kv / kv_shards(model, lay.tp)) / (eta * bw)
    compute = single.compute_time_s / lay.tp
    payload = activation_bytes(model, tokens)
    allreduce = 2 * model.n_layers * allreduce_time_s(payload, lay.tp, link)
    hops = (lay.pp - 1) * hop_time_s(payload, link)
    overhead = single.overhead_time_s + allreduce + hops
    step = replace(
        single,
        memory_time_s=memory,
        compute_time_s=compute,
        overhead_time_s=overhead,
        time_s=max(memory, compute) + overhead,
        ceiling_time_s=single.ceiling_time_s / lay.tp,
        bound=_bound(memory, compute, overhead),
    )
    return LeverStep(step=step, single=single, allreduce_time_s=allreduce, hop_time_s=hops)


def _head_bytes(model: ModelSpec, weights: ParamGroups, tokens: float) -> tuple[float, float, float]:
    """(LM head bytes, embedding-row bytes, head FLOPs) of one step over `tokens` tokens."""
    head = weights.embedding if model.tied_embeddings else weights.lm_head
    rows = weights.embedding / model.vocab_size * tokens if model.vocab_size else 0.0
    head_params = model.params.embedding if model.tied_embeddings else model.params.lm_head
    return head, rows, 2.0 * head_params * tokens


def _offloaded(setup: Setup, single: Step, off: Offload, tokens: int) -> LeverStep:
    """`gpu_layers` of `n_layers` on the GPU; the rest at RAM speed (cpu) or streamed over PCIe (stream).

    llama.cpp keeps the output layer on the CPU unless every layer is offloaded, and reads the
    embedding row there; in stream mode the head and all KV stay on the GPU.
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
    tau_gpu = off.gpu_layers * eff.layer_overhead_us * US

    if off.mode == "stream":
        streamed = (1.0 - share) * layer_weights
        gpu_bytes = single.bytes - streamed
        gpu_memory = gpu_bytes / (eta * bw)
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
            bound=_bound(memory, compute, overhead),
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
    gpu_memory = gpu_bytes / (eta * bw)
    gpu_compute = gpu_flops / (eff.decode_compute_fraction * peak) if peak else 0.0
    cpu_memory = cpu_bytes / (cpu_eff.bandwidth_fraction_for(setup.quantized) * cpu_bw)
    cpu_compute = cpu_flops / (cpu_eff.decode_compute_fraction * cpu_peak) if cpu_peak else 0.0
    gpu_time = max(gpu_memory, gpu_compute)
    cpu_time = max(cpu_memory, cpu_compute)
    transfer = 2.0 * hop_time_s(activation_bytes(model, tokens), off.link) if off.gpu_layers > 0 else 0.0
    overhead = (
        tau_gpu
        + (model.n_layers - off.gpu_layers) * cpu_eff.layer_overhead_us * US
        + eff.step_overhead_us * US
        + transfer
    )
    gpu_ceiling = max(share * layer_weights / bw, gpu_flops / peak if peak else 0.0)
    cpu_ceiling = max((single.weight_bytes - share * layer_weights) / cpu_bw, cpu_flops / cpu_peak if cpu_peak else 0.0)
    memory = gpu_memory + cpu_memory
    compute = gpu_compute + cpu_compute
    step = replace(
        single,
        memory_time_s=memory,
        compute_time_s=compute,
        overhead_time_s=overhead,
        time_s=gpu_time + cpu_time + overhead,
        ceiling_time_s=gpu_ceiling + cpu_ceiling,
        bound=_bound(memory, compute, overhead),
    )
    return LeverStep(
        step=step, single=single, transfer_time_s=transfer, gpu_bytes=gpu_bytes, cpu_bytes=cpu_bytes,
        gpu_time_s=gpu_time, cpu_time_s=cpu_time,
    )


def layout_prefill(setup: Setup, pre: Prefill | None) -> Prefill | None:
    """Prefill with the layout: TP splits the work `tp` ways and all-reduces `T * hidden * 2` bytes twice
    per layer; PP adds its hops; offloaded weights cross PCIe once per chunk (llama.cpp computes large
    batches on the GPU, copying CPU-resident weights over)."""
    if pre is None:
        return None
    lay = setup.layout
    model = setup.model
    off = lay.offload
    if off is not None and off.gpu_layers < model.n_layers:
        layer_weights = setup.weights.dense + setup.weights.routed_experts
        streamed = (1.0 - off.gpu_layers / model.n_layers) * layer_weights
        extra = pre.n_chunks * streamed / off.link.effective_bytes_per_s
        time_s = pre.time_s + extra
        return replace(pre, memory_time_s=pre.memory_time_s + extra, time_s=time_s, tok_s=pre.prompt_tokens / time_s)
    if lay.devices <= 1 or lay.link is None:
        return pre
    chunk = pre.prompt_tokens / max(1, pre.n_chunks)
    payload = activation_bytes(model, chunk)
    comm = pre.n_chunks * (
        2 * model.n_layers * allreduce_time_s(payload, lay.tp, lay.link) + (lay.pp - 1) * hop_time_s(payload, lay.link)
    )
    compute = pre.compute_time_s / lay.tp
    memory = pre.memory_time_s / lay.tp
    time_s = max(compute, memory) + pre.overhead_time_s + comm
    return replace(
        pre,
        compute_time_s=compute,
        memory_time_s=memory,
        overhead_time_s=pre.overhead_time_s + comm,
        time_s=time_s,
        tok_s=pre.prompt_tokens / time_s,
    )


# --- memory views ------------------------------------------------------------------------------


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
                    kv_elements_per_token=g.kv_elements_per_token * copies,
                    state_elements=g.state_elements * copies,
                )
            )
    limits = [m.max_context_tokens for m in (model, *extra) if m.max_context_tokens is not None]
    for other in extra:
        groups.extend(other.attention)
    return replace(model, attention=tuple(groups), max_context_tokens=min(limits) if limits else None)


# --- speculative decoding ----------------------------------------------------------------------


def tokens_per_pass(acceptance: float, draft_tokens: int) -> float:
    """Expected tokens per target pass: `(1 - a**(k+1)) / (1 - a)` (k+1 when every draft is accepted)."""
    check_speculation(acceptance, draft_tokens)
    a = acceptance
    return (1.0 - a ** (draft_tokens + 1)) / (1.0 - a)


def check_speculation(acceptance: float, draft_tokens: int) -> None:
    if not (0.0 <= acceptance < 1.0):
        raise InputError(f"--acceptance must be in [0, 1), got {acceptance!r}")
    if not (isinstance(draft_tokens, int) and 1 <= draft_tokens <= 64):
        raise InputError(f"--draft-tokens must be an integer from 1 to 64, got {draft_tokens!r}")


@dataclass(frozen=True, slots=True)
class Speculation(_Plain):
    acceptance: float
    draft_tokens: int
    tokens_per_pass: float
    draft_step_time_s: float
    verify_time_s: float
    pass_time_s: float
    tok_s: float
    ceiling_tok_s: float
    baseline_tok_s: float
    speedup: float
    break_even_acceptance: float | None  # below it, drafting costs more than it saves


def speculate(
    target: Setup,
    draft: Setup,
    *,
    acceptance: float,
    draft_tokens: int,
    batch: int = 1,
    depth_tokens: float = 0.0,
) -> Speculation:
    """Per-stream speed with a draft: E tokens per pass of `k * t_draft + t_verify(k + 1)` seconds.

    Verification is one target step over k+1 tokens per stream: the weights once, the KV cache once.
    """
    expected = tokens_per_pass(acceptance, draft_tokens)
    t_draft = draft.step(batch, depth_tokens).time_s
    t_verify = target.step(batch, depth_tokens, tokens_per_stream=draft_tokens + 1).time_s
    t_pass = draft_tokens * t_draft + t_verify
    baseline = target.step(batch, depth_tokens).time_s
    ideal_t, ideal_d = target.ideal(), draft.ideal()
    ceiling_pass = draft_tokens * ideal_d.step(batch, depth_tokens).time_s + ideal_t.step(
        batch, depth_tokens, tokens_per_stream=draft_tokens + 1
    ).time_s
    return Speculation(
        acceptance=acceptance,
        draft_tokens=draft_tokens,
        tokens_per_pass=expected,
        draft_step_time_s=t_draft,
        verify_time_s=t_verify,
        pass_time_s=t_pass,
        tok_s=expected / t_pass,
        ceiling_tok_s=expected / ceiling_pass,
        baseline_tok_s=1.0 / baseline,
        speedup=expected * baseline / t_pass,
        break_even_acceptance=_break_even(t_pass / baseline, draft_tokens),
    )


def _break_even(cost_ratio: float, draft_tokens: int) -> float | None:
    """Acceptance at which E(a) equals the pass's cost in plain steps (E rises with a)."""
    if cost_ratio <= 1.0:
        return 0.0
    if cost_ratio >= draft_tokens + 1:
        return None
    low, high = 0.0, 1.0 - 1e-12
    for _ in range(60):
        mid = (low + high) / 2
        if (1.0 - mid ** (draft_tokens + 1)) / (1.0 - mid) < cost_ratio:
            low = mid
        else:
            high = mid
    return (low + high) / 2


# --- curves ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BatchPoint(_Plain):
    batch: int
    per_stream_tok_s: float
    aggregate_tok_s: float
    ceiling_per_stream_tok_s: float
    ceiling_aggregate_tok_s: float
    bound: str
    weight_bytes_per_step: float
    kv_bytes_per_step: float
    flops_per_step: float
    experts_touched: float | None  # distinct routed experts per MoE layer: E (1 - (1 - k/E)**B)
    fits: bool


def experts_touched(model: ModelSpec, tokens: float) -> float | None:
    return model.n_experts * model.expert_fraction_read(tokens) if model.is_moe else None


def batch_curve(
    setup: Setup, batches: Sequence[int], depth_tokens: float, fits: Callable[[int], bool]
) -> tuple[BatchPoint, ...]:
    """Per-stream `1 / t(B)` and aggregate `B / t(B)` decode at each batch (PHYSICS.md section 6)."""
    points = []
    for b in batches:
        ls = setup.step(b, depth_tokens)
        s = ls.step
        points.append(
            BatchPoint(
                batch=b,
                per_stream_tok_s=1.0 / s.time_s,
                aggregate_tok_s=b / s.time_s,
                ceiling_per_stream_tok_s=1.0 / s.ceiling_time_s,
                ceiling_aggregate_tok_s=b / s.ceiling_time_s,
                bound=s.bound,
                weight_bytes_per_step=s.weight_bytes,
                kv_bytes_per_step=s.kv_read_bytes + s.kv_write_bytes,
                flops_per_step=s.flops,
                experts_touched=experts_touched(setup.model, b),
                fits=fits(b),
            )
        )
    return tuple(points)


def compute_bound_batch(setup: Setup, depth_tokens: float, limit: int = 1 << 20) -> int | None:
    """Smallest batch at which the modelled step spends longer computing than reading memory."""

    def compute_bound(b: int) -> bool:
        s = setup.step(b, depth_tokens).step
        return s.compute_time_s > 0 and s.compute_time_s >= s.memory_time_s

    if setup.peak.tflops is None:
        return None
    high = 1
    while not compute_bound(high):
        high *= 2
        if high > limit:
            return None
    low = high // 2
    while high - low > 1:
        mid = (low + high) // 2
        if compute_bound(mid):
            high = mid
        else:
            low = mid
    return high


@dataclass(frozen=True, slots=True)
class ContextPoint(_Plain):
    depth_tokens: float
    estimate_tok_s: float
    roofline_tok_s: float  # eta = 1, no fixed costs, KV traffic included
    ceiling_tok_s: float  # weights only (PHYSICS.md section 4): flat in depth
    kv_bytes_per_token: float  # KV read per stream per step at this depth
    bound: str
    fits: bool


def context_curve(
    setup: Setup, depths: Sequence[float], batch: int, fits: Callable[[float], bool]
) -> tuple[ContextPoint, ...]:
    """Decode speed as the cache fills: every step reads the whole cache of each stream."""
    ideal = setup.ideal()
    points = []
    for depth in depths:
        s = setup.step(batch, depth).step
        points.append(
            ContextPoint(
                depth_tokens=float(depth),
                estimate_tok_s=1.0 / s.time_s,
                roofline_tok_s=1.0 / ideal.step(batch, depth).time_s,
                ceiling_tok_s=1.0 / s.ceiling_time_s,
                kv_bytes_per_token=s.kv_read_bytes / batch,
                bound=s.bound,
                fits=fits(depth),
            )
        )
    return tuple(points)


@dataclass(frozen=True, slots=True)
class OffloadPoint(_Plain):
    gpu_layers: int
    estimate_tok_s: float
    ceiling_tok_s: float
    gpu_memory_gb: float
    fits: bool


def offload_curve(
    setup: Setup,
    batch: int,
    depth_tokens: float,
    gpu_memory_gb: Callable[[int], float],
    fits: Callable[[int], bool],
) -> tuple[OffloadPoint, ...]:
    """Speed for every GPU layer count from 0 (all on the CPU) to all layers."""
    points = []
    for n in range(setup.model.n_layers + 1):
        s = setup.with_gpu_layers(n).step(batch, depth_tokens).step
        points.append(
            OffloadPoint(
                gpu_layers=n,
                estimate_tok_s=1.0 / s.time_s,
                ceiling_tok_s=1.0 / s.ceiling_time_s,
                gpu_memory_gb=gpu_memory_gb(n),
                fits=fits(n),
            )
        )
    return tuple(points)


# --- utilisation of a measured run (PHYSICS.md section 8) --------------------------------------


@dataclass(frozen=True, slots=True)
class Utilisation(_Plain):
    measured_decode_tok_s: float
    bytes_per_step: float
    flops_per_step: float
    datasheet_bandwidth_gb_per_s: float
    achieved_bandwidth_gb_per_s: float
    mbu: float
    peak_tflops: float | None
    mfu: float | None
    ceiling_tok_s: float
    estimate_tok_s: float
    ceiling_fraction: float
    estimate_fraction: float
    verdict: str
    findings: tuple[str, ...]
    measured_prefill_tok_s: float | None = None
    prefill_mfu: float | None = None
    prefill_ceiling_tok_s: float | None = None
    prefill_ceiling_fraction: float | None = None
    prefill_estimate_fraction: float | None = None


ABOVE_CEILING = (
    "above the physical ceiling: the bytes per token cannot have been read that fast. Check for a wrong "
    "spec (quantization, bits per weight, active parameters of a MoE, the hardware), a cache hit (prompt "
    "or KV reuse counted as generation), speculative decoding, or mis-counted tokens (prompt tokens "
    "included, another tokenizer's count)"
)
FAR_BELOW = (
    "far below the estimate: look for layers offloaded to the CPU (llama.cpp prints 'offloaded N/M "
    "layers'; 3-10 tok/s on a GPU-class machine is the tell-tale), a CPU fallback (no GPU build, driver "
    "missing), weights spilled into shared system memory, or another process on the device"
)


def utilisation(
    *,
    measured_decode_tok_s: float,
    step: Step,
    ceiling_tok_s: float,
    estimate_tok_s: float,
    band: Interval,
    datasheet_bandwidth_gb_per_s: float,
    peak_tflops: float | None,
    cpu_only_tok_s: float | None = None,
    measured_prefill_tok_s: float | None = None,
    prefill: Prefill | None = None,
) -> Utilisation:
    """MBU = bytes_step * steps/s / BW; MFU = FLOP/s / peak; and a verdict in plain words.

    `measured_decode_tok_s` is per stream, so one step per token of each stream.
    """
    steps_per_s = measured_decode_tok_s
    achieved = step.bytes * steps_per_s
    mbu = achieved / (datasheet_bandwidth_gb_per_s * GB)
    mfu = step.flops * steps_per_s / (peak_tflops * TFLOP) if peak_tflops else None
    ceiling_fraction = measured_decode_tok_s / ceiling_tok_s
    estimate_fraction = measured_decode_tok_s / estimate_tok_s
    findings: list[str] = []
    if measured_decode_tok_s > ceiling_tok_s:
        verdict = f"decode {ceiling_fraction:.0%} of the ceiling: " + ABOVE_CEILING
    elif measured_decode_tok_s > band.high:
        verdict = (
            f"decode {ceiling_fraction:.0%} of the ceiling, above the estimate's 80 % band: a faster engine "
            "or kernels than the fitted ones; nothing is wrong"
        )
    elif measured_decode_tok_s >= band.low:
        verdict = f"decode {ceiling_fraction:.0%} of the ceiling, within the estimate's 80 % band: as expected"
    elif estimate_fraction < 0.5 or (cpu_only_tok_s is not None and measured_decode_tok_s < 2.0 * cpu_only_tok_s):
        verdict = f"decode {ceiling_fraction:.0%} of the ceiling, {estimate_fraction:.0%} of the estimate: " + FAR_BELOW
    else:
        verdict = (
            f"decode {ceiling_fraction:.0%} of the ceiling, below the estimate's 80 % band: engine overheads "
            "(small model, debug build, no CUDA graphs), power or thermal limits, a deeper context than "
            "assumed, or other load on the device"
        )
    if cpu_only_tok_s is not None and measured_decode_tok_s < 2.0 * cpu_only_tok_s:
        findings.append(
            f"the measurement is near CPU-only speed for this model ({cpu_only_tok_s:.3g} tok/s with every layer in "
            "system RAM): check that the layers are on the GPU"
        )
    if mbu > 1.0:
        findings.append(f"memory-bandwidth utilisation {mbu:.0%} exceeds 100 %: the bytes per token are over-counted")

    prefill_mfu = prefill_ceiling = prefill_ceiling_fraction = prefill_estimate_fraction = None
    if measured_prefill_tok_s is not None and prefill is not None:
        flops_per_token = prefill.flops / prefill.prompt_tokens
        if peak_tflops:
            prefill_mfu = flops_per_token * measured_prefill_tok_s / (peak_tflops * TFLOP)
            prefill_ceiling = peak_tflops * TFLOP / flops_per_token
            prefill_ceiling_fraction = measured_prefill_tok_s / prefill_ceiling
        prefill_estimate_fraction = measured_prefill_tok_s / prefill.tok_s
        if prefill_ceiling is not None and measured_prefill_tok_s > prefill_ceiling:
            findings.append(
                f"prefill at {prefill_ceiling_fraction:.0%} of the compute peak is impossible: a prompt-cache hit "
                "(reused prefix) or a mis-counted prompt"
            )
        elif prefill_estimate_fraction < 0.5:
            findings.append(
                f"prefill at {prefill_estimate_fraction:.0%} of the estimate: a small batch/ubatch size, no flash "
                "attention, CPU offload, or a short prompt dominated by fixed costs"
            )
    return Utilisation(
        measured_decode_tok_s=measured_decode_tok_s,
        bytes_per_step=step.bytes,
        flops_per_step=step.flops,
        datasheet_bandwidth_gb_per_s=datasheet_bandwidth_gb_per_s,
        achieved_bandwidth_gb_per_s=achieved / GB,
        mbu=mbu,
        peak_tflops=peak_tflops,
        mfu=mfu,
        ceiling_tok_s=ceiling_tok_s,
        estimate_tok_s=estimate_tok_s,
        ceiling_fraction=ceiling_fraction,
        estimate_fraction=estimate_fraction,
        verdict=verdict,
        findings=tuple(findings),
        measured_prefill_tok_s=measured_prefill_tok_s,
        prefill_mfu=prefill_mfu,
        prefill_ceiling_tok_s=prefill_ceiling,
        prefill_ceiling_fraction=prefill_ceiling_fraction,
        prefill_estimate_fraction=prefill_estimate_fraction,
    )
