"""`What can I run`: which catalog models and quants fit a device at a context and a number of
sessions, how fast, and what room is left (`tokometer fit`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tokometer.catalog import engine_catalog, model_catalog, quant_catalog
from tokometer.domain.specs import HardwareSpec
from tokometer.domain.units import BILLION, GB
from tokometer.errors import require_non_negative, require_positive
from tokometer.usecases.estimate import estimate
from tokometer.usecases.policy import (
    QUANT_LADDER,
    default_engine,
    quant_runs,
)
from tokometer.usecases.resolve import resolve_hardware, resolve_model


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
    engine_name: str
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
                    engine_name=eng.name,
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
