"""`tokometer.estimate`: one setup predicted; an `Estimate` with the CLI's JSON."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from tokometer.api.result import JsonResult
from tokometer.usecases.estimate import Estimate

if TYPE_CHECKING:
    from tokometer.domain.specs import HardwareSpec, ModelSpec
    from tokometer.usecases.request import EstimateRequest


@dataclass(frozen=True)
class EstimateResult(Estimate, JsonResult):
    """An `Estimate` (every typed field, so also a `tokometer.Estimate`) with the CLI's JSON."""

    def to_dict(self) -> dict[str, Any]:
        """The `tokometer estimate --json` shape (`report.json.estimate_json`)."""
        from tokometer.report.json import estimate_json

        return estimate_json(self)


def estimate(
    request: EstimateRequest | str | ModelSpec | None = None,
    hw: str | HardwareSpec | None = None,
    /,
    **fields_: Any,
) -> EstimateResult:
    """Predict decode (ceiling and estimate), prefill/TTFT, latency and memory for one setup.

    Takes an `EstimateRequest`, or its fields as keyword arguments (`estimate("llama-3.1-8b",
    "rtx-4090", quant="q4_k_m")`), as `tokometer estimate` takes its options; the levers are
    documented on `usecases.estimate.estimate`. `to_json()` is `tokometer estimate --json`.
    """
    from tokometer.usecases.estimate import estimate as run

    result = run(request, hw, **fields_)
    return EstimateResult(**{f.name: getattr(result, f.name) for f in fields(result) if f.init})
