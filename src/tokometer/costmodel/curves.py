"""Curves: decode speed against batch, context depth, GPU layers and offloaded expert layers, each point
one `Setup.step()`.

What the batching, context and offload sections of the JSON and the plots draw (docs/PHYSICS.md,
sections 6 and 7). Each builder takes the sample points and a `fits` predicate, so memory policy stays
with the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tokometer.costmodel.layout import Setup
from tokometer.costmodel.roofline import Bound
from tokometer.specs import ModelSpec, _Plain


@dataclass(frozen=True, slots=True)
class BatchPoint(_Plain):
    batch: int
    per_stream_tok_s: float
    aggregate_tok_s: float
    ceiling_per_stream_tok_s: float
    ceiling_aggregate_tok_s: float
    bound: Bound
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
    """Per-stream `1 / t(B)` and aggregate `B / t(B)` decode at each batch (docs/PHYSICS.md section 6)."""
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
    ceiling_tok_s: float  # weights only (docs/PHYSICS.md section 4): flat in depth
    kv_bytes_per_token: float  # KV read per stream per step at this depth
    bound: Bound
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




@dataclass(frozen=True, slots=True)
class ExpertOffloadPoint(_Plain):
    expert_layers: int  # layers whose routed experts sit in system RAM
    estimate_tok_s: float
    ceiling_tok_s: float
    gpu_memory_gb: float
    fits: bool


def expert_offload_curve(
    setup: Setup,
    batch: int,
    depth_tokens: float,
    gpu_memory_gb: Callable[[int], float],
    fits: Callable[[int], bool],
) -> tuple[ExpertOffloadPoint, ...]:
    """Speed and GPU memory for every number of layers whose experts sit in system RAM, 0 to all."""
    points = []
    for n in range(setup.model.n_layers + 1):
        s = setup.with_expert_layers(n).step(batch, depth_tokens).step
        points.append(
            ExpertOffloadPoint(
                expert_layers=n,
                estimate_tok_s=1.0 / s.time_s,
                ceiling_tok_s=1.0 / s.ceiling_time_s,
                gpu_memory_gb=gpu_memory_gb(n),
                fits=fits(n),
            )
        )
    return tuple(points)
