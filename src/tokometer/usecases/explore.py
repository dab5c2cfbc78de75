"""Exploring use-cases on top of `api.estimate`: utilisation of a measured run, "what can I run"
(`fit`) and vectorised sweeps. Shared by the CLI (`tokometer utilization|fit|sweep`) and the web app.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from tokometer.catalog import engine_catalog, hardware_catalog, model_catalog, quant_catalog
from tokometer.catalog.efficiency import efficiency_for
from tokometer.costmodel.layout import Layout
from tokometer.costmodel.utilisation import Utilisation, utilisation
from tokometer.costmodel.utilisation import (
    placement as placement,  # the web places a measurement with it
)
from tokometer.errors import InputError, require_non_negative, require_positive
from tokometer.specs import HardwareSpec, ModelSpec, QuantFormat
from tokometer.units import BILLION, GB
from tokometer.usecases.estimate import Estimate, cpu_offload, estimate
from tokometer.usecases.policy import (
    DEFAULT_HARDWARE,
    DEFAULT_MODEL,
    DEFAULT_QUANT,
    QUANT_LADDER,
    default_engine,
    quant_runs,
)
from tokometer.usecases.resolve import format_peak, resolve_hardware, resolve_model

if TYPE_CHECKING:
    from tokometer.costmodel.vector import GridStep


# --- utilisation of a measured run ------------------------------------------------------------


@dataclass(frozen=True)
class UtilizationReport:
    """A measured run against the physics of its setup (docs/PHYSICS.md section 8)."""

    estimate: Estimate
    utilisation: Utilisation
    cpu_only_tok_s: float | None



def utilization(
    model: str | ModelSpec | None = None,
    hw: str | HardwareSpec | None = None,
    *,
    measured_decode_tok_s: float,
    measured_prefill_tok_s: float | None = None,
    **options: Any,
) -> UtilizationReport:
    """MBU, MFU and the share of the ceiling a measured decode (per stream) and prefill reach."""
    require_positive("measured_decode_tok_s", measured_decode_tok_s)
    require_positive("measured_prefill_tok_s", measured_prefill_tok_s)
    if options.get("draft") is not None:
        raise InputError("utilization compares a plain decode with the physics; leave out {draft}", field="draft")
    e = estimate(model, hw, advise=False, **options)
    if measured_prefill_tok_s is not None and e.prefill is None:
        raise InputError(
            "{measured_prefill_tok_s} needs the prompt length it was measured on: {prompt_tokens} N",
            field="measured_prefill_tok_s",
        )
    setup = e.layout_setup
    cpu_only: float | None = None
    if e.offload is not None:
        cpu_only = e.offload.cpu_only_tok_s
    elif e.hardware.kind != "cpu" and setup.layout.devices == 1:
        on_cpu = cpu_offload(e.engine, e.hardware, e.quant.compute_dtype if e.quant else "fp16", 0)
        cpu_only = 1.0 / replace(setup, layout=Layout(offload=on_cpu)).step(e.step.batch, e.step.depth_tokens).time_s
    devices = setup.layout.devices
    report = utilisation(
        measured_decode_tok_s=measured_decode_tok_s,
        step=e.step,
        ceiling_tok_s=e.ceiling_tok_s,
        estimate_tok_s=e.estimate_tok_s,
        band=e.estimate_interval,
        datasheet_bandwidth_gb_per_s=e.hardware.memory_bandwidth_gb_per_s * devices,
        peak_tflops=e.peak.tflops * devices if e.peak.tflops else None,
        cpu_only_tok_s=cpu_only,
        measured_prefill_tok_s=measured_prefill_tok_s,
        prefill=e.prefill,
    )
    return UtilizationReport(estimate=e, utilisation=report, cpu_only_tok_s=cpu_only)


# --- what can I run ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FitRow:
    model: str
    name: str
    params_b: float
    active_params_b: float
    quant: str
    quant_name: str
    bits_per_weight: float
    engine: str
    weights_gb: float
    total_gb: float
    fits: bool
    context_ok: bool
    ceiling_tok_s: float
    estimate_tok_s: float
    fast_enough: bool
    max_context_tokens: int | None
    max_sessions: int | None
    reason: str

    @property
    def ok(self) -> bool:
        return self.fits and self.context_ok and self.fast_enough

    def to_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__} | {"ok": self.ok}


@dataclass(frozen=True)
class FitReport:
    hardware: HardwareSpec
    context_tokens: int
    sessions: int
    min_speed_tok_s: float | None
    quants: tuple[str, ...]
    rows: tuple[FitRow, ...]

    def to_dict(self) -> dict[str, Any]:
        hw = self.hardware
        return {
            "hardware": {
                "id": hw.id,
                "name": hw.name,
                "memory_gb": hw.memory_gb if math.isfinite(hw.memory_gb) else None,
                "memory_bandwidth_gb_per_s": hw.memory_bandwidth_gb_per_s,
            },
            "context_tokens": self.context_tokens,
            "sessions": self.sessions,
            "min_speed_tok_s": self.min_speed_tok_s,
            "quants": list(self.quants),
            "rows": [r.to_dict() for r in self.rows],
        }


def fit(
    hw: str | HardwareSpec | None = None,
    *,
    context_tokens: int = 4096,
    sessions: int = 1,
    min_speed_tok_s: float | None = None,
    engine: str | None = None,
    backend: str | None = None,
    kv_dtype: str | None = None,
    models: Sequence[str] | None = None,
    quants: Sequence[str] | None = None,
    include_all: bool = False,
    best: bool = False,
    bandwidth_gb_per_s: float | None = None,
    memory_gb: float | None = None,
    tflops: float | None = None,
) -> FitReport:
    """Which catalog models and quants fit this hardware at `context_tokens` x `sessions`, how fast
    (ceiling and estimate at that depth), and how much context or how many sessions remain.

    Rows: biggest models first, each in ladder order (best quality first); `best` keeps the first
    row of each model that fits and is fast enough; `include_all` keeps the ones that do not, with why.
    """
    require_non_negative("context_tokens", context_tokens)
    require_positive("sessions", sessions)
    require_positive("min_speed_tok_s", min_speed_tok_s)
    hardware = hw if isinstance(hw, HardwareSpec) else resolve_hardware(
        hw, bandwidth_gb_per_s=bandwidth_gb_per_s, memory_gb=memory_gb, tflops=tflops
    )
    forced = engine_catalog().get(engine) if engine else None
    ladder = [quant_catalog().get(q) for q in (quants or QUANT_LADDER)]
    specs = [resolve_model(m) for m in models] if models else [p.spec for p in model_catalog()]
    rows: list[FitRow] = []
    for spec in specs:
        for q in ladder:
            eng = forced or default_engine(hardware, q)
            if not quant_runs(q, hardware, eng):
                continue
            e = estimate(
                spec, hardware, quant=q.id, engine=eng.id, backend=backend, kv_dtype=kv_dtype,
                prompt_tokens=0, output_tokens=1, context_tokens=int(context_tokens), sessions=int(sessions),
                advise=False,
            )
            limit = spec.max_context_tokens
            context_ok = limit is None or context_tokens <= limit
            fast = min_speed_tok_s is None or e.estimate_tok_s >= min_speed_tok_s
            if not e.memory.fits:
                reason = f"needs {e.memory.total_gb:.1f} GB of {e.memory.available_gb:.1f} GB"
            elif not context_ok:
                reason = f"context limit {limit:,} tokens"
            elif not fast:
                reason = f"below {min_speed_tok_s:g} tok/s"
            else:
                reason = "fits"
            rows.append(
                FitRow(
                    model=spec.id or spec.name,
                    name=spec.name,
                    params_b=spec.total_params / BILLION,
                    active_params_b=spec.active_params(1.0) / BILLION,
                    quant=q.id,
                    quant_name=q.name,
                    bits_per_weight=e.bits_per_weight,
                    engine=eng.id,
                    weights_gb=e.weights.total / GB,
                    total_gb=e.memory.total_gb,
                    fits=e.memory.fits,
                    context_ok=context_ok,
                    ceiling_tok_s=e.ceiling_tok_s,
                    estimate_tok_s=e.estimate_tok_s,
                    fast_enough=fast,
                    max_context_tokens=e.memory.max_context_tokens,
                    max_sessions=e.memory.max_sessions,
                    reason=reason,
                )
            )
    rank = {q.id: i for i, q in enumerate(ladder)}
    rows.sort(key=lambda r: (-r.params_b, r.model, rank[r.quant]))  # biggest models first, best quant first
    if not include_all:
        rows = [r for r in rows if r.ok]
    if best:
        seen: set[str] = set()
        rows = [r for r in rows if r.ok and not (r.model in seen or seen.add(r.model))]  # type: ignore[func-returns-value]
    return FitReport(
        hardware=hardware,
        context_tokens=int(context_tokens),
        sessions=int(sessions),
        min_speed_tok_s=min_speed_tok_s,
        quants=tuple(q.id for q in ladder),
        rows=tuple(rows),
    )


# --- sweeps -----------------------------------------------------------------------------------


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

    from tokometer.costmodel.vector import ModelArrays, decode_grid

    specs = [resolve_model(n) for n in _names(models, model_catalog().ids, DEFAULT_MODEL)]
    devices = [resolve_hardware(n) for n in _names(hardware, hardware_catalog().ids, DEFAULT_HARDWARE)]
    formats = [quant_catalog().get(n) for n in _names(quants, list(QUANT_LADDER), DEFAULT_QUANT)]
    for c in contexts:
        require_non_negative("contexts", c)
    for b in batches:
        require_positive("batches", b)
    if not (specs and devices and formats and contexts and batches):
        raise InputError("a sweep needs at least one model, hardware, quant, context and batch")
    n_h, n_q = len(devices), len(formats)
    per = {k: np.zeros((n_h, n_q)) for k in ("eta", "eta_c", "peak", "tau_l", "tau_s", "kv", "runtime", "usable")}
    engines: list[list[str]] = []
    forced = engine_catalog().get(engine) if engine else None
    for i, hw in enumerate(devices):
        engines.append([])
        for j, q in enumerate(formats):
            eng = forced or default_engine(hw, q)
            eff = efficiency_for(eng, hw, backend)
            kv_fmt = quant_catalog().get(kv_dtype or eng.default_kv_dtype)
            if kv_fmt.usage == "weights":
                raise InputError(f"{kv_fmt.name} is not a KV-cache format (try fp16, fp8, q8_0 or q4_0)")
            engines[i].append(eng.id)
            per["eta"][i, j] = eff.bandwidth_fraction_for(q.kind in ("block", "mix", "group"))
            per["eta_c"][i, j] = eff.decode_compute_fraction
            per["peak"][i, j] = format_peak(hw, q, eng).tflops or 0.0
            per["tau_l"][i, j] = eff.layer_overhead_us
            per["tau_s"][i, j] = eff.step_overhead_us
            per["kv"][i, j] = kv_fmt.bytes_per_weight
            per["runtime"][i, j] = eng.runtime_overhead_gb
            per["usable"][i, j] = eng.usable_memory_fraction

    def hq(name: str) -> Any:
        return per[name].reshape(1, n_h, n_q, 1, 1)

    arrays = ModelArrays.from_specs(specs).along(0, 5)
    scale = np.array([q.bytes_per_weight for q in formats]).reshape(1, 1, n_q, 1, 1)
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
        compute_fraction=hq("eta_c"),
        peak_tflops=hq("peak"),
        layer_overhead_us=hq("tau_l"),
        step_overhead_us=hq("tau_s"),
        batch=batch,
        depth_tokens=depth,
        kv_bytes_per_element=kv_el,
    )
    params = np.array([m.total_params for m in specs]).reshape(-1, 1, 1, 1, 1)
    kv_bytes = arrays.kv_cached_elements(depth) * kv_el * batch
    memory_gb = (params * scale + kv_bytes) / GB + hq("runtime")
    device_gb = np.array([hw.memory_gb for hw in devices]).reshape(1, n_h, 1, 1, 1)
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
