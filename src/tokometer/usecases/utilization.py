"""A measured run against the physics of its setup: MBU, MFU, the share of the ceiling and where it
sits against the band (`tokometer utilization`, docs/PHYSICS.md section 8).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from tokometer.bench.plausibility import MAX_STREAM_TOK_S
from tokometer.costmodel.layout import Layout
from tokometer.costmodel.utilisation import Utilisation, placement, utilisation
from tokometer.domain.specs import HardwareSpec, ModelSpec
from tokometer.errors import InputError, require_positive
from tokometer.usecases.estimate import Estimate, estimate
from tokometer.usecases.placement import cpu_offload


@dataclass(frozen=True)
class UtilizationReport:
    """A measured run against the physics of its setup (docs/PHYSICS.md section 8)."""

    estimate: Estimate
    utilisation: Utilisation
    cpu_only_tok_s: float | None
    placement: str  # where the measurement sits: above-ceiling, above-band, in-band, below-band, far-below


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
    if measured_decode_tok_s > MAX_STREAM_TOK_S:
        raise InputError(
            f"{{measured_decode_tok_s}} = {measured_decode_tok_s:g} tok/s is beyond any hardware (at most {MAX_STREAM_TOK_S:,g})",
            field="measured_decode_tok_s",
        )
    if options.get("draft") is not None:
        raise InputError("utilization compares a plain decode with the physics; leave out {draft}", field="draft")
    e = estimate(model, hw, **{**options, "advise": False})  # a request may carry advise (the estimate form's field): never here
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
        on_cpu=e.hardware.kind == "cpu",
    )
    where = placement(measured_decode_tok_s, ceiling_tok_s=e.ceiling_tok_s, estimate_tok_s=e.estimate_tok_s,
                      band_low_tok_s=e.estimate_interval.low, band_high_tok_s=e.estimate_interval.high, cpu_only_tok_s=cpu_only)
    return UtilizationReport(estimate=e, utilisation=report, cpu_only_tok_s=cpu_only, placement=where)
