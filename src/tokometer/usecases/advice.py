"""What to do instead when a setup offloads or does not fit: a smaller quant that fits whole, or no
offload at all (docs/PHYSICS.md, section 7). `report/json.py` words the advice; the nearest setups that
fit, over every lever, are `usecases/remedies.py`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from tokometer.catalog import quant_catalog
from tokometer.costmodel.layout import Setup
from tokometer.costmodel.memory import memory_plan, weight_bytes
from tokometer.domain.specs import EngineSpec, ModelSpec, ParamGroups
from tokometer.domain.units import GB
from tokometer.usecases.policy import ADVICE_LADDER, gpu_memory_gb, quant_runs
from tokometer.usecases.resolve import setup_for_format


@dataclass(frozen=True)
class QuantAdvice:
    """What to do instead of offloading or overflowing memory; `report/json.py` words it.

    `no-offload-needed`: the model fits whole, all layers on the GPU run at `advised_tok_s`.
    `drop-quant`: `quant_name` (`weights_gb`) fits whole and decodes at `advised_tok_s`.
    `current_tok_s` is this setup's speed; `gpu_layers` its layers on the GPU when offloading layers,
    `expert_layers` the layers whose experts sit in system RAM when offloading experts.
    """

    kind: Literal["no-offload-needed", "drop-quant"]
    hardware_name: str
    n_layers: int
    gpu_layers: int | None
    advised_tok_s: float
    current_tok_s: float
    quant_name: str | None = None
    weights_gb: float | None = None
    expert_layers: int | None = None


def quant_advice(
    spec: ModelSpec,
    setup: Setup,
    engine: EngineSpec,
    context: int,
    sessions: int,
    batch: int,
    depth: float,
    fits: bool,
    tok_s: float,
) -> QuantAdvice | None:
    """'Drop a quant step rather than offload' (docs/PHYSICS.md, section 7), when a smaller quant of the
    same model fits entirely on the device and decodes faster than this setup; or 'no need to offload'
    when the model fits as it is."""
    off = setup.layout.offload
    offloading = off is not None and off.active(spec.n_layers)
    hardware = setup.hardware
    if (fits and not offloading) or setup.layout.devices > 1 or not math.isfinite(hardware.memory_gb):
        return None
    def fits_whole(weights: ParamGroups) -> bool:
        return memory_plan(
            spec,
            weights,
            gpu_memory_gb(hardware),
            usable_fraction=engine.usable_memory_fraction,
            runtime_overhead_gb=engine.runtime_overhead_gb,
            context_tokens=context,
            sessions=sessions,
            kv_bytes_per_element=setup.kv_bytes_per_element,
        ).fits

    experts = off.expert_layers if offloading and off is not None and off.expert_layers else None
    gpu_layers = off.gpu_layers if offloading and off is not None and not experts else None
    if (gpu_layers is not None or experts) and fits_whole(setup.weights):
        whole = 1.0 / setup.with_expert_layers(0).step(batch, depth).time_s
        return QuantAdvice("no-offload-needed", hardware.name, spec.n_layers, gpu_layers, whole, tok_s, expert_layers=experts)
    bits = setup.weights.total * 8.0 / spec.total_params if spec.total_params else math.inf
    for quant_id in ADVICE_LADDER:
        candidate = quant_catalog().get(quant_id)
        if candidate.bits_per_weight >= bits - 1e-9 or not quant_runs(candidate, hardware, engine):
            continue
        weights = weight_bytes(spec, candidate.bits_per_weight, candidate.unquantized)
        if not fits_whole(weights):
            continue
        smaller = setup_for_format(spec, candidate, weights, setup, engine)
        speed = 1.0 / smaller.step(batch, depth).time_s
        if speed <= tok_s:
            return None
        return QuantAdvice(
            "drop-quant", hardware.name, spec.n_layers, gpu_layers, speed, tok_s, candidate.name, weights.total / GB,
            expert_layers=experts,
        )
    return None
