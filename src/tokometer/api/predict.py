"""`tokometer.estimate`: one setup predicted; an `Estimate` with the CLI's JSON. `tokometer.utilization`:
a measured run placed against that prediction (MBU, MFU, share of the ceiling)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from tokometer.api.result import JsonResult
from tokometer.usecases.estimate import Estimate

if TYPE_CHECKING:
    from tokometer.domain.specs import HardwareSpec, ModelSpec
    from tokometer.usecases.request import EstimateRequest
    from tokometer.usecases.utilization import UtilizationReport


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


@dataclass(frozen=True)
class UtilizationResult(JsonResult):
    """A measured run against the physics of its setup (`report`: its `estimate`, the MBU, MFU and the
    share of the ceiling in `utilisation`, the CPU-only speed), with the CLI's JSON."""

    report: UtilizationReport

    def to_dict(self) -> dict[str, Any]:
        """The `tokometer utilization --json` shape (`report.json.utilization_dict`)."""
        from tokometer.report.json import utilization_dict

        return utilization_dict(self.report)


def utilization(
    model: str | ModelSpec | None = None,
    hw: str | HardwareSpec | None = None,
    *,
    measured_decode_tok_s: float,
    measured_prefill_tok_s: float | None = None,
    **fields_: Any,
) -> UtilizationResult:
    """How much of the hardware a measured run uses: MBU, MFU, share of the ceiling, and a verdict
    (`tokometer utilization`).

    `measured_decode_tok_s` is per stream, as benchmarks report it; `measured_prefill_tok_s` needs the
    prompt it was measured on (`prompt_tokens`). The setup takes `estimate`'s fields as keyword arguments.
    """
    from tokometer.usecases.utilization import utilization as run

    return UtilizationResult(run(model, hw, measured_decode_tok_s=measured_decode_tok_s,
                                 measured_prefill_tok_s=measured_prefill_tok_s, **fields_))
