"""Curves: decode speed against batch, context depth, GPU layers and offloaded expert layers, each point
one `Setup.step()`.

One builder, `decode_curve`, samples the setup along an axis; the JSON's batching, context and offload
sections (`BatchPoint`, `ContextPoint`, `OffloadPoint`), the web's plots and `estimate --plot` all read
its points (docs/PHYSICS.md, sections 6 and 7). It takes the sample points and a `fits` predicate, so
memory policy stays with the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from tokometer.costmodel.layout import Setup
from tokometer.costmodel.roofline import Bound, Step
from tokometer.domain.specs import ModelSpec, _Plain

MAX_LAYER_POINTS = 256  # an offload curve visits every layer count up to this depth (the deepest catalog model has 126 layers)


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


Axis = Literal["batch", "context", "gpu_layers", "expert_layers"]


@dataclass(frozen=True, slots=True)
class CurvePoint:
    """One sample of the one curve builder: the modelled step at (batch, depth, GPU layers)."""

    batch: int
    depth_tokens: float
    gpu_layers: int | None  # None: the setup's own layout
    step: Step
    roofline_tok_s: float  # per stream, eta = 1 and no fixed costs, KV reads included: never above the ceiling
    fits: bool

    @property
    def per_stream_tok_s(self) -> float:
        return 1.0 / self.step.time_s

    @property
    def aggregate_tok_s(self) -> float:
        return self.batch / self.step.time_s

    @property
    def ceiling_per_stream_tok_s(self) -> float:
        return 1.0 / self.step.ceiling_time_s


def decode_curve(
    setup: Setup,
    axis: Axis,
    values: Sequence[float],
    *,
    batch: int,
    depth_tokens: float,
    fits: Callable[[float], bool],
) -> tuple[CurvePoint, ...]:
    """Decode along one axis with the others held: the one builder behind the JSON's batching, context
    and offload curves, the web's plots and `estimate --plot` (docs/PHYSICS.md, sections 6 and 7).

    Each point is `setup.step(B, d)` on the setup (with `n` GPU layers on the offload axis, or the experts
    of `n` layers in system RAM on the expert axis); per-stream
    speed `1 / t(B, d)`, aggregate `B / t(B, d)`. `roofline_tok_s` is the same step at eta = 1 without
    fixed costs, `1 / max((W_read(B) + B * KV(d)) / BW, FLOPs / peak)`: the bandwidth limit with KV
    reads, per stream, so it never exceeds the weights-only ceiling.
    """
    points = []
    ideal = setup.ideal()
    for value in values:
        b, depth, layers, at, at_ideal = batch, depth_tokens, None, setup, ideal
        if axis == "batch":
            b = int(value)
        elif axis == "context":
            depth = float(value)
        elif axis == "gpu_layers":
            layers = int(value)
            at = setup.with_gpu_layers(layers)
            at_ideal = at.ideal()
        else:  # expert_layers: the routed experts of that many layers sit in system RAM
            at = setup.with_expert_layers(int(value))
            at_ideal = at.ideal()
        step = at.step(b, depth).step
        roofline = 1.0 / at_ideal.step(b, depth).step.time_s
        points.append(CurvePoint(b, depth, layers, step, roofline, fits(value)))
    return tuple(points)


def batch_curve(
    setup: Setup, batches: Sequence[int], depth_tokens: float, fits: Callable[[int], bool]
) -> tuple[BatchPoint, ...]:
    """`decode_curve` along the batch, as the JSON's `batching.curve` shows it (docs/PHYSICS.md section 6)."""
    return tuple(
        BatchPoint(
            batch=p.batch,
            per_stream_tok_s=p.per_stream_tok_s,
            aggregate_tok_s=p.aggregate_tok_s,
            ceiling_per_stream_tok_s=p.ceiling_per_stream_tok_s,
            ceiling_aggregate_tok_s=p.batch / p.step.ceiling_time_s,
            bound=p.step.bound,
            weight_bytes_per_step=p.step.weight_bytes,
            kv_bytes_per_step=p.step.kv_read_bytes + p.step.kv_write_bytes,
            flops_per_step=p.step.flops,
            experts_touched=experts_touched(setup.model, p.batch),
            fits=p.fits,
        )
        for p in decode_curve(setup, "batch", batches, batch=1, depth_tokens=depth_tokens, fits=lambda b: fits(int(b)))
    )


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
    """`decode_curve` along the depth, as the JSON's `context.curve` shows it: every step reads the
    whole cache of each stream."""
    return tuple(
        ContextPoint(
            depth_tokens=p.depth_tokens,
            estimate_tok_s=p.per_stream_tok_s,
            roofline_tok_s=p.roofline_tok_s,
            ceiling_tok_s=p.ceiling_per_stream_tok_s,
            kv_bytes_per_token=p.step.kv_read_bytes / batch,
            bound=p.step.bound,
            fits=p.fits,
        )
        for p in decode_curve(setup, "context", depths, batch=batch, depth_tokens=0.0, fits=fits)
    )


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
    """`decode_curve` along the GPU layers, from 0 (all on the CPU) to all layers."""
    layers = layer_points(setup.model.n_layers)
    return tuple(
        OffloadPoint(
            gpu_layers=int(p.gpu_layers or 0),
            estimate_tok_s=p.per_stream_tok_s,
            ceiling_tok_s=p.ceiling_per_stream_tok_s,
            gpu_memory_gb=gpu_memory_gb(int(p.gpu_layers or 0)),
            fits=p.fits,
        )
        for p in decode_curve(setup, "gpu_layers", layers, batch=batch, depth_tokens=depth_tokens, fits=lambda n: fits(int(n)))
    )


def layer_points(n_layers: int, most: int = MAX_LAYER_POINTS) -> list[int]:
    """Layer counts an offload curve visits: every one from 0 to `n_layers`, or `most` + 1 evenly
    spread ones (0 and `n_layers` included) for a deeper model, so that a bare model of absurd size
    (`--params 1e30` gives 1.6e11 layers) costs a curve of bounded length, not one point per layer."""
    if n_layers <= most:
        return list(range(n_layers + 1))
    return sorted({round(i * n_layers / most) for i in range(most + 1)})


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
    """`decode_curve` along the layers whose experts sit in system RAM, from 0 to all."""
    layers = layer_points(setup.model.n_layers)
    points = decode_curve(setup, "expert_layers", layers, batch=batch, depth_tokens=depth_tokens, fits=lambda n: fits(int(n)))
    return tuple(
        ExpertOffloadPoint(
            expert_layers=n,
            estimate_tok_s=p.per_stream_tok_s,
            ceiling_tok_s=p.ceiling_per_stream_tok_s,
            gpu_memory_gb=gpu_memory_gb(n),
            fits=p.fits,
        )
        for n, p in zip(layers, points, strict=True)
    )
