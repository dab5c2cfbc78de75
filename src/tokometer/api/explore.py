"""`tokometer.fit` (what fits a device) and `tokometer.sweep` (every combination at once)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tokometer.api.result import JsonResult
from tokometer.api.serving import names

if TYPE_CHECKING:
    from tokometer.domain.specs import HardwareSpec
    from tokometer.usecases.fit import FitReport
    from tokometer.usecases.sweep import SweepResult


@dataclass(frozen=True)
class FitResult(JsonResult):
    """What fits a device: one row per model and quant, with speed and context (`report.rows`)."""

    report: FitReport

    def to_dict(self) -> dict[str, Any]:
        """The `tokometer fit --json` shape."""
        return self.report.to_dict()


def fit(hw: str | HardwareSpec | None = None, *, model: str | Sequence[str] | None = None, quant: str | Sequence[str] | None = None, **options: Any) -> FitResult:
    """What can run on `hw`: catalog models and quants that fit, how fast, with how much context (`tokometer fit`).

    Options as the command's, in its units: `context_tokens` (4096), `sessions` (1), `min_speed_tok_s`,
    `engine`, `backend`, `kv_dtype`, `include_all`, `best`; `model`/`quant` narrow the catalog.
    """
    from tokometer.usecases.fit import fit as run_fit

    options.setdefault("context_tokens", 4096)
    options.setdefault("sessions", 1)
    return FitResult(run_fit(hw, models=names(model), quants=names(quant), **options))


@dataclass(frozen=True)
class SweepTable(JsonResult):
    """Decode over every combination of models x hardware x quants x contexts x batches (`result`)."""

    result: SweepResult

    def to_dict(self) -> dict[str, Any]:
        """The `tokometer sweep --json` shape."""
        return self.result.to_dict()


def sweep(
    *,
    model: str | Sequence[str] | None = None,
    hw: str | Sequence[str] | None = None,
    quant: str | Sequence[str] | None = None,
    context: Sequence[int] = (512,),
    batch: Sequence[int] = (1,),
    **options: Any,
) -> SweepTable:
    """Decode speed over models x hardware x quants x contexts x batches, vectorised (`tokometer sweep`).

    Names are comma-separated strings or lists (`all`: the catalog); `context` in tokens; options
    `engine`, `backend`, `kv_dtype` as on the command line.
    """
    from tokometer.usecases.sweep import sweep as run_sweep

    return SweepTable(run_sweep(names(model), names(hw), names(quant), tuple(context), tuple(batch), **options))
