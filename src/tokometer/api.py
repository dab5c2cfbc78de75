"""Use-cases shared by the CLI and the web app: resolve inputs from catalogs or bare numbers, predict.

`estimate(...)` is the one entry point: it turns names and numbers into specs, runs the pure cost
model and returns an `Estimate`, whose `to_dict()` is the stable JSON shape of `--json` and the API.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokometer.catalog import engine_catalog, hardware_catalog, model_catalog, quant_catalog
from tokometer.catalog.efficiency import efficiency_for, multi_device_log_sd
from tokometer.costmodel.architecture import bare_spec
from tokometer.costmodel.levers import (
    ALLREDUCE_LAUNCH_US,
    LINK_EFFICIENCY,
    LINK_SOURCES,
    OFFLOAD_MODES,
    BatchPoint,
    ContextPoint,
    Layout,
    LeverStep,
    Link,
    Offload,
    OffloadPoint,
    Setup,
    Speculation,
    activation_bytes,
    add_weights,
    allreduce_time_s,
    batch_curve,
    check_speculation,
    compute_bound_batch,
    context_curve,
    experts_touched,
    gpu_layer_count,
    host_link,
    kv_shards,
    kv_view,
    layout_prefill,
    offload_curve,
    parse_link,
    speculate,
    split_weights,
)
from tokometer.costmodel.memory import kv_cache_bytes, weight_bytes
from tokometer.costmodel.predict import (
    MemoryPlan,
    Peak,
    Prefill,
    Step,
    compute_peak,
    interval,
    kv_bytes_per_token,
    memory_plan,
    prefill,
    ridge_batch,
)
from tokometer.errors import InputError, UnknownEntryError, require_non_negative, require_positive
from tokometer.specs import (
    Efficiency,
    EngineSpec,
    HardwareSpec,
    Interval,
    ModelSpec,
    ParamGroups,
    QuantFormat,
    Workload,
)
from tokometer.units import BILLION, GB

if TYPE_CHECKING:
    pass

DEFAULT_MODEL = "llama-3.1-8b"
DEFAULT_HARDWARE = "rtx-4090"
DEFAULT_QUANT = "q4-k-m"
READING_SPEED_TOK_S = (5.0, 10.0)
BROKEN_STREAM_TOK_S = 3.0
DEFAULT_CPU_HARDWARE = "ddr5-dual-channel"  # dual-channel DDR5-5600 desktop, 89.6 GB/s
DEFAULT_ACCEPTANCE = 0.7
DEFAULT_DRAFT_TOKENS = 4
# `tokometer fit` and the "drop a quant step" advice walk this ladder, best quality first
QUANT_LADDER = ("bf16", "fp8", "q8-0", "q6-k", "q5-k-m", "q4-k-m", "q3-k-m", "q2-k-file")
CURVE_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
CURVE_DEPTHS = (0, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


def resolve_model(name: str) -> ModelSpec:
    """A catalog name, else a file/folder/Hub id through `tokometer.ingest` (when installed)."""
    preset = model_catalog().find(name)
    if preset is not None:
        return preset.spec
    looks_external = Path(name).exists() or name.endswith((".gguf", ".json", ".safetensors")) or "/" in name
    if looks_external:
        from tokometer.ingest import load_model

        spec: ModelSpec = load_model(name)
        return spec
    raise UnknownEntryError("model", name, model_catalog().ids + [a for p in model_catalog() for a in p.aliases])


def resolve_hardware(
    name: str | None,
    *,
    bandwidth_gb_per_s: float | None = None,
    memory_gb: float | None = None,
    tflops: float | None = None,
) -> HardwareSpec:
    """A catalog entry (numbers given alongside override it) or a custom device from bare numbers."""
    require_positive("--bandwidth", bandwidth_gb_per_s)
    require_positive("--memory-gb", memory_gb)
    require_positive("--tflops", tflops)
    if name:
        base = hardware_catalog().get(name)
        changes: dict[str, Any] = {}
        if bandwidth_gb_per_s:
            changes["memory_bandwidth_gb_per_s"] = bandwidth_gb_per_s
        if memory_gb:
            changes["memory_gb"] = memory_gb
        if tflops:
            changes["fp16_tflops"] = tflops
        if changes:
            changes["name"] = base.name + " (custom numbers)"
            changes["source"] = "user-supplied numbers over " + base.source
        return replace(base, **changes) if changes else base
    if bandwidth_gb_per_s is None:
        return hardware_catalog().get(DEFAULT_HARDWARE)
    return HardwareSpec(
        id="custom",
        name="custom device",
        vendor="custom",
        kind="gpu",
        segment="datacenter",
        memory_gb=memory_gb or math.inf,
        memory_bandwidth_gb_per_s=bandwidth_gb_per_s,
        fp16_tflops=tflops,
        launch_year=None,
        source="user-supplied numbers",
    )


def resolve_quant(name: str | None, bits: float | None, model: ModelSpec) -> QuantFormat | None:
    """`--bits` wins; then `--quant`; then the model's published dtype; None means 'exact file bytes'."""
    require_positive("--bits", bits)
    if bits is not None:
        if bits > 64:
            raise InputError(f"--bits must be at most 64, got {bits:g}")
        return QuantFormat(
            id=f"{bits:g}bit",
            name=f"{bits:g} bits/weight",
            bits_per_weight=bits,
            usage="weights",
            compute_dtype="fp8" if bits == 8 else "fp16",
            source="user-supplied bits per weight",
        )
    if name:
        return quant_catalog().get(name)
    if model.exact_weight_bytes is not None:
        return None
    return quant_catalog().get(model.default_quant or "bf16")


def is_quantized(fmt: QuantFormat | None, weights: ParamGroups, model: ModelSpec) -> bool:
    """Whether weights go through block-dequantizing kernels (Q4_K, GPTQ, MLC q4...) rather than plain floats."""
    if fmt is not None and fmt.id not in ("file-size",) and not fmt.id.endswith("bit"):
        return fmt.kind in ("block", "mix", "group")
    return model.total_params > 0 and weights.total * 8.0 / model.total_params < 12.0


def format_peak(hardware: HardwareSpec, fmt: QuantFormat | None, engine: EngineSpec) -> Peak:
    """The compute peak a weight format runs at on this hardware under this engine."""
    return compute_peak(hardware, fmt.compute_dtype if fmt else "fp16", fp16_accumulate=engine.fp16_accumulate)


def setup_for_format(
    spec: ModelSpec, fmt: QuantFormat | None, weights: ParamGroups, base: Setup, engine: EngineSpec, layout: Layout | None = None
) -> Setup:
    """Another model or weight format on `base`'s hardware, efficiency and KV dtype (draft, smaller quant)."""
    return Setup(
        spec,
        weights,
        base.hardware,
        base.efficiency,
        format_peak(base.hardware, fmt, engine),
        base.kv_bytes_per_element,
        is_quantized(fmt, weights, spec),
        layout if layout is not None else Layout(),
    )


def quant_runs(quant: QuantFormat, hardware: HardwareSpec, engine: EngineSpec) -> bool:
    """Whether `tokometer fit` and the quant advice offer this format: FP8 needs hardware FP8 and an
    engine with FP8 kernels (llama.cpp has no FP8 weight type)."""
    if quant.id == "fp8":
        return hardware.fp8_tflops is not None and (engine.based_on or engine.id) != "llama-cpp"
    return True


def default_engine(hardware: HardwareSpec, quant: QuantFormat | None) -> EngineSpec:
    engines = engine_catalog()
    ggml = quant is None or quant.kind in ("block", "mix") or quant.ggml_type is not None
    if hardware.vendor == "apple" or hardware.kind in ("cpu", "apu") or hardware.segment == "laptop":
        return engines.get("llama-cpp")
    if hardware.segment == "datacenter" and not ggml:
        return engines.get("vllm")
    return engines.get("llama-cpp")


@dataclass(frozen=True)
class Draft:
    """The draft model of speculative decoding and what it buys."""

    model: ModelSpec
    quant: QuantFormat | None
    weights: ParamGroups
    setup: Setup
    speculation: Speculation


@dataclass(frozen=True)
class OffloadPlan:
    """Where the layers of a partially offloaded model sit, and what each side needs."""

    offload: Offload
    n_layers: int
    gpu_weights_gb: float
    cpu_weights_gb: float
    gpu_kv_gb: float
    cpu_kv_gb: float
    cpu_available_gb: float
    gpu_only_tok_s: float
    cpu_only_tok_s: float
    advice: str | None

    @property
    def cpu_memory_gb(self) -> float:
        return self.cpu_weights_gb + self.cpu_kv_gb

    @property
    def fits_cpu(self) -> bool:
        return self.cpu_memory_gb <= self.cpu_available_gb


@dataclass(frozen=True)
class Estimate:
    """Everything one prediction says, with the inputs it was made from."""

    model: ModelSpec
    hardware: HardwareSpec
    quant: QuantFormat | None
    engine: EngineSpec
    efficiency: Efficiency
    workload: Workload
    weights: ParamGroups
    kv_dtype: QuantFormat
    peak: Peak
    step: Step
    ceiling_tok_s: float
    estimate_tok_s: float
    estimate_interval: Interval
    prefill: Prefill | None
    ttft_s: float | None
    tpot_s: float
    e2e_s: float | None
    memory: MemoryPlan
    ridge_batch: float | None
    quantized: bool = False
    warnings: tuple[str, ...] = field(default_factory=tuple)
    setup: Setup | None = None  # the model laid out on the devices; None: one device
    lever_step: LeverStep | None = None
    draft: Draft | None = None
    offload: OffloadPlan | None = None
    kv_model: ModelSpec | None = None  # whose KV cache the (GPU) memory holds: draft, TP copies, GPU layers

    @functools.cached_property
    def layout_setup(self) -> Setup:
        if self.setup is not None:
            return self.setup
        return Setup(
            self.model, self.weights, self.hardware, self.efficiency, self.peak,
            self.kv_dtype.bytes_per_weight, self.quantized,
        )

    def _free_kv_bytes(self) -> float:
        m = self.memory
        return (m.available_gb - m.weights_gb - m.runtime_overhead_gb) * GB

    def _session_kv_bytes(self, depth_tokens: float) -> float:
        return kv_cache_bytes(self.kv_model or self.model, depth_tokens, self.kv_dtype.bytes_per_weight)

    def batch_points(self, batches: Sequence[int] | None = None) -> tuple[BatchPoint, ...]:
        """Per-stream and aggregate decode at each batch; `fits`: KV for that many sessions fits."""
        chosen = sorted(set(batches or CURVE_BATCHES) | {self.step.batch})
        free = self._free_kv_bytes()
        per_session = self._session_kv_bytes(self.memory.context_tokens)
        return batch_curve(self.layout_setup, chosen, self.step.depth_tokens, lambda b: per_session * b <= free)

    def context_points(self, depths: Sequence[float] | None = None) -> tuple[ContextPoint, ...]:
        """Decode speed as the cache fills, up to the model's maximum context."""
        limit = self.model.max_context_tokens
        default = [d for d in CURVE_DEPTHS if limit is None or d <= limit] + ([limit] if limit else [])
        chosen = sorted(set(depths or default) | {self.step.depth_tokens})
        free = self._free_kv_bytes()
        sessions = self.memory.sessions
        return context_curve(
            self.layout_setup, chosen, self.step.batch, lambda c: self._session_kv_bytes(c) * sessions <= free
        )

    def offload_points(self) -> tuple[OffloadPoint, ...]:
        """Speed and GPU memory for every number of layers on the GPU, from none to all.

        Without `--gpu-layers` the layers that leave the GPU go to the default CPU memory system;
        () for a CPU or a layout over several devices.
        """
        plan = self.offload
        if plan is None:
            if self.hardware.kind == "cpu" or self.layout_setup.layout.devices > 1:
                return ()
            dtype = self.quant.compute_dtype if self.quant else "fp16"
            off = cpu_offload(self.engine, self.hardware, dtype, self.model.n_layers)
            plan = OffloadPlan(off, self.model.n_layers, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, None)
            setup = replace(self.layout_setup, layout=Layout(offload=off))
        else:
            setup = self.layout_setup
        available = self.memory.available_gb
        context = self.memory.context_tokens
        sessions = self.memory.sessions
        extra = [self.draft.weights] if self.draft else []
        draft_kv = (
            kv_cache_bytes(self.draft.model, context, self.kv_dtype.bytes_per_weight) * sessions if self.draft else 0.0
        )

        def gpu_gb(n: int) -> float:
            gpu, _ = split_weights(self.weights, n / plan.n_layers, n == plan.n_layers or plan.offload.mode == "stream")
            kv_share = 1.0 if plan.offload.mode == "stream" else n / plan.n_layers
            kv = kv_cache_bytes(self.model, context, self.kv_dtype.bytes_per_weight) * sessions * kv_share
            return (add_weights(gpu, *extra).total + kv + draft_kv) / GB + self.memory.runtime_overhead_gb

        return offload_curve(setup, self.step.batch, self.step.depth_tokens, gpu_gb, lambda n: gpu_gb(n) <= available)

    @property
    def bits_per_weight(self) -> float:
        params = self.model.total_params
        return self.weights.total * 8.0 / params if params else float("nan")

    def explanation(self) -> list[str]:
        """Plain lines on why: which bound and where the bytes go."""
        s = self.step
        per = s.batch
        lines = []
        w = s.weight_bytes / GB
        kv = (s.kv_read_bytes + s.kv_write_bytes) / GB
        what = "active " if self.model.is_moe else ""
        lines.append(
            f"decode is {s.bound}-bound: each step reads {w:.2f} GB of {what}weights"
            + (f" + {kv:.2f} GB of KV cache at {s.depth_tokens:,.0f} tokens" if kv > 0.0005 else "")
            + (f" for {per} streams" if per > 1 else "")
            + f" from {self.hardware.memory_bandwidth_gb_per_s:,.0f} GB/s"
            + (f" on each of {self.layout_setup.layout.tp} devices" if self.layout_setup.layout.tp > 1 else "")
        )
        realised = self.estimate_tok_s / self.ceiling_tok_s if self.ceiling_tok_s else float("nan")
        lines.append(
            f"estimate = {realised:.0%} of the ceiling: {self.efficiency.bandwidth_fraction_for(self.quantized):.0%} of datasheet bandwidth "
            f"+ {s.overhead_time_s * 1e3:.2f} ms/token of {self.engine.name} overhead"
            + (f" ({self.efficiency.source})" if self.efficiency.source else "")
        )
        if self.model.is_moe:
            lines.append(
                f"MoE: {self.model.n_experts_per_token} of {self.model.n_experts} experts per token: reads "
                f"{self.model.active_params() / BILLION:.1f} B of {self.model.total_params / BILLION:.1f} B parameters, "
                f"but memory holds them all"
            )
        if self.prefill is not None:
            lines.append(
                f"prefill of {self.prefill.prompt_tokens:,} tokens is {self.prefill.bound}-bound: "
                f"{self.prefill.flops / 1e12:.1f} TFLOP at {self.prefill.efficiency:.0%} of the "
                f"{self.peak.tflops:g} TFLOPS {self.peak.dtype} peak"
            )
        lines += self._lever_lines()
        return lines

    def _lever_lines(self) -> list[str]:
        lines = []
        lay = self.layout_setup.layout
        ls = self.lever_step
        if ls is not None and lay.devices > 1 and lay.link is not None:
            speedup = ls.single.time_s / ls.step.time_s
            if lay.tp > 1:
                lines.append(
                    f"tensor parallel over {lay.tp}: each device reads 1/{lay.tp} of the weights, then "
                    f"{2 * self.model.n_layers} all-reduces over {lay.link.name} cost {ls.allreduce_time_s * 1e3:.2f} ms; "
                    f"{speedup:.2f}x one device, never {lay.tp}x, since per-layer launches "
                    f"({(self.step.overhead_time_s - ls.comm_time_s) * 1e3:.2f} ms) do not shrink"
                )
            if lay.pp > 1:
                lines.append(
                    f"pipeline over {lay.pp} stages: a token passes the stages one after another "
                    f"(+{ls.hop_time_s * 1e6:.0f} us of hops), so it adds memory, not speed"
                    + (f" ({speedup:.2f}x one device)" if lay.tp == 1 else "")
                )
        if self.offload is not None and ls is not None:
            off = self.offload.offload
            where = "system RAM" if off.mode == "cpu" else f"PCIe ({off.link.name})"
            lines.append(
                f"{off.gpu_layers} of {self.offload.n_layers} layers on the GPU: GPU part {ls.gpu_time_s * 1e3:.1f} ms, "
                f"{where} part {max(ls.cpu_time_s, ls.transfer_time_s) * 1e3:.1f} ms per token; the times add, so the "
                f"slow part dominates ({self.offload.gpu_only_tok_s:.3g} tok/s all on GPU, "
                f"{self.offload.cpu_only_tok_s:.3g} tok/s with none)"
            )
        if self.draft is not None:
            sp = self.draft.speculation
            lines.append(
                f"speculative decoding with {self.draft.model.name}: {sp.tokens_per_pass:.2f} tokens per target pass "
                f"at acceptance {sp.acceptance:g}, k={sp.draft_tokens}; a pass costs {sp.pass_time_s * 1e3:.1f} ms "
                f"({sp.draft_tokens} draft steps + one verification) -> {sp.speedup:.2f}x"
            )
        return lines

    def to_dict(self) -> dict[str, Any]:
        s = self.step
        batch = max(1, s.batch)
        m = self.memory
        return {
            "model": {
                "name": self.model.name,
                "id": self.model.id,
                "architecture": self.model.architecture,
                "total_params": self.model.total_params,
                "active_params": self.model.active_params(1.0),
                "weight_bytes": self.weights.total,
                "bits_per_weight": self.bits_per_weight,
                "quant": self.quant.id if self.quant else "file",
                "n_layers": self.model.n_layers,
                "is_moe": self.model.is_moe,
                "source": self.model.source,
            },
            "hardware": {
                "id": self.hardware.id,
                "name": self.hardware.name,
                "memory_bandwidth_gb_per_s": self.hardware.memory_bandwidth_gb_per_s,
                "memory_gb": self.hardware.memory_gb if math.isfinite(self.hardware.memory_gb) else None,
                "peak_tflops": self.peak.tflops,
                "peak_dtype": self.peak.dtype,
                "source": self.hardware.source,
            },
            "engine": {"id": self.engine.id, "name": self.engine.name, "efficiency": self.efficiency.to_dict()},
            "workload": self.workload.to_dict(),
            "decode": {
                "ceiling_tok_s": self.ceiling_tok_s,
                "estimate_tok_s": self.estimate_tok_s,
                "interval_tok_s": self.estimate_interval.to_dict(),
                "realised_fraction": self.estimate_tok_s / self.ceiling_tok_s,
                "aggregate_tok_s": self.estimate_tok_s * batch,
                "aggregate_ceiling_tok_s": self.ceiling_tok_s * batch,
                # issue 11: say what the aggregate is; the steady state of B streams is `tokometer simulate`
                "aggregate_basis": "one decode step of the batch at the prompt depth; prefill not charged, KV not grown",
                "batch": batch,
                "depth_tokens": s.depth_tokens,
                "bytes_per_token": s.bytes / batch,
                "weight_bytes_per_token": s.weight_bytes / batch,
                "kv_bytes_per_token": s.kv_read_bytes / batch,
                "kv_write_bytes_per_token": s.kv_write_bytes / batch,
                "bytes_per_step": s.bytes,
                "flops_per_token": s.flops / batch,
                "step_time_s": s.time_s,
                "bound": s.bound,
                "times_s": {"memory": s.memory_time_s, "compute": s.compute_time_s, "overhead": s.overhead_time_s},
                "ridge_batch": self.ridge_batch,
            },
            "kv_cache": {
                "dtype": self.kv_dtype.id,
                "bytes_per_token": kv_bytes_per_token(self.model, self.kv_dtype.bytes_per_weight),
                "bytes_per_token_long_context": kv_bytes_per_token(
                    self.model, self.kv_dtype.bytes_per_weight, math.inf
                ),
                "bytes_at_context": kv_cache_bytes(
                    self.model, s.depth_tokens, self.kv_dtype.bytes_per_weight
                ),
            },
            "prefill": {
                "prompt_tokens": self.workload.prompt_tokens,
                "tok_s": self.prefill.tok_s if self.prefill else None,
                "time_s": self.prefill.time_s if self.prefill else None,
                "ttft_s": self.ttft_s,
                "flops": self.prefill.flops if self.prefill else None,
                "bound": self.prefill.bound if self.prefill else None,
                "efficiency": self.prefill.efficiency if self.prefill else None,
            },
            "latency": {
                "ttft_s": self.ttft_s,
                "tpot_s": self.tpot_s,
                "e2e_s": self.e2e_s,
                "output_tokens": self.workload.output_tokens,
                "verdict": reading_verdict(self.estimate_tok_s),
            },
            "memory": {
                "total_gb": m.total_gb,
                "weights_gb": m.weights_gb,
                "kv_cache_gb": m.kv_cache_gb,
                "runtime_overhead_gb": m.runtime_overhead_gb,
                "available_gb": m.available_gb if math.isfinite(m.available_gb) else None,
                "device_memory_gb": m.device_memory_gb if math.isfinite(m.device_memory_gb) else None,
                "fits": m.fits,
                "context_tokens": m.context_tokens,
                "sessions": m.sessions,
                "max_context_tokens": m.max_context_tokens,
                "max_context_memory_tokens": m.max_context_memory_tokens,
                "max_sessions": m.max_sessions,
            },
            "speculative": self._speculative_dict(),
            "parallel": self._parallel_dict(),
            "offload": self._offload_dict(),
            "batching": self._batching_dict(),
            "context": self._context_dict(),
            "explanation": self.explanation(),
            "warnings": list(self.warnings),
        }

    def _speculative_dict(self) -> dict[str, Any]:
        d = self.draft
        sp = d.speculation if d else None
        tpot = sp.pass_time_s / sp.tokens_per_pass if sp else None
        return {
            "active": d is not None,
            "draft": (d.model.id or d.model.name) if d else None,
            "draft_quant": (d.quant.id if d.quant else "file") if d else None,
            "draft_tokenizer": d.model.tokenizer if d else None,
            "draft_weights_gb": d.weights.total / GB if d else None,
            "acceptance": sp.acceptance if sp else None,
            "draft_tokens": sp.draft_tokens if sp else None,
            "tokens_per_pass": sp.tokens_per_pass if sp else None,
            "draft_step_time_s": sp.draft_step_time_s if sp else None,
            "verify_time_s": sp.verify_time_s if sp else None,
            "pass_time_s": sp.pass_time_s if sp else None,
            "tok_s": sp.tok_s if sp else None,
            "ceiling_tok_s": sp.ceiling_tok_s if sp else None,
            "baseline_tok_s": sp.baseline_tok_s if sp else None,
            "speedup": sp.speedup if sp else None,
            "break_even_acceptance": sp.break_even_acceptance if sp else None,
            "tpot_s": tpot,
            "e2e_s": (self.ttft_s + (self.workload.output_tokens - 1) * tpot)
            if tpot is not None and self.ttft_s is not None
            else None,
        }

    def _parallel_dict(self) -> dict[str, Any]:
        lay = self.layout_setup.layout
        ls = self.lever_step or LeverStep(step=self.step, single=self.step)
        link = lay.link
        sharded = lay.tp > 1 and link is not None
        payload = activation_bytes(self.model, self.step.batch)
        usable = self.memory.available_gb / lay.devices
        per_device = self.memory.total_gb / lay.devices
        return {
            "tp": lay.tp,
            "pp": lay.pp,
            "devices": lay.devices,
            "link": link.name if link else None,
            "link_kind": link.kind if link else None,
            "link_gb_per_s": link.bandwidth_gb_per_s if link else None,
            "link_efficiency": LINK_EFFICIENCY,
            "link_hop_latency_us": link.hop_latency_us if link else None,
            "allreduce_launch_us": ALLREDUCE_LAUNCH_US,
            "allreduces_per_step": 2 * self.model.n_layers if sharded else 0,
            "allreduce_bytes": payload if sharded else 0.0,
            "allreduce_each_s": allreduce_time_s(payload, lay.tp, link) if sharded and link else 0.0,
            "allreduce_time_s": ls.allreduce_time_s,
            "pipeline_hops": lay.pp - 1,
            "pipeline_hop_time_s": ls.hop_time_s,
            "comm_time_s": ls.allreduce_time_s + ls.hop_time_s,
            "kv_shards": kv_shards(self.model, lay.tp),
            "single_device_tok_s": 1.0 / ls.single.time_s,
            "speedup": ls.single.time_s / ls.step.time_s if self.offload is None else None,
            "memory_per_device_gb": per_device,
            "usable_per_device_gb": usable if math.isfinite(usable) else None,
            "fits_per_device": per_device <= usable,
            "sources": list(LINK_SOURCES) if link else [],
        }

    def _offload_dict(self) -> dict[str, Any]:
        plan = self.offload
        ls = self.lever_step
        keys = (
            "gpu_layers n_layers cpu_layers mode cpu_hw cpu_bandwidth_gb_per_s link link_gb_per_s "
            "gpu_bytes_per_token cpu_bytes_per_token gpu_time_s cpu_time_s transfer_time_s gpu_only_tok_s "
            "cpu_only_tok_s gpu_weights_gb cpu_weights_gb gpu_kv_gb cpu_kv_gb cpu_memory_gb cpu_available_gb "
            "fits_cpu advice"
        ).split()
        if plan is None or ls is None:
            out: dict[str, Any] = {"active": False, **dict.fromkeys(keys)}
            out["gpu_layers"] = out["n_layers"] = self.model.n_layers
            out["cpu_layers"] = 0
            out["curve"] = []
            return out
        off = plan.offload
        batch = max(1, self.step.batch)
        return {
            "active": True,
            "gpu_layers": off.gpu_layers,
            "n_layers": plan.n_layers,
            "cpu_layers": plan.n_layers - off.gpu_layers,
            "mode": off.mode,
            "cpu_hw": off.cpu.id,
            "cpu_bandwidth_gb_per_s": off.cpu.memory_bandwidth_gb_per_s,
            "link": off.link.name,
            "link_gb_per_s": off.link.bandwidth_gb_per_s,
            "gpu_bytes_per_token": ls.gpu_bytes / batch,
            "cpu_bytes_per_token": ls.cpu_bytes / batch,
            "gpu_time_s": ls.gpu_time_s,
            "cpu_time_s": ls.cpu_time_s,
            "transfer_time_s": ls.transfer_time_s,
            "gpu_only_tok_s": plan.gpu_only_tok_s,
            "cpu_only_tok_s": plan.cpu_only_tok_s,
            "gpu_weights_gb": plan.gpu_weights_gb,
            "cpu_weights_gb": plan.cpu_weights_gb,
            "gpu_kv_gb": plan.gpu_kv_gb,
            "cpu_kv_gb": plan.cpu_kv_gb,
            "cpu_memory_gb": plan.cpu_memory_gb,
            "cpu_available_gb": plan.cpu_available_gb,
            "fits_cpu": plan.fits_cpu,
            "advice": plan.advice,
            "curve": [p.to_dict() for p in self.offload_points()],
        }

    def _batching_dict(self) -> dict[str, Any]:
        s = self.step
        points = self.batch_points()
        return {
            "batch": s.batch,
            "per_stream_tok_s": self.estimate_tok_s,
            "aggregate_tok_s": self.estimate_tok_s * s.batch,
            "ridge_batch": self.ridge_batch,
            "compute_bound_batch": compute_bound_batch(self.layout_setup, s.depth_tokens),
            "max_batch": self.memory.max_sessions,
            "n_experts": self.model.n_experts if self.model.is_moe else None,
            "experts_per_token": self.model.n_experts_per_token if self.model.is_moe else None,
            "experts_touched": experts_touched(self.model, s.batch),
            "kv_bytes_per_step": s.kv_read_bytes + s.kv_write_bytes,
            "curve": [p.to_dict() for p in points],
        }

    def _context_dict(self) -> dict[str, Any]:
        s = self.step
        empty = self.layout_setup.step(s.batch, 0.0).step
        return {
            "depth_tokens": s.depth_tokens,
            "kv_dtype": self.kv_dtype.id,
            "kv_bytes_per_token": kv_bytes_per_token(self.model, self.kv_dtype.bytes_per_weight),
            "empty_tok_s": 1.0 / empty.time_s,
            "at_depth_tok_s": self.estimate_tok_s,
            "relative_speed": empty.time_s / s.time_s,
            "max_context_tokens": self.memory.max_context_tokens,
            "curve": [p.to_dict() for p in self.context_points()],
        }


def reading_verdict_code(tok_s: float) -> str:
    """Seed 002: reading speed is about 5-10 tok/s; below about 2-3 tok/s streaming feels broken.

    A stable code (broken, slow, reading, fast) that pages translate; `reading_verdict` words it.
    """
    if tok_s < BROKEN_STREAM_TOK_S:
        return "broken"
    if tok_s < READING_SPEED_TOK_S[0]:
        return "slow"
    if tok_s < READING_SPEED_TOK_S[1]:
        return "reading"
    return "fast"


READING_VERDICTS = {
    "broken": "too slow: below about 3 tok/s a streamed answer feels broken",
    "slow": "slower than reading speed (5-10 tok/s): usable, but you will wait",
    "reading": "about reading speed (5-10 tok/s)",
    "fast": "faster than you can read",
}


def reading_verdict(tok_s: float) -> str:
    return READING_VERDICTS[reading_verdict_code(tok_s)]


def estimate(
    model: str | ModelSpec | None = None,
    hw: str | HardwareSpec | None = None,
    *,
    params_b: float | None = None,
    active_params_b: float | None = None,
    n_layers: int | None = None,
    bits: float | None = None,
    weights_gb: float | None = None,
    quant: str | None = None,
    engine: str | None = None,
    backend: str | None = None,
    kv_dtype: str | None = None,
    bandwidth_gb_per_s: float | None = None,
    memory_gb: float | None = None,
    tflops: float | None = None,
    prompt_tokens: int = 512,
    output_tokens: int = 256,
    context_tokens: int | None = None,
    batch: int = 1,
    sessions: int | None = None,
    efficiency: Efficiency | None = None,
    draft: str | ModelSpec | None = None,
    draft_quant: str | None = None,
    acceptance: float | None = None,
    draft_tokens: int | None = None,
    tp: int = 1,
    pp: int = 1,
    link: str | None = None,
    gpu_layers: int | float | str | None = None,
    cpu_hw: str | HardwareSpec | None = None,
    offload_mode: str | None = None,
    advise: bool = True,
) -> Estimate:
    """Predict decode (ceiling and estimate), prefill/TTFT, latency and memory for one setup.

    The levers (PHYSICS.md section 7), all off by default:
    `draft`/`draft_quant`/`acceptance`/`draft_tokens`: speculative decoding;
    `tp`/`pp`/`link`: tensor and pipeline parallelism over identical devices;
    `gpu_layers` (a count or a share like 0.8)/`cpu_hw`/`offload_mode`: CPU offload.
    `advise`: when it does not fit or is offloaded, look for a smaller quant that fits (seed 002).
    """
    require_non_negative("--prompt", prompt_tokens)
    require_positive("--output", output_tokens)
    require_non_negative("--context", context_tokens)
    require_positive("--batch", batch)
    require_positive("--sessions", sessions)
    require_positive("--params", params_b)
    require_positive("--active-params", active_params_b)
    require_positive("--weights-gb", weights_gb)
    require_positive("--layers", n_layers)

    warnings: list[str] = []
    if isinstance(model, ModelSpec):
        spec = model
    elif params_b is not None:
        if model:
            raise InputError("give either a model name or --params, not both")
        spec = bare_spec(
            params_b * BILLION,
            active_params=active_params_b * BILLION if active_params_b else None,
            n_layers=n_layers,
        )
    else:
        spec = resolve_model(model or DEFAULT_MODEL)
        if model is None and quant is None and bits is None and weights_gb is None:
            quant = DEFAULT_QUANT
    if isinstance(hw, HardwareSpec):
        hardware = hw
    else:
        hardware = resolve_hardware(hw, bandwidth_gb_per_s=bandwidth_gb_per_s, memory_gb=memory_gb, tflops=tflops)

    if weights_gb is not None and bits is None and quant is None:
        fmt: QuantFormat | None = QuantFormat(
            id="file-size",
            name=f"{weights_gb:g} GB of weights",
            bits_per_weight=weights_gb * GB * 8.0 / spec.total_params,
            usage="weights",
            compute_dtype="fp16",
            source="user-supplied weights size",
        )
    else:
        fmt = resolve_quant(quant, bits, spec)
    weights = weight_bytes(spec, fmt.bits_per_weight if fmt else None)
    if weights_gb is not None and fmt is not None and fmt.id != "file-size":
        weights = weights.scaled(weights_gb * GB / weights.total)
        fmt = replace(fmt, name=fmt.name + f", {weights_gb:g} GB file")

    eng = engine_catalog().get(engine) if engine else default_engine(hardware, fmt)
    eff = efficiency or efficiency_for(eng, hardware, backend)
    kv_fmt = quant_catalog().get(kv_dtype or eng.default_kv_dtype)
    if kv_fmt.usage == "weights":
        raise InputError(f"{kv_fmt.name} is not a KV-cache format (try fp16, fp8, q8_0 or q4_0)")
    kv_el = kv_fmt.bytes_per_weight

    peak = format_peak(hardware, fmt, eng)
    quantized = is_quantized(fmt, weights, spec)
    if peak.note:
        warnings.append(peak.note)
    depth = float(prompt_tokens if context_tokens is None else context_tokens)
    workload = Workload(
        prompt_tokens=int(prompt_tokens),
        output_tokens=int(output_tokens),
        context_tokens=context_tokens,
        batch=int(batch),
        sessions_context_tokens=None,
    )
    layout = _layout(
        spec, hardware, eng, fmt.compute_dtype if fmt else "fp16",
        tp=tp, pp=pp, link=link, gpu_layers=gpu_layers, cpu_hw=cpu_hw, offload_mode=offload_mode,
    )
    warnings += _layout_notes(spec, eng, layout)
    setup = Setup(spec, weights, hardware, eff, peak, kv_el, quantized, layout)
    lever_step = setup.step(int(batch), depth)
    step = lever_step.step
    ceiling_tok_s = 1.0 / step.ceiling_time_s
    estimate_tok_s = 1.0 / step.time_s
    spread = eff.residual_log_sd
    if layout.tp * layout.pp > 1:
        spread = max(spread, multi_device_log_sd() or spread)
    band = interval(estimate_tok_s, spread)
    band = Interval(low=band.low, high=min(band.high, ceiling_tok_s), coverage=band.coverage)

    pre = layout_prefill(setup, prefill(spec, weights, hardware, eff, int(prompt_tokens), peak, quantized=quantized))
    mid_depth = float(prompt_tokens) + output_tokens / 2.0
    tpot_step = setup.step(int(batch), mid_depth).step
    first_step = setup.step(int(batch), float(prompt_tokens)).step
    ttft = (pre.time_s if pre else 0.0) + first_step.time_s if (pre or prompt_tokens == 0) else None
    e2e = ttft + (output_tokens - 1) * tpot_step.time_s if ttft is not None else None

    draft_info = None
    if draft is not None:
        draft_info = _draft(
            spec, draft, draft_quant, fmt, setup, eng,
            acceptance=DEFAULT_ACCEPTANCE if acceptance is None else acceptance,
            draft_tokens=DEFAULT_DRAFT_TOKENS if draft_tokens is None else draft_tokens,
            batch=int(batch), depth=depth,
        )
        if acceptance is None:
            warnings.append(
                f"acceptance {DEFAULT_ACCEPTANCE:g} assumed for speculative decoding; it depends on the text "
                "(code, JSON, low temperature: higher) - measure yours and pass --acceptance"
            )
    elif acceptance is not None or draft_tokens is not None or draft_quant is not None:
        raise InputError("--acceptance, --draft-tokens and --draft-quant need --draft MODEL")

    plan_context = int(max(depth, prompt_tokens + output_tokens))
    n_sessions = int(sessions or batch)
    off = layout.offload if layout.offload and layout.offload.gpu_layers < spec.n_layers else None
    gpu_share = off.gpu_layers / spec.n_layers if off and off.mode == "cpu" else 1.0
    resident = weights
    if off is not None:
        resident, _ = split_weights(weights, off.gpu_layers / spec.n_layers, off.mode == "stream")
    extras = [draft_info.model] if draft_info else []
    kv_model = kv_view(
        spec, layers_share=gpu_share, copies=max(1, round(layout.tp / kv_shards(spec, layout.tp))), extra=extras
    )
    plan = memory_plan(
        kv_model,
        add_weights(resident, *([draft_info.weights] if draft_info else [])),
        hardware.memory_gb * layout.devices,
        usable_fraction=eng.usable_memory_fraction,
        runtime_overhead_gb=eng.runtime_overhead_gb * layout.devices,
        context_tokens=plan_context,
        sessions=n_sessions,
        kv_bytes_per_element=kv_el,
    )
    offload_plan = None
    if off is not None:
        offload_plan = _offload_plan(setup, off, plan_context, n_sessions, eng, int(batch), depth)
        if not offload_plan.fits_cpu:
            warnings.append(
                f"the CPU side needs {offload_plan.cpu_memory_gb:.1f} GB, {off.cpu.name} offers "
                f"{offload_plan.cpu_available_gb:.1f} GB"
            )
    advice = (
        _quant_advice(spec, setup, eng, plan_context, n_sessions, int(batch), depth, plan.fits, estimate_tok_s)
        if advise
        else None
    )
    if offload_plan is not None and advice is not None:
        offload_plan = replace(offload_plan, advice=advice)
    if not plan.fits and math.isfinite(hardware.memory_gb):
        where = f"{layout.devices} x {hardware.name}" if layout.devices > 1 else hardware.name
        warnings.append(
            f"does not fit: needs {plan.total_gb:.1f} GB, {where} offers {plan.available_gb:.1f} GB "
            f"to {eng.name}; the speed shown assumes it did"
        )
    if advice is not None and (offload_plan is not None or not plan.fits):
        warnings.append(advice)
    return Estimate(
        model=spec,
        hardware=hardware,
        quant=fmt,
        engine=eng,
        efficiency=eff,
        workload=workload,
        weights=weights,
        kv_dtype=kv_fmt,
        peak=peak,
        step=step,
        ceiling_tok_s=ceiling_tok_s,
        estimate_tok_s=estimate_tok_s,
        estimate_interval=band,
        prefill=pre,
        ttft_s=ttft,
        tpot_s=tpot_step.time_s,
        e2e_s=e2e,
        memory=plan,
        ridge_batch=ridge_batch(spec, weights, hardware, peak),
        quantized=quantized,
        warnings=tuple(spec.warnings) + tuple(warnings),
        setup=setup,
        lever_step=lever_step,
        draft=draft_info,
        offload=offload_plan,
        kv_model=kv_model,
    )


def _layout(
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
    offload_mode: str | None,
) -> Layout:
    """Check the parallelism and offload inputs and build the layout (PHYSICS.md section 7)."""
    for name, value in (("--tp", tp), ("--pp", pp)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"{name} must be a whole number of devices, 1 or more, got {value!r}")
    if pp > spec.n_layers:
        raise InputError(f"--pp {pp} is more stages than the model's {spec.n_layers} layers")
    n_gpu = gpu_layer_count(gpu_layers, spec.n_layers)
    if offload_mode is not None and offload_mode not in OFFLOAD_MODES:
        raise InputError(f"--offload-mode must be one of {', '.join(OFFLOAD_MODES)}, got {offload_mode!r}")
    devices = tp * pp
    if n_gpu is None:
        if cpu_hw is not None or offload_mode is not None:
            raise InputError("--cpu-hw and --offload-mode need --gpu-layers N (or a share like 0.8)")
        if link is not None and devices == 1:
            raise InputError("--link needs --tp or --pp (or --gpu-layers with --offload-mode stream)")
        return Layout(tp=tp, pp=pp, link=parse_link(link, hardware) if devices > 1 else None)
    if devices > 1:
        raise InputError("--gpu-layers together with --tp/--pp is not modelled; use one lever at a time")
    if hardware.kind == "cpu":
        raise InputError(f"--gpu-layers needs a GPU: {hardware.name} is a CPU memory system")
    cpu = cpu_hw if isinstance(cpu_hw, HardwareSpec) else hardware_catalog().get(cpu_hw or DEFAULT_CPU_HARDWARE)
    if cpu.kind != "cpu":
        raise InputError(
            f"--cpu-hw must be a CPU memory system (e.g. {DEFAULT_CPU_HARDWARE}), {cpu.name} is a {cpu.kind}"
        )
    host = parse_link(link, hardware) if link else host_link(hardware)
    return Layout(offload=cpu_offload(engine, hardware, compute_dtype, n_gpu, cpu, offload_mode or "cpu", host))


def cpu_offload(
    engine: EngineSpec,
    hardware: HardwareSpec,
    compute_dtype: Any,
    gpu_layers: int,
    cpu: HardwareSpec | None = None,
    mode: str = "cpu",
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


def _layout_notes(spec: ModelSpec, engine: EngineSpec, layout: Layout) -> list[str]:
    notes = []
    if layout.tp > 1 and spec.n_heads and spec.n_heads % layout.tp:
        notes.append(f"{spec.n_heads} attention heads do not split evenly over --tp {layout.tp} (vLLM refuses this)")
    if layout.tp > 1 and (engine.based_on or engine.id) == "llama-cpp":
        notes.append(
            "llama.cpp splits across GPUs by layer by default (that is --pp); --tp models its row split (-sm row)"
        )
    if layout.tp > 1 and not spec.hidden_size:
        notes.append("bare model: no hidden size, so all-reduces cost their latency only")
    return notes


def _draft(
    target: ModelSpec,
    name: str | ModelSpec,
    quant: str | None,
    target_fmt: QuantFormat | None,
    setup: Setup,
    engine: EngineSpec,
    *,
    acceptance: float,
    draft_tokens: int,
    batch: int,
    depth: float,
) -> Draft:
    """The draft on the same devices and engine; its tokenizer must be the target's."""
    check_speculation(acceptance, draft_tokens)
    spec = name if isinstance(name, ModelSpec) else resolve_model(name)
    if target.tokenizer and spec.tokenizer and target.tokenizer != spec.tokenizer:
        raise InputError(
            f"draft {spec.name} uses the {spec.tokenizer} tokenizer but {target.name} uses {target.tokenizer}: "
            "speculative decoding needs the same tokenizer"
        )
    same = quant_catalog().find(target_fmt.id) if target_fmt is not None and quant is None else None
    fmt = same if same is not None else resolve_quant(quant, None, spec)
    weights = weight_bytes(spec, fmt.bits_per_weight if fmt else None)
    draft_setup = setup_for_format(spec, fmt, weights, setup, engine, replace(setup.layout, offload=None))
    speculation = speculate(
        setup, draft_setup, acceptance=acceptance, draft_tokens=draft_tokens, batch=batch, depth_tokens=depth
    )
    return Draft(model=spec, quant=fmt, weights=weights, setup=draft_setup, speculation=speculation)


def _offload_plan(
    setup: Setup, off: Offload, context: int, sessions: int, engine: EngineSpec, batch: int, depth: float
) -> OffloadPlan:
    """Both sides of a partial offload: what each holds, and the speed at the two extremes."""
    spec = setup.model
    share = off.gpu_layers / spec.n_layers
    gpu, cpu = split_weights(setup.weights, share, off.mode == "stream")
    kv = kv_cache_bytes(spec, context, setup.kv_bytes_per_element) * sessions
    gpu_kv = kv if off.mode == "stream" else kv * share
    return OffloadPlan(
        offload=off,
        n_layers=spec.n_layers,
        gpu_weights_gb=gpu.total / GB,
        cpu_weights_gb=cpu.total / GB,
        gpu_kv_gb=gpu_kv / GB,
        cpu_kv_gb=(kv - gpu_kv) / GB,
        cpu_available_gb=off.cpu.memory_gb * engine.usable_memory_fraction,
        gpu_only_tok_s=1.0 / setup.with_gpu_layers(spec.n_layers).step(batch, depth).time_s,
        cpu_only_tok_s=1.0 / setup.with_gpu_layers(0).step(batch, depth).time_s,
        advice=None,
    )


def _quant_advice(
    spec: ModelSpec,
    setup: Setup,
    engine: EngineSpec,
    context: int,
    sessions: int,
    batch: int,
    depth: float,
    fits: bool,
    tok_s: float,
) -> str | None:
    """'Drop a quant step rather than offload' (seed 002), when a smaller quant of the same model fits
    entirely on the device and decodes faster than this setup."""
    off = setup.layout.offload
    offloading = off is not None and off.gpu_layers < spec.n_layers
    hardware = setup.hardware
    if (fits and not offloading) or setup.layout.devices > 1 or not math.isfinite(hardware.memory_gb):
        return None
    def fits_whole(weights: ParamGroups) -> bool:
        return memory_plan(
            spec,
            weights,
            hardware.memory_gb,
            usable_fraction=engine.usable_memory_fraction,
            runtime_overhead_gb=engine.runtime_overhead_gb,
            context_tokens=context,
            sessions=sessions,
            kv_bytes_per_element=setup.kv_bytes_per_element,
        ).fits

    if offloading and off is not None and fits_whole(setup.weights):
        whole = 1.0 / setup.with_gpu_layers(spec.n_layers).step(batch, depth).time_s
        return (
            f"no need to offload: the model fits in {hardware.name} entirely; all {spec.n_layers} layers on the "
            f"GPU decode at about {whole:.3g} tok/s, against {tok_s:.3g} tok/s with {off.gpu_layers}"
        )
    bits = setup.weights.total * 8.0 / spec.total_params if spec.total_params else math.inf
    for quant_id in QUANT_LADDER:
        candidate = quant_catalog().get(quant_id)
        if candidate.bits_per_weight >= bits - 1e-9 or not quant_runs(candidate, hardware, engine):
            continue
        weights = weight_bytes(spec, candidate.bits_per_weight)
        if not fits_whole(weights):
            continue
        smaller = setup_for_format(spec, candidate, weights, setup, engine)
        speed = 1.0 / smaller.step(batch, depth).time_s
        if speed <= tok_s:
            return None
        now = (
            f"{tok_s:.3g} tok/s with {off.gpu_layers}/{spec.n_layers} layers on the GPU"
            if offloading and off is not None
            else "the current quant, which does not fit"
        )
        return (
            f"drop a quant step rather than offload: {candidate.name} ({weights.total / GB:.1f} GB) fits in "
            f"{hardware.name} entirely and decodes at about {speed:.3g} tok/s, against {now}"
        )
    return None
