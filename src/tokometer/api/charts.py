"""What the web's calculator and plot pages draw, from `estimate`: decode speed along the context or
the batch (`decode_curve`), the roofline (`roofline`), one model on every device (`panorama`) and an
answer's end-to-end time at a rate (`latency_at_rate`). Each returns a frozen result whose `to_dict()`
is the web endpoint's JSON, so a notebook gets the very figures a page shows.

Curves: every line is the library's one curve builder (`costmodel.curves.decode_curve`): the
roofline's decode steps are the estimate's batching curve (`usecases.curves.batch_points`), and the
Plots page's "bandwidth limit with KV reads" is `usecases.curves.along` at the page's own x values.
`decode_curve` also predicts once per x, because its dots carry each x's whole `decode` block (the
80 % band, bytes, times) and memory verdict, which belong to an estimate rather than to a curve.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tokometer.api.result import JsonResult
from tokometer.errors import InputError, TokometerError, require_non_negative, require_positive
from tokometer.usecases.policy import DEFAULT_HARDWARE, DEFAULT_MODEL, DEFAULT_QUANT
from tokometer.usecases.reading import (
    BROKEN_STREAM_TOK_S,
    READING_SPEED_TOK_S,
    reading_verdict,
    reading_verdict_code,
)

if TYPE_CHECKING:
    from tokometer.costmodel.curves import CurvePoint
    from tokometer.domain.specs import HardwareSpec
    from tokometer.usecases.estimate import Estimate

__all__ = [
    "BROKEN_STREAM_TOK_S", "DEFAULT_BATCHES", "DEFAULT_HARDWARE", "DEFAULT_MODEL", "DEFAULT_QUANT", "READING_SPEED_TOK_S",
    "TIERS_GB", "DecodeCurve", "Latency", "Panorama", "Roofline", "decode_curve", "latency_at_rate", "panorama", "roofline",
    "tier_of",
]  # fmt: skip

DEFAULT_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
DEFAULT_OUTPUT_TOKENS = 256  # as `tokometer estimate --output`
DEFAULT_MAX_CONTEXT_TOKENS = 131_072
TIERS_GB = (8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 512)
DEVICE_FIELDS = ("hw", "bandwidth_gb_per_s", "memory_gb", "tflops")
AXES = {"context": "context_tokens", "batch": "batch"}


@dataclass(frozen=True)
class DecodeCurve(JsonResult):
    """Decode speed at each x of one axis: the estimate there (`estimates`) and the bandwidth limit with
    KV reads per stream (`lines`, eta = 1, no fixed costs)."""

    axis: str
    xs: tuple[int, ...]
    estimates: tuple[Estimate, ...]
    lines: tuple[CurvePoint, ...]

    def to_dict(self) -> dict[str, Any]:
        """The `/api/curve` shape: each point's `decode` block, memory verdict and `roofline_tok_s`."""
        from tokometer.report.json import estimate_sections

        points = []
        for x, result, line in zip(self.xs, self.estimates, self.lines, strict=True):
            d = estimate_sections(result)  # a point needs no curves
            m = d["memory"]
            points.append({"x": x, "decode": d["decode"], "memory": {"fits": m["fits"], "total_gb": m["total_gb"]},
                           "roofline_tok_s": line.roofline_tok_s})
        base = estimate_sections(self.estimates[0])
        return {"axis": self.axis, "model": base["model"], "hardware": base["hardware"],
                "engine": {"id": base["engine"]["id"], "name": base["engine"]["name"]}, "points": points}


def _context_values(fields: dict[str, Any]) -> list[int]:
    from tokometer.catalog import model_catalog

    top = DEFAULT_MAX_CONTEXT_TOKENS
    if isinstance(fields.get("model"), str):
        top = model_catalog().get(fields["model"]).spec.max_context_tokens or top
    values, depth = [0], 1024
    while depth < top:
        values.append(depth)
        depth *= 2
    return [*values, top]


def decode_curve(axis: str = "context", values: Sequence[float] | None = None, **fields: Any) -> DecodeCurve:
    """Decode speed along `axis`: `context` (tokens already cached) or `batch` (streams decoded together).

    `values` are the x's (default: 0, 1024, 2048 ... the model's context, or batches 1 to 256); the setup
    takes `estimate`'s fields as keyword arguments.
    """
    from tokometer.usecases.curves import along
    from tokometer.usecases.estimate import estimate

    if axis not in AXES:
        raise InputError(f"axis must be context or batch, got {axis!r}", field="axis")
    xs = tuple(sorted({int(x) for x in (_context_values(fields) if values is None and axis == "context" else values or DEFAULT_BATCHES)}))
    results = tuple(estimate(**{**fields, AXES[axis]: x}) for x in xs)
    return DecodeCurve(axis, xs, results, tuple(along(results[0], "context" if axis == "context" else "batch", xs)))


@dataclass(frozen=True)
class Roofline(JsonResult):
    """One setup's decode steps at several batch sizes, and its prefill, placed on the device's roofline."""

    estimate: Estimate
    batches: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        """The `/api/roofline` shape: intensity (FLOP/byte), achieved and ceiling TFLOP/s per point, the ridge."""
        from tokometer.domain.units import GB, TFLOP
        from tokometer.report.json import estimate_sections
        from tokometer.usecases.curves import batch_points, prefill_bytes_moved

        result = self.estimate
        d = estimate_sections(result)
        bandwidth = d["hardware"]["memory_bandwidth_gb_per_s"] * GB
        peak_tflops = d["hardware"]["peak_tflops"]
        points = []
        for p in batch_points(result, self.batches):
            if p.batch not in self.batches:  # the library adds the setup's own batch
                continue
            flops_per_token = p.flops_per_step / p.batch
            points.append({
                "batch": p.batch,
                "intensity_flop_per_byte": p.flops_per_step / (p.weight_bytes_per_step + p.kv_bytes_per_step),
                "achieved_tflops": p.aggregate_tok_s * flops_per_token / TFLOP,
                "ceiling_tflops": p.ceiling_aggregate_tok_s * flops_per_token / TFLOP,
                "bound": p.bound,
                "aggregate_tok_s": p.aggregate_tok_s,
            })
        pre = result.prefill
        prefill_point = None
        if pre is not None:
            prefill_point = {"prompt_tokens": pre.prompt_tokens, "intensity_flop_per_byte": pre.flops / prefill_bytes_moved(result, pre),
                             "achieved_tflops": pre.flops / pre.time_s / TFLOP, "bound": pre.bound}
        return {
            "model": d["model"], "hardware": d["hardware"], "peak_tflops": peak_tflops, "peak_dtype": d["hardware"]["peak_dtype"],
            "bandwidth_gb_per_s": d["hardware"]["memory_bandwidth_gb_per_s"],
            "ridge_flop_per_byte": peak_tflops * TFLOP / bandwidth if peak_tflops else None,
            "ridge_batch": d["decode"]["ridge_batch"], "decode": points, "prefill": prefill_point,
        }


def roofline(batches: Sequence[float] | None = None, **fields: Any) -> Roofline:
    """Decode steps at `batches` (default 1 to 256) and the prefill on the hardware's roofline:
    intensity = FLOPs / bytes moved; attainable = min(peak, bandwidth x intensity)."""
    from tokometer.usecases.estimate import estimate

    wanted = tuple(sorted({int(b) for b in batches})) if batches else DEFAULT_BATCHES
    result = estimate(**fields)
    for b in wanted:
        require_positive("batches", b)
    return Roofline(result, wanted)


def tier_of(memory_gb: float) -> int | None:
    """The GPU tier (memory size class, GB) a device falls in; None above the largest tier."""
    for tier in TIERS_GB:
        if memory_gb <= tier * 1.02:
            return tier
    return None


@dataclass(frozen=True)
class Panorama(JsonResult):
    """One model on every catalog device: each device with its estimate, or why there is none."""

    rows: tuple[tuple[HardwareSpec, Estimate | str], ...]

    def to_dict(self) -> dict[str, Any]:
        """The `/api/panorama` shape: ceiling, estimate, band and memory verdict per device, by tier."""
        rows = []
        model: dict[str, Any] | None = None
        for hw, e in self.rows:
            row: dict[str, Any] = {"hardware": hw.to_dict(), "tier_gb": tier_of(hw.memory_gb)}
            if isinstance(e, str):
                rows.append({**row, "error": e})
                continue
            model = model or {"id": e.model.id, "name": e.model.name, "weight_bytes": e.weights.total}
            rows.append({
                **row, "engine": e.engine.id, "ceiling_tok_s": e.ceiling_tok_s, "estimate_tok_s": e.estimate_tok_s,
                "interval_tok_s": e.estimate_interval.to_dict(), "bound": e.step.bound, "fits": e.memory.fits,
                "total_gb": e.memory.total_gb, "available_gb": e.memory.available_gb,
            })
        return {"model": model, "tiers_gb": list(TIERS_GB), "rows": rows}


def panorama(**fields: Any) -> Panorama:
    """One model (`estimate`'s fields, no device) predicted on every catalog device."""
    from tokometer.catalog import hardware_catalog
    from tokometer.usecases.estimate import estimate

    given = [key for key in DEVICE_FIELDS if key in fields]
    if given:
        raise InputError(f"the panorama covers every device: drop {given[0]}", field=given[0])
    rows: list[tuple[HardwareSpec, Estimate | str]] = []
    for hw in hardware_catalog():
        try:
            rows.append((hw, estimate(hw=hw, **fields)))
        except TokometerError as exc:
            rows.append((hw, str(exc)))
    return Panorama(tuple(rows))


@dataclass(frozen=True)
class Latency(JsonResult):
    """An answer's end-to-end time from a time to first token and a decode rate, and how it reads."""

    ttft_s: float
    tok_s: float
    output_tokens: int

    def to_dict(self) -> dict[str, Any]:
        """The `/api/latency` shape: E2E = TTFT + (n_out - 1) / rate; reading it takes n_out / (5 to 10 tok/s)."""
        tpot_s = 1.0 / self.tok_s
        return {
            "ttft_s": self.ttft_s, "tpot_s": tpot_s, "e2e_s": self.ttft_s + (self.output_tokens - 1) * tpot_s,
            "output_tokens": self.output_tokens, "tok_s": self.tok_s, "verdict": reading_verdict(self.tok_s),
            "verdict_code": reading_verdict_code(self.tok_s),
            "reading_time_s": [self.output_tokens / READING_SPEED_TOK_S[1], self.output_tokens / READING_SPEED_TOK_S[0]],
        }


def latency_at_rate(ttft_ms: float, tok_s: float, output_tokens: int = DEFAULT_OUTPUT_TOKENS) -> Latency:
    """End-to-end time of an answer of `output_tokens` at `tok_s` after `ttft_ms` (docs/PHYSICS.md 5)."""
    require_non_negative("ttft_ms", ttft_ms)
    require_positive("output_tokens", output_tokens)
    require_positive("tok_s", tok_s)
    return Latency(ttft_ms / 1e3, tok_s, output_tokens)
