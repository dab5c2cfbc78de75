"""Where the model runs: the request's parallelism and offload levers checked and turned into a `Layout`.

`estimate()` hands over the levers (`--tp`, `--pp`, `--link`, `--gpu-layers`, `--offload-experts`,
`--cpu-hw`, `--offload-mode`); this module refuses the combinations that are not modelled, with one
clear line each, builds the layout the cost model runs on (docs/PHYSICS.md section 7), and says
what about it is worth a warning.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from tokometer.catalog import hardware_catalog
from tokometer.catalog.efficiency import efficiency_for
from tokometer.costmodel.layout import (
    Layout,
    Offload,
    OffloadMode,
)
from tokometer.costmodel.links import Link, host_link, parse_interconnect, parse_link
from tokometer.costmodel.roofline import compute_peak
from tokometer.domain.specs import EngineSpec, HardwareSpec, ModelSpec
from tokometer.errors import InputError
from tokometer.usecases.notices import (
    BareAllReduce,
    ExpertOffloadEngine,
    LlamaCppRowSplit,
    Notice,
    UnevenHeads,
)
from tokometer.usecases.policy import DEFAULT_CPU_HARDWARE


def expert_layer_count(value: int | str | None, n_layers: int) -> int | None:
    """`--offload-experts`: a layer count (`30`) or `all`; None means none offloaded.

    llama.cpp's `--n-cpu-moe N` keeps the experts of the first N layers in RAM. A model whose first
    layers are dense (DeepSeek's 3) has fewer expert layers than layers; N counts layers, and the
    share of expert weights moved is taken as `N / n_layers` (exact when every layer, or every k-th
    layer, is MoE).
    """
    if value is None:
        return None
    text = str(value).strip().lower()
    if text == "all":
        return n_layers
    if isinstance(value, bool) or not text.isdigit():
        raise InputError(f"{{offload_experts}} must be a layer count or 'all', got {text!r}", field="offload_experts")
    number = int(text)
    if number > n_layers:
        raise InputError(
            f"{{offload_experts}} {number} is more than the model's {n_layers} layers", field="offload_experts"
        )
    return number


def gpu_layer_count(value: int | float | str | None, n_layers: int) -> int | None:
    """`--gpu-layers`: a layer count (`26`) or a share of the layers (`0.8`); None means all."""
    if value is None:
        return None
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        raise InputError(
            f"{{gpu_layers}} must be a layer count or a fraction like 0.8, got {text!r}", field="gpu_layers"
        ) from None
    if not math.isfinite(number) or number < 0:
        raise InputError(f"{{gpu_layers}} must be zero or more, got {text!r}", field="gpu_layers")
    is_fraction = "." in text or "e" in text.lower() or isinstance(value, float)
    if is_fraction:
        if number > 1:
            raise InputError(f"{{gpu_layers}} as a fraction must be between 0 and 1, got {text}", field="gpu_layers")
        return int(round(number * n_layers))
    if number > n_layers:
        raise InputError(
            f"{{gpu_layers}} {int(number)} is more than the model's {n_layers} layers", field="gpu_layers"
        )
    return int(number)

def build_layout(
    spec: ModelSpec,
    hardware: HardwareSpec,
    engine: EngineSpec,
    compute_dtype: Any,
    *,
    tp: int,
    pp: int,
    link: str | None,
    gpu_layers: int | float | str | None,
    cpu_hw: str | HardwareSpec | None,
    offload_mode: OffloadMode | None,
    offload_experts: int | str | None = None,
    ep: int = 1,
    dp: int = 1,
    nodes: int = 1,
    inter_link: str | None = None,
) -> Layout:
    """Check the parallelism and offload inputs and build the layout (docs/PHYSICS.md section 7)."""
    if pp > spec.n_layers:
        raise InputError(f"{{pp}} {pp} is more stages than the model's {spec.n_layers} layers", field="pp")
    n_gpu = gpu_layer_count(gpu_layers, spec.n_layers)
    devices = tp * pp * dp
    if ep > 1 or dp > 1 or nodes > 1 or inter_link is not None:
        if n_gpu is not None or offload_experts is not None:
            raise InputError("{ep}, {dp} and {nodes} together with offload are not modelled; use one lever at a time", field="ep")
        return cluster_layout(spec, hardware, tp=tp, pp=pp, ep=ep, dp=dp, nodes=nodes, link=link, inter_link=inter_link)
    if offload_experts is not None:
        return _expert_layout(spec, hardware, engine, compute_dtype, offload_experts, n_gpu, devices, cpu_hw, offload_mode, link)
    if n_gpu is None:
        if cpu_hw is not None or offload_mode is not None:
            raise InputError(
                "{cpu_hw} and {offload_mode} need {gpu_layers} N (or a share like 0.8), or {offload_experts}",
                field="gpu_layers",
            )
        if link is not None and devices == 1:
            raise InputError("{link} needs {tp} or {pp} (or {gpu_layers} with {offload_mode} stream)", field="link")
        return Layout(tp=tp, pp=pp, link=parse_link(link, hardware) if devices > 1 else None)
    if devices > 1:
        raise InputError("{gpu_layers} together with {tp}/{pp} is not modelled; use one lever at a time", field="gpu_layers")
    if hardware.kind == "cpu":
        raise InputError(f"{{gpu_layers}} needs a GPU: {hardware.name} is a CPU memory system", field="gpu_layers")
    cpu = _cpu_memory(cpu_hw)
    host = parse_link(link, hardware) if link else host_link(hardware)
    return Layout(offload=cpu_offload(engine, hardware, compute_dtype, n_gpu, cpu, offload_mode or "cpu", host))


NVLINK_DOMAIN_PREFIXES = ("gb",)  # Grace-Blackwell racks (GB200/GB300 NVL72, NVL36) share NVLink across trays


def cluster_layout(
    spec: ModelSpec, hardware: HardwareSpec, *, tp: int, pp: int, ep: int, dp: int, nodes: int,
    link: str | None, inter_link: str | None, overlap: bool = False, ep_imbalance: float = 1.0,
) -> Layout:
    """TP x DP x PP GPUs over `nodes` nodes, the MoE experts over `ep` of each stage's tp x dp GPUs."""
    devices = tp * pp * dp
    if ep > 1 and not spec.is_moe:
        raise InputError(f"{{ep}} {ep} needs a mixture-of-experts model; {spec.name} is dense", field="ep")
    if ep > 1 and (tp * dp) % ep:
        raise InputError(
            f"{{ep}} {ep} must divide the tp x dp = {tp * dp} GPUs the MoE layers span (e.g. --ep {tp * dp})", field="ep"
        )
    if spec.is_moe and ep > spec.n_experts:
        raise InputError(f"{{ep}} {ep} is more ranks than the model's {spec.n_experts} experts", field="ep")
    if devices % nodes:
        raise InputError(f"{{nodes}} {nodes} must divide the {devices} GPUs (tp x dp x pp)", field="nodes")
    if not (math.isfinite(ep_imbalance) and ep_imbalance >= 1.0):
        raise InputError(f"the EP imbalance must be 1 or more (busiest rank over the mean), got {ep_imbalance!r}", field="ep")
    if inter_link is not None and nodes == 1 and not parse_interconnect(inter_link).domain_gpus:
        raise InputError("{inter_link} needs {nodes} 2 or more", field="inter_link")
    node_link = parse_link(link, hardware) if devices > 1 else None
    between = parse_interconnect(inter_link) if (nodes > 1 or inter_link is not None) else None
    if between is not None and between.domain_gpus and not hardware.id.startswith(NVLINK_DOMAIN_PREFIXES):
        raise InputError(
            f"{{inter_link}} {between.name} is a GB200/GB300 rack's NVLink domain; {hardware.name} nodes join over a "
            "network (ib-ndr, ib-xdr, roce-400...)", field="inter_link",
        )
    return Layout(tp=tp, pp=pp, link=node_link, ep=ep, dp=dp, nodes=nodes, inter_link=between, overlap=overlap,
                  ep_imbalance=ep_imbalance)


def _cpu_memory(cpu_hw: str | HardwareSpec | None) -> HardwareSpec:
    """The CPU memory system offloaded weights live in (default: dual-channel DDR5)."""
    cpu = cpu_hw if isinstance(cpu_hw, HardwareSpec) else hardware_catalog().get(cpu_hw or DEFAULT_CPU_HARDWARE)
    if cpu.kind != "cpu":
        raise InputError(
            f"{{cpu_hw}} must be a CPU memory system (e.g. {DEFAULT_CPU_HARDWARE}), {cpu.name} is a {cpu.kind}",
            field="cpu_hw",
        )
    return cpu


def _expert_layout(
    spec: ModelSpec,
    hardware: HardwareSpec,
    engine: EngineSpec,
    compute_dtype: Any,
    offload_experts: int | str,
    n_gpu: int | None,
    devices: int,
    cpu_hw: str | HardwareSpec | None,
    offload_mode: OffloadMode | None,
    link: str | None,
) -> Layout:
    """`--offload-experts N|all`: every layer on the GPU, the routed experts of N layers in system RAM
    and computed on the CPU (docs/PHYSICS.md section 7). N = 0 is no offload at all."""
    if not spec.is_moe:
        raise InputError(
            f"{{offload_experts}} needs a mixture-of-experts model; {spec.name} is dense "
            "(offload whole layers with {gpu_layers})",
            field="offload_experts",
        )
    n_experts = expert_layer_count(offload_experts, spec.n_layers)
    if n_gpu is not None:
        raise InputError(
            "{offload_experts} together with {gpu_layers} is not modelled; use one lever at a time", field="offload_experts"
        )
    if devices > 1:
        raise InputError(
            "{offload_experts} together with {tp}/{pp} is not modelled; use one lever at a time", field="offload_experts"
        )
    if offload_mode == "stream":
        raise InputError(
            "{offload_experts} computes the experts on the CPU; {offload_mode} stream does not apply", field="offload_mode"
        )
    if hardware.kind == "cpu":
        raise InputError(f"{{offload_experts}} needs a GPU: {hardware.name} is a CPU memory system", field="offload_experts")
    cpu = _cpu_memory(cpu_hw)
    if not n_experts:
        return Layout()
    host = parse_link(link, hardware) if link else host_link(hardware)
    off = cpu_offload(engine, hardware, compute_dtype, spec.n_layers, cpu, "cpu", host)
    return Layout(offload=replace(off, expert_layers=n_experts))


def cpu_offload(
    engine: EngineSpec,
    hardware: HardwareSpec,
    compute_dtype: Any,
    gpu_layers: int,
    cpu: HardwareSpec | None = None,
    mode: OffloadMode = "cpu",
    link: Link | None = None,
) -> Offload:
    """`gpu_layers` on `hardware`, the rest on `cpu` (default: dual-channel DDR5) run by the same engine."""
    cpu = cpu or hardware_catalog().get(DEFAULT_CPU_HARDWARE)
    return Offload(
        gpu_layers=gpu_layers,
        cpu=cpu,
        cpu_efficiency=efficiency_for(engine, cpu, "cpu"),
        link=link or host_link(hardware),
        mode=mode,
        cpu_peak=compute_peak(cpu, compute_dtype),
    )


def layout_notes(spec: ModelSpec, engine: EngineSpec, layout: Layout) -> list[Notice | str]:
    notes: list[Notice | str] = []
    if layout.offload is not None and layout.offload.expert_layers and (engine.based_on or engine.id) != "llama-cpp":
        notes.append(ExpertOffloadEngine(engine.name))
    if layout.tp > 1 and spec.n_heads and spec.n_heads % layout.tp:
        notes.append(UnevenHeads(spec.n_heads, layout.tp))
    if layout.tp > 1 and (engine.based_on or engine.id) == "llama-cpp":
        notes.append(LlamaCppRowSplit())
    if layout.tp > 1 and not spec.hidden_size:
        notes.append(BareAllReduce())
    return notes
