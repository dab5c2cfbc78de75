"""Curves around one estimate, computed when asked for: speed against batch, context and GPU layers.

`estimate()` predicts one setup; the JSON, the plots and the web also show how that setup's speed
moves with batch, depth and offload. Those need tens of model steps, so they are a separate
use-case (`estimate_curves`) rather than work the serialiser does behind a caller's back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from tokometer.costmodel.curves import (
    Axis,
    BatchPoint,
    ContextPoint,
    CurvePoint,
    ExpertOffloadPoint,
    OffloadPoint,
    batch_curve,
    context_curve,
    decode_curve,
    expert_offload_curve,
    offload_curve,
)
from tokometer.costmodel.layout import Layout
from tokometer.costmodel.memory import (
    add_weights,
    kv_cache_bytes,
    split_experts,
    split_weights,
    weight_bytes_read,
)
from tokometer.costmodel.roofline import Prefill, Step
from tokometer.domain.units import GB
from tokometer.usecases.estimate import Estimate
from tokometer.usecases.explain import OffloadPlan
from tokometer.usecases.placement import cpu_offload

CURVE_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
CURVE_DEPTHS = (0, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


@dataclass(frozen=True)
class EstimateCurves:
    """The curves of one estimate, as the JSON's `batching`, `context` and `offload` sections show them."""

    batch: tuple[BatchPoint, ...]
    context: tuple[ContextPoint, ...]
    offload: tuple[OffloadPoint, ...]
    compute_bound_batch: int | None  # smallest batch at which the step computes longer than it reads
    empty_step: Step  # the same batch with an empty KV cache
    experts: tuple[ExpertOffloadPoint, ...] = ()  # only when experts are offloaded


def estimate_curves(e: Estimate) -> EstimateCurves:
    """Every curve the JSON shows for `e`, at the default sample points."""
    s = e.step
    return EstimateCurves(
        batch=batch_points(e),
        context=context_points(e),
        offload=offload_points(e) if e.offload is not None else (),
        compute_bound_batch=e.ridge_batch,  # the one ridge rule (`costmodel.curves.compute_bound_batch`)
        empty_step=e.layout_setup.step(s.batch, 0.0).step,
        experts=expert_offload_points(e),
    )


def _free_kv_bytes(e: Estimate) -> float:
    m = e.memory
    return (m.available_gb - m.weights_gb - m.runtime_overhead_gb) * GB


def _session_kv_bytes(e: Estimate, depth_tokens: float) -> float:
    return kv_cache_bytes(e.kv_model or e.model, depth_tokens, e.kv_dtype.bytes_per_weight)


def _batch_fits(e: Estimate) -> Callable[[float], bool]:
    """KV for that many sessions at the estimate's context fits beside the weights."""
    free = _free_kv_bytes(e)
    per_session = _session_kv_bytes(e, e.memory.context_tokens)
    return lambda b: per_session * b <= free


def _context_fits(e: Estimate) -> Callable[[float], bool]:
    """KV for the estimate's sessions at that depth fits beside the weights."""
    free = _free_kv_bytes(e)
    sessions = e.memory.sessions
    return lambda c: _session_kv_bytes(e, c) * sessions <= free


def along(e: Estimate, axis: Axis, values: Sequence[float]) -> tuple[CurvePoint, ...]:
    """The estimate's setup along `axis` at exactly `values` (the web's plots ask for their own x)."""
    if axis == "gpu_layers":
        raise ValueError("offload curves need an offload plan: use offload_points")
    fits = _batch_fits(e) if axis == "batch" else _context_fits(e)
    return decode_curve(e.layout_setup, axis, values, batch=e.step.batch, depth_tokens=e.step.depth_tokens, fits=fits)


def batch_points(e: Estimate, batches: Sequence[int] | None = None) -> tuple[BatchPoint, ...]:
    """Per-stream and aggregate decode at each batch; `fits`: KV for that many sessions fits."""
    chosen = sorted(set(batches or CURVE_BATCHES) | {e.step.batch})
    return batch_curve(e.layout_setup, chosen, e.step.depth_tokens, _batch_fits(e))


def context_points(e: Estimate, depths: Sequence[float] | None = None) -> tuple[ContextPoint, ...]:
    """Decode speed as the cache fills, up to the model's maximum context."""
    limit = e.model.max_context_tokens
    default = [d for d in CURVE_DEPTHS if limit is None or d <= limit] + ([limit] if limit else [])
    chosen = sorted(set(depths or default) | {e.step.depth_tokens})
    return context_curve(e.layout_setup, chosen, e.step.batch, _context_fits(e))


def offload_points(e: Estimate) -> tuple[OffloadPoint, ...]:
    """Speed and GPU memory for every number of layers on the GPU, from none to all.

    Without `--gpu-layers` the layers that leave the GPU go to the default CPU memory system;
    () for a CPU or a layout over several devices.
    """
    plan = e.offload
    if plan is None:
        if e.hardware.kind == "cpu" or e.layout_setup.layout.devices > 1:
            return ()
        dtype = e.quant.compute_dtype if e.quant else "fp16"
        off = cpu_offload(e.engine, e.hardware, dtype, e.model.n_layers)
        plan = OffloadPlan(off, e.model.n_layers, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, None)
        setup = replace(e.layout_setup, layout=Layout(offload=off))
    else:
        setup = e.layout_setup
        if plan.offload.expert_layers:  # the whole-layer alternative to offloading experts
            setup = setup.with_expert_layers(0)
    available = e.memory.available_gb
    context = e.memory.context_tokens
    sessions = e.memory.sessions
    extra = [e.draft.weights] if e.draft else []
    draft_kv = kv_cache_bytes(e.draft.model, context, e.kv_dtype.bytes_per_weight) * sessions if e.draft else 0.0

    def gpu_gb(n: int) -> float:
        gpu, _ = split_weights(e.weights, n / plan.n_layers, n == plan.n_layers or plan.offload.mode == "stream")
        kv_share = 1.0 if plan.offload.mode == "stream" else n / plan.n_layers
        kv = kv_cache_bytes(e.model, context, e.kv_dtype.bytes_per_weight) * sessions * kv_share
        return (add_weights(gpu, *extra).total + kv + draft_kv) / GB + e.memory.runtime_overhead_gb

    return offload_curve(setup, e.step.batch, e.step.depth_tokens, gpu_gb, lambda n: gpu_gb(n) <= available)


def prefill_bytes_moved(e: Estimate, pre: Prefill) -> float:
    """Weight bytes a prefill reads: each chunk of the prompt reads the weights once,
    `n_chunks * W_read(chunk)` (docs/PHYSICS.md, section 5), for placing it on a roofline."""
    chunk_tokens = min(pre.prompt_tokens, max(1, e.efficiency.prefill_chunk_tokens))
    return pre.n_chunks * weight_bytes_read(e.model, e.weights, chunk_tokens)


def expert_offload_points(e: Estimate) -> tuple[ExpertOffloadPoint, ...]:
    """Speed and GPU memory for every number of layers whose experts sit in system RAM, from none to
    all; () unless this estimate offloads experts. KV and the runtime stay on the GPU throughout."""
    plan = e.offload
    if plan is None or not plan.offload.expert_layers:
        return ()
    n_layers = plan.n_layers
    kv_gb = e.memory.kv_cache_gb
    extra = [e.draft.weights] if e.draft else []

    def gpu_gb(n: int) -> float:
        gpu, _ = split_experts(e.weights, n / n_layers)
        return add_weights(gpu, *extra).total / GB + kv_gb + e.memory.runtime_overhead_gb

    return expert_offload_curve(
        e.layout_setup, e.step.batch, e.step.depth_tokens, gpu_gb, lambda n: gpu_gb(n) <= e.memory.available_gb
    )
