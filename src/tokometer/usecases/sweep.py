"""Vectorised sweeps: every model x device x quant x depth x batch at once through the vector decode
step (`tokometer sweep`), with the same memory verdict as `estimate`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tokometer.catalog import engine_catalog, hardware_catalog, model_catalog, quant_catalog
from tokometer.catalog.efficiency import efficiency_for
from tokometer.domain.specs import HardwareSpec, ModelSpec, QuantFormat
from tokometer.domain.units import GB
from tokometer.errors import InputError, require_non_negative, require_positive
from tokometer.usecases.formats import check_format, engine_support, substitute_format
from tokometer.usecases.policy import (
    ADVICE_LADDER,
    DEFAULT_HARDWARE,
    DEFAULT_MODEL,
    DEFAULT_QUANT,
    QUANT_LADDER,
    default_engine,
    gpu_memory_gb,
)
from tokometer.usecases.resolve import format_peak, resolve_hardware, resolve_model

if TYPE_CHECKING:
    from tokometer.costmodel.vector import GridStep

@dataclass(frozen=True)
class SweepResult:
    """Decode over models x hardware x quants x contexts x batches, as arrays of that shape."""

    models: tuple[ModelSpec, ...]
    hardware: tuple[HardwareSpec, ...]
    quants: tuple[QuantFormat, ...]
    contexts: tuple[int, ...]
    batches: tuple[int, ...]
    engines: tuple[tuple[str, ...], ...]  # [hardware][quant]
    grid: GridStep
    memory_gb: Any  # ndarray, the grid's shape
    fits: Any  # ndarray of bool

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self.models), len(self.hardware), len(self.quants), len(self.contexts), len(self.batches))

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def records(self) -> Iterator[dict[str, Any]]:
        import numpy as np

        g = self.grid
        full = self.shape
        time = np.broadcast_to(g.time_s, full)
        ceiling = np.broadcast_to(g.ceiling_time_s, full)
        bound = np.broadcast_to(g.bound, full)
        memory = np.broadcast_to(self.memory_gb, full)
        fits = np.broadcast_to(self.fits, full)
        for index in np.ndindex(*full):
            m, h, q, c, b = index
            batch = self.batches[b]
            yield {
                "model": self.models[m].id or self.models[m].name,
                "hardware": self.hardware[h].id,
                "quant": self.quants[q].id,
                "engine": self.engines[h][q],
                "context_tokens": self.contexts[c],
                "batch": batch,
                "ceiling_tok_s": float(1.0 / ceiling[index]),
                "estimate_tok_s": float(1.0 / time[index]),
                "aggregate_tok_s": float(batch / time[index]),
                "step_time_s": float(time[index]),
                "bound": str(bound[index]),
                "memory_gb": float(memory[index]),
                "fits": bool(fits[index]),
            }

    def to_dict(self) -> dict[str, Any]:
        return {
            "shape": list(self.shape),
            "axes": {
                "model": [m.id or m.name for m in self.models],
                "hardware": [h.id for h in self.hardware],
                "quant": [q.id for q in self.quants],
                "context_tokens": list(self.contexts),
                "batch": list(self.batches),
            },
            "rows": list(self.records()),
        }


def _names(values: Sequence[str] | None, everything: list[str], default: str) -> list[str]:
    chosen = [v.strip() for item in (values or [default]) for v in str(item).split(",") if v.strip()]
    return everything if chosen == ["all"] else chosen


def _formats_for(engine: str | None, asked: Sequence[str] | None, formats: list[QuantFormat]) -> list[QuantFormat]:
    """With an engine named, the formats it runs (`usecases/formats.py`): `all` keeps those it runs,
    the default quant becomes the engine's nearest format, and a format asked for by name that the
    engine cannot run is an input error naming the choices."""
    if engine is None:
        return formats
    forced = engine_catalog().get(engine)
    if asked is None:
        return [f if engine_support(forced, f) != "no" else substitute_format(forced, f, ADVICE_LADDER) or f for f in formats]
    if [str(a).strip() for a in asked] == ["all"]:  # `all`: the ladder steps this engine runs
        return [f for f in formats if engine_support(forced, f) != "no"] or formats
    for f in formats:
        check_format(forced, f)
    return formats


def sweep(
    models: Sequence[str] | None = None,
    hardware: Sequence[str] | None = None,
    quants: Sequence[str] | None = None,
    contexts: Sequence[int] = (512,),
    batches: Sequence[int] = (1,),
    *,
    engine: str | None = None,
    backend: str | None = None,
    kv_dtype: str | None = None,
) -> SweepResult:
    """Every combination at once with the vector decode step (costmodel.vector): no loop per setup.

    Names may be comma lists; `all` takes the whole catalog. Weights are parameters x the quant's
    bits (the quant axis sets them, not a file's exact sizes). Memory counts `batch` sessions at
    `context` tokens, as `estimate --sessions B --context C` does.
    """
    import numpy as np

    from tokometer.costmodel.memory import UNQUANTIZED_BITS, weight_bytes
    from tokometer.costmodel.roofline import alu_peak_tflops
    from tokometer.costmodel.vector import ModelArrays, decode_grid

    specs = [resolve_model(n) for n in _names(models, model_catalog().ids, DEFAULT_MODEL)]
    devices = [resolve_hardware(n) for n in _names(hardware, hardware_catalog().ids, DEFAULT_HARDWARE)]
    formats = [quant_catalog().get(n) for n in _names(quants, list(QUANT_LADDER), DEFAULT_QUANT)]
    formats = _formats_for(engine, quants, formats)
    for f in formats:
        if "dense" in f.unquantized:  # the vectorised grid scales every class but the tables by one width
            raise InputError(f"{f.name} keeps the dense layers unquantized, which the sweep does not model; use estimate")
    for c in contexts:
        require_non_negative("contexts", c)
    for b in batches:
        require_positive("batches", b)
    if not (specs and devices and formats and contexts and batches):
        raise InputError("a sweep needs at least one model, hardware, quant, context and batch")
    n_h, n_q = len(devices), len(formats)
    per = {k: np.zeros((n_h, n_q)) for k in ("eta", "eta_kv", "ecc", "score_b", "alu_k", "alu_peak", "eta_c", "peak", "tau_l", "tau_s", "samp", "tau_x", "grouped", "b_state", "r_rec", "kv", "runtime", "usable")}
    engines: list[list[str]] = []
    forced = engine_catalog().get(engine) if engine else None
    for i, hw in enumerate(devices):
        engines.append([])
        for j, q in enumerate(formats):
            eng = forced or default_engine(hw, q)
            eff = efficiency_for(eng, hw, backend).for_hardware(hw)
            kv_fmt = quant_catalog().get(kv_dtype or eng.default_kv_dtype)
            if kv_fmt.usage == "weights":
                raise InputError(f"{kv_fmt.name} is not a KV-cache format (try fp16, fp8, q8_0 or q4_0)")
            engines[i].append(eng.id)
            quantized = q.kind in ("block", "mix", "group")
            per["eta"][i, j] = eff.bandwidth_fraction_for(quantized)
            per["eta_kv"][i, j] = eff.kv_fraction_for(quantized)
            per["alu_k"][i, j] = eff.decode_alu_flops_per_weight
            per["score_b"][i, j] = eff.decode_score_bytes
            per["ecc"][i, j] = eff.ecc_overhead_for(hw)
            per["alu_peak"][i, j] = alu_peak_tflops(hw) or 0.0
            per["eta_c"][i, j] = eff.decode_compute_fraction
            per["peak"][i, j] = format_peak(hw, q, eng, eff.int32_flop_per_op).tflops or 0.0
            per["tau_l"][i, j] = eff.layer_overhead_us + eff.launch_layer_us  # decode steps only
            per["tau_s"][i, j] = eff.step_overhead_us
            per["samp"][i, j] = eff.host_sampling_ns_per_vocab
            per["tau_x"][i, j] = eff.expert_overhead_us
            per["grouped"][i, j] = float(eff.grouped_experts)
            per["b_state"][i, j] = eff.recurrent_state_bytes or 0.0
            per["r_rec"][i, j] = eff.recurrent_layer_extra
            per["kv"][i, j] = kv_fmt.bytes_per_weight
            per["runtime"][i, j] = eng.runtime_overhead_gb
            per["usable"][i, j] = eng.usable_memory_fraction

    def hq(name: str) -> Any:
        return per[name].reshape(1, n_h, n_q, 1, 1)

    arrays = ModelArrays.from_specs(specs).along(0, 5)
    scale = np.array([q.bytes_per_weight for q in formats]).reshape(1, 1, n_q, 1, 1)
    kept = UNQUANTIZED_BITS / 8.0  # tables a format keeps unquantized (HF NVFP4, FP8, GPTQ, AWQ)
    head_scale = np.array(
        [[kept if ("embedding" if m.tied_embeddings else "lm_head") in q.unquantized else q.bytes_per_weight for q in formats] for m in specs]
    ).reshape(-1, 1, n_q, 1, 1)
    row_scale = np.array([kept if "embedding" in q.unquantized else q.bytes_per_weight for q in formats]).reshape(1, 1, n_q, 1, 1)
    depth = np.asarray(contexts, dtype=np.float64).reshape(1, 1, 1, -1, 1)
    batch = np.asarray(batches, dtype=np.float64).reshape(1, 1, 1, 1, -1)
    kv = per["kv"]
    kv_el = float(kv.flat[0]) if np.all(kv == kv.flat[0]) else hq("kv")
    bandwidth = np.array([hw.memory_bandwidth_gb_per_s for hw in devices]).reshape(1, n_h, 1, 1, 1)
    grid = decode_grid(
        arrays,
        weight_scale=scale,
        bandwidth_gb_per_s=bandwidth,
        bandwidth_fraction=hq("eta"),
        kv_bandwidth_fraction=hq("eta_kv"),
        alu_flops_per_weight=hq("alu_k"),
        alu_peak_tflops=hq("alu_peak"),
        decode_score_bytes=hq("score_b"),
        ecc_overhead=hq("ecc"),
        compute_fraction=hq("eta_c"),
        peak_tflops=hq("peak"),
        layer_overhead_us=hq("tau_l"),
        step_overhead_us=hq("tau_s"),
        host_sampling_ns_per_vocab=hq("samp"),
        expert_overhead_us=hq("tau_x"),
        grouped_experts=hq("grouped"),
        recurrent_state_bytes=hq("b_state"),
        recurrent_layer_extra=hq("r_rec"),
        batch=batch,
        depth_tokens=depth,
        kv_bytes_per_element=kv_el,
        head_scale=head_scale,
        row_scale=row_scale,
    )
    weights_total = np.array(
        [[weight_bytes(m, q.bits_per_weight, q.unquantized).total for q in formats] for m in specs]
    ).reshape(-1, 1, n_q, 1, 1)
    kv_bytes = arrays.kv_cached_elements(depth) * kv_el * batch
    memory_gb = (weights_total + kv_bytes) / GB + hq("runtime")
    device_gb = np.array([gpu_memory_gb(hw) for hw in devices]).reshape(1, n_h, 1, 1, 1)
    fits = memory_gb <= device_gb * hq("usable")
    return SweepResult(
        models=tuple(specs),
        hardware=tuple(devices),
        quants=tuple(formats),
        contexts=tuple(int(c) for c in contexts),
        batches=tuple(int(b) for b in batches),
        engines=tuple(tuple(row) for row in engines),
        grid=grid,
        memory_gb=memory_gb,
        fits=fits,
    )
