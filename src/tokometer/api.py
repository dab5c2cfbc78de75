"""Use-cases shared by the CLI and the web app: resolve inputs from catalogs or bare numbers, predict.

`estimate(...)` is the one entry point: it turns names and numbers into specs, runs the pure cost
model and returns an `Estimate`, whose `to_dict()` is the stable JSON shape of `--json` and the API.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tokometer.catalog import engine_catalog, hardware_catalog, model_catalog, quant_catalog
from tokometer.catalog.efficiency import efficiency_for
from tokometer.costmodel.architecture import bare_spec
from tokometer.costmodel.memory import kv_cache_bytes, weight_bytes
from tokometer.costmodel.predict import (
    MemoryPlan,
    Peak,
    Prefill,
    Step,
    compute_peak,
    decode_step,
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

DEFAULT_MODEL = "llama-3.1-8b"
DEFAULT_HARDWARE = "rtx-4090"
DEFAULT_QUANT = "q4-k-m"
READING_SPEED_TOK_S = (5.0, 10.0)
BROKEN_STREAM_TOK_S = 3.0


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


def default_engine(hardware: HardwareSpec, quant: QuantFormat | None) -> EngineSpec:
    engines = engine_catalog()
    ggml = quant is None or quant.kind in ("block", "mix") or quant.ggml_type is not None
    if hardware.vendor == "apple" or hardware.kind in ("cpu", "apu") or hardware.segment == "laptop":
        return engines.get("llama-cpp")
    if hardware.segment == "datacenter" and not ggml:
        return engines.get("vllm")
    return engines.get("llama-cpp")


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
            "explanation": self.explanation(),
            "warnings": list(self.warnings),
        }


def reading_verdict(tok_s: float) -> str:
    """Seed 002: reading speed is about 5-10 tok/s; below about 2-3 tok/s streaming feels broken."""
    if tok_s < BROKEN_STREAM_TOK_S:
        return "too slow: below about 3 tok/s a streamed answer feels broken"
    if tok_s < READING_SPEED_TOK_S[0]:
        return "slower than reading speed (5-10 tok/s): usable, but you will wait"
    if tok_s < READING_SPEED_TOK_S[1]:
        return "about reading speed (5-10 tok/s)"
    return "faster than you can read"


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
) -> Estimate:
    """Predict decode (ceiling and estimate), prefill/TTFT, latency and memory for one setup."""
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

    peak = compute_peak(hardware, fmt.compute_dtype if fmt else "fp16", fp16_accumulate=eng.fp16_accumulate)
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
    step = decode_step(spec, weights, hardware, eff, batch=int(batch), depth_tokens=depth, kv_bytes_per_element=kv_el, peak=peak, quantized=quantized)
    ceiling_tok_s = 1.0 / step.ceiling_time_s
    estimate_tok_s = 1.0 / step.time_s
    band = interval(estimate_tok_s, eff.residual_log_sd)
    band = Interval(low=band.low, high=min(band.high, ceiling_tok_s), coverage=band.coverage)

    pre = prefill(spec, weights, hardware, eff, int(prompt_tokens), peak, quantized=quantized)
    mid_depth = float(prompt_tokens) + output_tokens / 2.0
    tpot_step = decode_step(spec, weights, hardware, eff, batch=int(batch), depth_tokens=mid_depth, kv_bytes_per_element=kv_el, peak=peak, quantized=quantized)
    first_step = decode_step(spec, weights, hardware, eff, batch=int(batch), depth_tokens=float(prompt_tokens), kv_bytes_per_element=kv_el, peak=peak, quantized=quantized)
    ttft = (pre.time_s if pre else 0.0) + first_step.time_s if (pre or prompt_tokens == 0) else None
    e2e = ttft + (output_tokens - 1) * tpot_step.time_s if ttft is not None else None

    plan_context = int(max(depth, prompt_tokens + output_tokens))
    n_sessions = int(sessions or batch)
    plan = memory_plan(
        spec,
        weights,
        hardware.memory_gb,
        usable_fraction=eng.usable_memory_fraction,
        runtime_overhead_gb=eng.runtime_overhead_gb,
        context_tokens=plan_context,
        sessions=n_sessions,
        kv_bytes_per_element=kv_el,
    )
    if not plan.fits and math.isfinite(hardware.memory_gb):
        warnings.append(
            f"does not fit: needs {plan.total_gb:.1f} GB, {hardware.name} offers {plan.available_gb:.1f} GB "
            f"to {eng.name}; the speed shown assumes it did"
        )
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
    )
