"""The nearest setups that fit, for a setup that does not (issue #14, item 2).

When the weights, KV cache and runtime overflow the device, the honest headline is "does not fit",
followed by what would: the best smaller weight format the engine runs on this device (the quant
ladder of `policy.py`), CPU offload of as few layers as needed (llama.cpp-family engines), or the
fewest identical devices that hold it (a layer split for llama.cpp, tensor parallel otherwise).
Each remedy is a whole estimate of the changed request, so its speed is the model's, not a guess.

The estimate function is passed in (`estimate()` calls `nearest_fits(request, result, estimate)`) and
read through the `Estimated` protocol, so this module does not import the estimate: no cycle.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from tokometer.catalog import quant_catalog
from tokometer.costmodel.layout import Setup
from tokometer.costmodel.memory import MemoryPlan
from tokometer.domain.specs import EngineSpec, HardwareSpec, ModelSpec, ParamGroups
from tokometer.domain.units import GB
from tokometer.errors import TokometerError
from tokometer.usecases.policy import ADVICE_LADDER, quant_runs
from tokometer.usecases.request import EstimateRequest


class Estimated(Protocol):
    """What this module reads of an estimate (`usecases.estimate.Estimate` has it all)."""

    @property
    def model(self) -> ModelSpec: ...
    @property
    def hardware(self) -> HardwareSpec: ...
    @property
    def engine(self) -> EngineSpec: ...
    @property
    def weights(self) -> ParamGroups: ...
    @property
    def memory(self) -> MemoryPlan: ...
    @property
    def offload(self) -> Any: ...
    @property
    def estimate_tok_s(self) -> float: ...
    @property
    def ceiling_tok_s(self) -> float: ...
    @property
    def bits_per_weight(self) -> float: ...
    @property
    def layout_setup(self) -> Setup: ...

RemedyKind = Literal["quant", "offload", "devices"]
DEVICE_COUNTS = (2, 4, 8)  # the device counts tried, fewest first


@dataclass(frozen=True)
class Remedy:
    """One setup near the request that fits, and how fast it decodes (one stream at the request's depth).

    `quant`: the weights in `quant_name` (`weights_gb`). `offload`: `gpu_layers` of `n_layers` on the
    GPU, the rest on `cpu_hw`. `devices`: `devices` identical devices, split by `tp` x `pp`.
    """

    kind: RemedyKind
    estimate_tok_s: float
    ceiling_tok_s: float
    memory_gb: float  # what the remedy needs on the (GPU) device(s)
    available_gb: float
    quant: str | None = None
    quant_name: str | None = None
    weights_gb: float | None = None
    gpu_layers: int | None = None
    n_layers: int | None = None
    cpu_hw: str | None = None
    devices: int | None = None
    tp: int | None = None
    pp: int | None = None


EstimateFn = Callable[[EstimateRequest], Estimated]


def nearest_fits(request: EstimateRequest, current: Estimated, run: EstimateFn) -> tuple[Remedy, ...]:
    """The nearest setups that fit `request`, one of each kind that applies, or () when it fits."""
    if current.memory.fits or not math.isfinite(current.hardware.memory_gb):
        return ()
    if request.offload_experts in (0, "0"):  # no expert in RAM is no expert offload: the same request
        request = replace(request, offload_experts=None)
    found = [_smaller_quant(request, current, run), _offload(request, current, run), _more_devices(request, current, run)]
    return tuple(r for r in found if r is not None)


def _try(run: EstimateFn, request: EstimateRequest) -> Estimated | None:
    """The estimate of a changed request, or None when the change is not a valid setup."""
    try:
        return run(replace(request, advise=False))
    except TokometerError:
        return None


def _remedy(kind: RemedyKind, e: Estimated, **extra: object) -> Remedy:
    return Remedy(
        kind, e.estimate_tok_s, e.ceiling_tok_s, e.memory.total_gb, e.memory.available_gb, **extra  # type: ignore[arg-type]
    )


def _smaller_quant(request: EstimateRequest, current: Estimated, run: EstimateFn) -> Remedy | None:
    """The best format of the ladder below the current bits that the engine runs here and that fits."""
    bits = current.bits_per_weight
    for quant_id in ADVICE_LADDER:
        fmt = quant_catalog().get(quant_id)
        if fmt.bits_per_weight >= bits - 1e-9 or not quant_runs(fmt, current.hardware, current.engine):
            continue
        e = _try(run, replace(request, quant=quant_id, bits=None, weights_gb=None, engine=current.engine.id))
        if e is not None and e.memory.fits:
            return _remedy("quant", e, quant=fmt.id, quant_name=fmt.name, weights_gb=e.weights.total / GB)
    return None


def _offload(request: EstimateRequest, current: Estimated, run: EstimateFn) -> Remedy | None:
    """The most layers on the GPU that fit, the rest on the CPU (llama.cpp-family engines, one GPU)."""
    engine = current.engine
    layout = current.layout_setup.layout
    if (engine.based_on or engine.id) != "llama-cpp" or current.hardware.kind != "gpu" or layout.devices > 1:
        return None
    if current.offload is not None:
        return None  # already offloaded: the fewer-layers answer is the offload curve
    n_layers = current.model.n_layers

    def fitting(layers: int) -> Estimated | None:
        e = _try(run, replace(request, gpu_layers=layers, engine=engine.id))
        return e if e is not None and e.memory.fits and e.offload is not None and e.offload.fits_cpu else None

    low, best = 1, None
    high = n_layers - 1
    while low <= high:  # the GPU side grows with its layers: the largest count that fits
        mid = (low + high) // 2
        e = fitting(mid)
        if e is not None:
            best, low = (mid, e), mid + 1
        else:
            high = mid - 1
    if best is None:
        return None
    layers, e = best
    cpu = e.offload.offload.cpu if e.offload is not None else None
    return _remedy("offload", e, gpu_layers=layers, n_layers=n_layers, cpu_hw=cpu.id if cpu else None)


def _more_devices(request: EstimateRequest, current: Estimated, run: EstimateFn) -> Remedy | None:
    """The fewest identical GPUs that hold it: llama.cpp splits by layer (PP), other engines use TP."""
    layout = current.layout_setup.layout
    if current.hardware.kind != "gpu" or layout.devices > 1 or current.offload is not None:
        return None
    by_layer = (current.engine.based_on or current.engine.id) == "llama-cpp"
    heads = current.model.n_heads
    for n in DEVICE_COUNTS:
        if not by_layer and heads and heads % n:
            continue  # vLLM and the like refuse a head count that does not split
        change = {"pp": n} if by_layer else {"tp": n}
        e = _try(run, replace(request, engine=current.engine.id, **change))  # type: ignore[arg-type]
        if e is not None and e.memory.fits:
            return _remedy("devices", e, devices=n, tp=e.layout_setup.layout.tp, pp=e.layout_setup.layout.pp)
    return None
