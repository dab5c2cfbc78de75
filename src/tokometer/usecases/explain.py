"""The parts of an estimate that explain it: what the memory holds and what a draft buys.

`memory_held` prices what the setup keeps on its devices (weights left on the GPU, the draft, KV for
the planned context and sessions) and, when layers or experts sit in system RAM, both sides of the
split (`OffloadPlan`); `draft_for` lays out the speculative-decoding draft and its rate (`Draft`).
`usecases/estimate.py` assembles these into an `Estimate`; `usecases/advice.py` says what to do
instead when the setup offloads or does not fit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tokometer.catalog import quant_catalog
from tokometer.costmodel.layout import Offload, Setup, kv_shards, replicated_weights
from tokometer.costmodel.memory import (
    MemoryPlan,
    add_weights,
    kv_cache_bytes,
    kv_view,
    memory_plan,
    split_experts,
    split_weights,
    weight_bytes,
)
from tokometer.costmodel.speculative import Speculation, check_speculation, speculate
from tokometer.domain.specs import EngineSpec, ModelSpec, ParamGroups, QuantFormat
from tokometer.domain.units import GB
from tokometer.errors import InputError
from tokometer.usecases.advice import QuantAdvice
from tokometer.usecases.formats import check_format
from tokometer.usecases.notices import CpuSideShort, Notice, PastContextLimit
from tokometer.usecases.policy import gpu_memory_gb
from tokometer.usecases.resolve import resolve_model, resolve_quant, setup_for_format


@dataclass(frozen=True)
class Draft:
    """The draft model of speculative decoding and what it buys.

    `speculation` is at the workload's context depth (the decode rows); `tpot_s` is the time per
    token at the mean decode depth, E[pass time] / E[tokens per pass], which replaces the plain
    step in TPOT, end-to-end and the feel verdict: one speculative rate for every line.
    """

    model: ModelSpec
    quant: QuantFormat | None
    weights: ParamGroups
    setup: Setup
    speculation: Speculation
    tpot_s: float


@dataclass(frozen=True)
class OffloadPlan:
    """Where the layers of a partially offloaded model sit, and what each side needs."""

    offload: Offload
    n_layers: int
    gpu_weights_gb: float
    cpu_weights_gb: float
    gpu_kv_gb: float
    cpu_kv_gb: float
    cpu_available_gb: float
    gpu_only_tok_s: float
    cpu_only_tok_s: float
    advice: QuantAdvice | None

    @property
    def cpu_memory_gb(self) -> float:
        return self.cpu_weights_gb + self.cpu_kv_gb

    @property
    def fits_cpu(self) -> bool:
        return self.cpu_memory_gb <= self.cpu_available_gb


def memory_held(
    setup: Setup,
    eng: EngineSpec,
    draft_info: Draft | None,
    plan_context: int,
    n_sessions: int,
    batch: int,
    depth: float,
    warnings: list[Notice | str],
) -> tuple[MemoryPlan, OffloadPlan | None, ModelSpec]:
    """What the setup holds: the GPU side's memory plan (weights left on the GPU, the draft, KV for the
    planned context and sessions), the offload plan when layers or experts sit in system RAM, and the
    KV view of the model those plans priced (docs/PHYSICS.md section 7)."""
    spec, weights, hardware, layout, kv_el = setup.model, setup.weights, setup.hardware, setup.layout, setup.kv_bytes_per_element
    if spec.max_context_tokens is not None and plan_context > spec.max_context_tokens:
        warnings.append(PastContextLimit(plan_context, spec.name, spec.max_context_tokens))
    off = layout.offload if layout.offload and layout.offload.active(spec.n_layers) else None
    gpu_share = off.gpu_layers / spec.n_layers if off and off.mode == "cpu" else 1.0
    resident = replicated_weights(weights, layout)
    if off is not None and off.expert_layers:
        resident, _ = split_experts(weights, off.expert_share(spec.n_layers))
    elif off is not None:
        resident, _ = split_weights(weights, off.gpu_layers / spec.n_layers, off.mode == "stream")
    extras = [draft_info.model] if draft_info else []
    kv_model = kv_view(
        spec, layers_share=gpu_share, copies=max(1, round(layout.tp / kv_shards(spec, layout.tp))), extra=extras
    )
    plan = memory_plan(
        kv_model,
        add_weights(resident, *([draft_info.weights] if draft_info else [])),
        gpu_memory_gb(hardware) * layout.devices,
        usable_fraction=eng.usable_memory_fraction,
        runtime_overhead_gb=eng.runtime_overhead_gb * layout.devices,
        context_tokens=plan_context,
        sessions=n_sessions,
        kv_bytes_per_element=kv_el,
    )
    offload_plan: OffloadPlan | None = None
    if off is not None:
        offload_plan = _offload_plan(setup, off, plan_context, n_sessions, eng, batch, depth)
        if not offload_plan.fits_cpu:
            warnings.append(CpuSideShort(offload_plan.cpu_memory_gb, offload_plan.cpu_available_gb, off.cpu.name))
    return plan, offload_plan, kv_model


def draft_for(
    target: ModelSpec,
    name: str | ModelSpec,
    quant: str | None,
    target_fmt: QuantFormat | None,
    setup: Setup,
    engine: EngineSpec,
    *,
    acceptance: float,
    draft_tokens: int,
    batch: int,
    depth: float,
    mean_depth: float,
) -> Draft:
    """The draft on the same devices and engine; its tokenizer must be the target's."""
    check_speculation(acceptance, draft_tokens)
    spec = name if isinstance(name, ModelSpec) else resolve_model(name)
    if target.tokenizer and spec.tokenizer and target.tokenizer != spec.tokenizer:
        raise InputError(
            f"draft {spec.name} uses the {spec.tokenizer} tokenizer but {target.name} uses {target.tokenizer}: "
            "speculative decoding needs the same tokenizer",
            field="draft",
        )
    same = quant_catalog().find(target_fmt.id) if target_fmt is not None and quant is None else None
    fmt = same if same is not None else resolve_quant(quant, None, spec)
    if fmt is not None and quant is not None:
        check_format(engine, fmt, field="draft_quant")
    weights = weight_bytes(spec, fmt.bits_per_weight if fmt else None, fmt.unquantized if fmt else ())
    draft_setup = setup_for_format(spec, fmt, weights, setup, engine, replace(setup.layout, offload=None))
    speculation = speculate(
        setup, draft_setup, acceptance=acceptance, draft_tokens=draft_tokens, batch=batch, depth_tokens=depth
    )
    mean = speculate(
        setup, draft_setup, acceptance=acceptance, draft_tokens=draft_tokens, batch=batch, depth_tokens=mean_depth
    ) if mean_depth != depth else speculation
    return Draft(
        model=spec, quant=fmt, weights=weights, setup=draft_setup, speculation=speculation,
        tpot_s=mean.pass_time_s / mean.tokens_per_pass,
    )


def _offload_plan(
    setup: Setup, off: Offload, context: int, sessions: int, engine: EngineSpec, batch: int, depth: float
) -> OffloadPlan:
    """Both sides of a partial offload: what each holds, and the speed at the two extremes.

    Expert offload keeps every layer and the whole KV cache on the GPU; system RAM holds the experts.
    """
    spec = setup.model
    share = off.gpu_layers / spec.n_layers
    if off.expert_layers:
        gpu, cpu = split_experts(setup.weights, off.expert_share(spec.n_layers))
    else:
        gpu, cpu = split_weights(setup.weights, share, off.mode == "stream")
    kv = kv_cache_bytes(spec, context, setup.kv_bytes_per_element) * sessions
    gpu_kv = kv if off.mode == "stream" or off.expert_layers else kv * share
    return OffloadPlan(
        offload=off,
        n_layers=spec.n_layers,
        gpu_weights_gb=gpu.total / GB,
        cpu_weights_gb=cpu.total / GB,
        gpu_kv_gb=gpu_kv / GB,
        cpu_kv_gb=(kv - gpu_kv) / GB,
        cpu_available_gb=off.cpu.memory_gb * engine.usable_memory_fraction,
        gpu_only_tok_s=1.0 / setup.with_expert_layers(0).step(batch, depth).time_s,
        cpu_only_tok_s=1.0 / setup.with_expert_layers(0).with_gpu_layers(0).step(batch, depth).time_s,
        advice=None,
    )
