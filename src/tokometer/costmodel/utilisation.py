"""Utilisation of a measured run: MBU, MFU, the share of the ceiling, and what the gap means.

MBU = bytes_step * steps/s / BW and MFU = FLOP/s / peak (docs/PHYSICS.md, section 8). One rule for
the verdict, used by `tokometer utilization`, bench grading and the web.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tokometer.costmodel.roofline import Prefill, Step
from tokometer.domain.specs import Interval, _Plain
from tokometer.domain.units import GB, TFLOP


@dataclass(frozen=True, slots=True)
class Utilisation(_Plain):
    measured_decode_tok_s: float
    bytes_per_step: float
    flops_per_step: float
    datasheet_bandwidth_gb_per_s: float
    achieved_bandwidth_gb_per_s: float
    mbu: float
    peak_tflops: float | None
    mfu: float | None
    ceiling_tok_s: float
    estimate_tok_s: float
    ceiling_fraction: float
    estimate_fraction: float
    verdict: str
    findings: tuple[str, ...]
    measured_prefill_tok_s: float | None = None
    prefill_mfu: float | None = None
    prefill_ceiling_tok_s: float | None = None
    prefill_ceiling_fraction: float | None = None
    prefill_estimate_fraction: float | None = None


def mbu(bytes_per_s: float, bandwidth_gb_per_s: float) -> float:
    """Memory-bandwidth utilisation: bytes moved per second over the datasheet bandwidth (GB/s, decimal)."""
    return bytes_per_s / (bandwidth_gb_per_s * GB)


def mfu(flops_per_s: float, peak_tflops: float | None) -> float | None:
    """Model FLOPs utilisation: FLOP/s over the datasheet peak (TFLOP/s); None without a peak."""
    return flops_per_s / (peak_tflops * TFLOP) if peak_tflops else None


Placement = Literal["above-ceiling", "above-band", "in-band", "below-band", "far-below"]
FAR_BELOW_FRACTION = 0.5  # below half the estimate, something is wrong rather than slow
NEAR_CPU_FACTOR = 2.0  # within twice the all-on-CPU speed, the layers are probably not on the GPU


def placement(
    measured_tok_s: float,
    *,
    ceiling_tok_s: float,
    estimate_tok_s: float,
    band_low_tok_s: float | None,
    band_high_tok_s: float | None,
    cpu_only_tok_s: float | None = None,
) -> Placement:
    """Where a measured decode speed sits: the one rule behind `utilization`, bench grading and the web.

    Above the ceiling is physically suspect; above or inside the 80 % band is a fast or expected
    engine; below the band is slow, and far below (under half the estimate, or near the speed with
    every layer on the CPU) points at a setup fault. Without a band, only the ceiling and the
    far-below test apply.
    """
    if measured_tok_s > ceiling_tok_s:
        return "above-ceiling"
    if band_high_tok_s is not None and measured_tok_s > band_high_tok_s:
        return "above-band"
    if band_low_tok_s is not None and measured_tok_s >= band_low_tok_s:
        return "in-band"
    near_cpu = cpu_only_tok_s is not None and measured_tok_s < NEAR_CPU_FACTOR * cpu_only_tok_s
    if measured_tok_s < FAR_BELOW_FRACTION * estimate_tok_s or near_cpu:
        return "far-below"
    return "below-band" if band_low_tok_s is not None else "in-band"


ABOVE_CEILING = (
    "above the physical ceiling: the bytes per token cannot have been read that fast. Check for a wrong "
    "spec (quantization, bits per weight, active parameters of a MoE, the hardware), a cache hit (prompt "
    "or KV reuse counted as generation), speculative decoding, or mis-counted tokens (prompt tokens "
    "included, another tokenizer's count)"
)
FAR_BELOW = (
    "far below the estimate: look for layers offloaded to the CPU (llama.cpp prints 'offloaded N/M "
    "layers'; 3-10 tok/s on a GPU-class machine is the tell-tale), a CPU fallback (no GPU build, driver "
    "missing), weights spilled into shared system memory, or another process on the device"
)
# the same verdict when the device is the CPU itself: no layers to offload, other culprits
FAR_BELOW_CPU = (
    "far below the estimate: on a CPU, look for fewer threads than physical cores (llama.cpp -t), another "
    "process using the cores or the memory bandwidth, memory in one channel only, or a build without the "
    "CPU's vector extensions"
)


def utilisation(
    *,
    measured_decode_tok_s: float,
    step: Step,
    ceiling_tok_s: float,
    estimate_tok_s: float,
    band: Interval,
    datasheet_bandwidth_gb_per_s: float,
    peak_tflops: float | None,
    cpu_only_tok_s: float | None = None,
    measured_prefill_tok_s: float | None = None,
    prefill: Prefill | None = None,
    on_cpu: bool = False,
) -> Utilisation:
    """MBU = bytes_step * steps/s / BW; MFU = FLOP/s / peak; and a verdict in plain words.

    `measured_decode_tok_s` is per stream, so one step per token of each stream. `on_cpu`: the device
    is a CPU, so the far-below advice names a CPU's culprits, not offloaded layers.
    """
    steps_per_s = measured_decode_tok_s
    achieved = step.bytes * steps_per_s
    memory_use = mbu(achieved, datasheet_bandwidth_gb_per_s)
    compute_use = mfu(step.flops * steps_per_s, peak_tflops)
    ceiling_fraction = measured_decode_tok_s / ceiling_tok_s
    estimate_fraction = measured_decode_tok_s / estimate_tok_s
    findings: list[str] = []
    where = placement(
        measured_decode_tok_s,
        ceiling_tok_s=ceiling_tok_s,
        estimate_tok_s=estimate_tok_s,
        band_low_tok_s=band.low,
        band_high_tok_s=band.high,
        cpu_only_tok_s=cpu_only_tok_s,
    )
    if where == "above-ceiling":
        verdict = f"decode {ceiling_fraction:.0%} of the ceiling: " + ABOVE_CEILING
    elif where == "above-band":
        verdict = (
            f"decode {ceiling_fraction:.0%} of the ceiling, above the estimate's 80 % band: a faster engine "
            "or kernels than the fitted ones; nothing is wrong"
        )
    elif where == "in-band":
        verdict = f"decode {ceiling_fraction:.0%} of the ceiling, within the estimate's 80 % band: as expected"
    elif where == "far-below":
        verdict = f"decode {ceiling_fraction:.0%} of the ceiling, {estimate_fraction:.0%} of the estimate: " + (FAR_BELOW_CPU if on_cpu else FAR_BELOW)
    else:
        verdict = (
            f"decode {ceiling_fraction:.0%} of the ceiling, below the estimate's 80 % band: engine overheads "
            "(small model, debug build, no CUDA graphs), power or thermal limits, a deeper context than "
            "assumed, or other load on the device"
        )
    if cpu_only_tok_s is not None and measured_decode_tok_s < NEAR_CPU_FACTOR * cpu_only_tok_s:
        findings.append(
            f"the measurement is near CPU-only speed for this model ({cpu_only_tok_s:.3g} tok/s with every layer in "
            "system RAM): check that the layers are on the GPU"
        )
    if memory_use > 1.0:
        findings.append(f"memory-bandwidth utilisation {memory_use:.0%} exceeds 100 %: the bytes per token are over-counted")

    prefill_mfu = prefill_ceiling = prefill_ceiling_fraction = prefill_estimate_fraction = None
    if measured_prefill_tok_s is not None and prefill is not None:
        flops_per_token = prefill.flops / prefill.prompt_tokens
        if peak_tflops:
            prefill_mfu = mfu(flops_per_token * measured_prefill_tok_s, peak_tflops)
            prefill_ceiling = peak_tflops * TFLOP / flops_per_token
            prefill_ceiling_fraction = measured_prefill_tok_s / prefill_ceiling
        prefill_estimate_fraction = measured_prefill_tok_s / prefill.tok_s
        if prefill_ceiling is not None and measured_prefill_tok_s > prefill_ceiling:
            findings.append(
                f"prefill at {prefill_ceiling_fraction:.0%} of the compute peak is impossible: a prompt-cache hit "
                "(reused prefix) or a mis-counted prompt"
            )
        elif prefill_estimate_fraction < 0.5:
            findings.append(
                f"prefill at {prefill_estimate_fraction:.0%} of the estimate: a small batch/ubatch size, no flash "
                "attention, CPU offload, or a short prompt dominated by fixed costs"
            )
    return Utilisation(
        measured_decode_tok_s=measured_decode_tok_s,
        bytes_per_step=step.bytes,
        flops_per_step=step.flops,
        datasheet_bandwidth_gb_per_s=datasheet_bandwidth_gb_per_s,
        achieved_bandwidth_gb_per_s=achieved / GB,
        mbu=memory_use,
        peak_tflops=peak_tflops,
        mfu=compute_use,
        ceiling_tok_s=ceiling_tok_s,
        estimate_tok_s=estimate_tok_s,
        ceiling_fraction=ceiling_fraction,
        estimate_fraction=estimate_fraction,
        verdict=verdict,
        findings=tuple(findings),
        measured_prefill_tok_s=measured_prefill_tok_s,
        prefill_mfu=prefill_mfu,
        prefill_ceiling_tok_s=prefill_ceiling,
        prefill_ceiling_fraction=prefill_ceiling_fraction,
        prefill_estimate_fraction=prefill_estimate_fraction,
    )
