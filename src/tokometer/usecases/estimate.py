"""The estimate use-case: an `EstimateRequest` in, an `Estimate` (data only) out.

`estimate()` resolves names and numbers into specs (`resolve.py`), applies the product defaults
(`policy.py`), lays the model out on its devices (`placement.py`), runs the pure cost model and gathers
the result.
It prints nothing and serialises nothing: `report/json.py` owns the JSON shape, what it warns about
is typed (`notices.py`) and worded by `report/notices.py`, and the curves around the setup are
`curves.estimate_curves`, computed when asked for.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from tokometer.catalog import engine_catalog, quant_catalog
from tokometer.catalog.efficiency import efficiency_for, multi_device_log_sd
from tokometer.costmodel.curves import compute_bound_batch
from tokometer.costmodel.layout import (
    Layout,
    LeverStep,
    Offload,
    Setup,
    kv_shards,
    layout_prefill,
    replicated_weights,
)
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
from tokometer.costmodel.roofline import (
    Peak,
    Prefill,
    Step,
    interval,
    prefill,
)
from tokometer.costmodel.speculative import Speculation, check_speculation, speculate
from tokometer.errors import InputError
from tokometer.ingest.architecture import bare_spec
from tokometer.specs import (
    Efficiency,
    EngineSpec,
    HardwareSpec,
    Interval,
    ModelSpec,
    ParamGroups,
    QuantFormat,
    Workload,
)
from tokometer.units import BILLION, GB
from tokometer.usecases.formats import (
    check_file,
    check_format,
    checkpoint_twin,
    engine_support,
    format_warning,
    substitute_format,
)
from tokometer.usecases.notices import (
    AssumedAcceptance,
    CpuSideShort,
    DoesNotFit,
    FormatSubstituted,
    MacosWorkingSet,
    Notice,
    PastContextLimit,
)
from tokometer.usecases.placement import build_layout, layout_notes
from tokometer.usecases.policy import (
    ADVICE_LADDER,
    DEFAULT_ACCEPTANCE,
    DEFAULT_DRAFT_TOKENS,
    DEFAULT_MODEL,
    default_engine,
    default_quant,
    engine_for_hardware,
    gpu_memory_gb,
    quant_runs,
)
from tokometer.usecases.request import EstimateRequest
from tokometer.usecases.resolve import (
    format_peak,
    is_quantized,
    resolve_hardware,
    resolve_model,
    resolve_quant,
    setup_for_format,
    variant_note,
)

if TYPE_CHECKING:
    from tokometer.usecases.remedies import Remedy


@dataclass(frozen=True)
class Draft:
    """The draft model of speculative decoding and what it buys."""

    model: ModelSpec
    quant: QuantFormat | None
    weights: ParamGroups
    setup: Setup
    speculation: Speculation


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


@dataclass(frozen=True)
class Estimate:
    """Everything one prediction says, with the inputs it was made from."""

    model: ModelSpec
    hardware: HardwareSpec
    quant: QuantFormat | None
    engine: EngineSpec
    efficiency: Efficiency
    workload: Workload
    weights: ParamGroups
    kv_dtype: QuantFormat
    peak: Peak
    step: Step
    ceiling_tok_s: float
    estimate_tok_s: float
    estimate_interval: Interval
    prefill: Prefill | None
    ttft_s: float | None
    tpot_s: float
    e2e_s: float | None
    memory: MemoryPlan
    ridge_batch: int | None  # smallest batch the modelled step computes longer than it reads (CLI, web, plots)
    quantized: bool = False
    warnings: tuple[Notice | str, ...] = field(default_factory=tuple)  # `report.notices.notice_text` words them
    setup: Setup | None = None  # the model laid out on the devices; None: one device
    lever_step: LeverStep | None = None
    draft: Draft | None = None
    offload: OffloadPlan | None = None
    kv_model: ModelSpec | None = None  # whose KV cache the (GPU) memory holds: draft, TP copies, GPU layers
    advice: QuantAdvice | None = None  # only when offloaded or over memory, and `advise` was on
    remedies: tuple[Remedy, ...] = ()  # the nearest setups that fit, when this one does not (`advise` on)

    @property
    def fits(self) -> bool:
        """Whether the setup fits its device(s); when not, every speed is what it would do if it fit."""
        return self.memory.fits

    @functools.cached_property
    def layout_setup(self) -> Setup:
        if self.setup is not None:
            return self.setup
        return Setup(
            self.model, self.weights, self.hardware, self.efficiency, self.peak,
            self.kv_dtype.bytes_per_weight, self.quantized,
        )

    @property
    def bits_per_weight(self) -> float:
        params = self.model.total_params
        return self.weights.total * 8.0 / params if params else float("nan")


def estimate(
    request: EstimateRequest | str | ModelSpec | None = None,
    hw: str | HardwareSpec | None = None,
    /,
    **fields: Any,
) -> Estimate:
    """Predict decode (ceiling and estimate), prefill/TTFT, latency and memory for one setup.

    Takes an `EstimateRequest`, or its fields as arguments (`estimate("llama-3.1-8b", "rtx-4090",
    quant="q4_k_m")`). The levers (docs/PHYSICS.md section 7), all off by default:
    `draft`/`draft_quant`/`acceptance`/`draft_tokens`: speculative decoding;
    `tp`/`pp`/`link`: tensor and pipeline parallelism over identical devices;
    `gpu_layers` (a count or a share like 0.8)/`cpu_hw`/`offload_mode`: CPU offload;
    `offload_experts` (a layer count or "all"): the routed experts of a MoE in system RAM.
    `advise`: when it does not fit or is offloaded, look for a smaller quant that fits (docs/PHYSICS.md, section 7).
    The curves around the setup are `usecases.curves.estimate_curves(result)`, computed on request.
    """
    req = _as_request(request, hw, fields)
    warnings: list[Notice | str] = []
    hardware = _hardware(req, warnings)
    named = engine_catalog().get(req.engine) if req.engine else None
    spec, fmt, weights = _model_and_weights(req, hardware, named)
    prompt_tokens, output_tokens, batch = req.prompt_tokens, req.output_tokens, req.batch

    defaulted = fmt is not None and req.quant is None and req.bits is None and req.weights_gb is None
    eng = named or (engine_for_hardware(hardware) if defaulted else default_engine(hardware, fmt))
    fmt, weights, format_notes = _runnable_format(req, spec, fmt, weights, eng)
    warnings += format_notes
    eff = (req.efficiency or efficiency_for(eng, hardware, req.backend)).for_hardware(hardware)
    kv_fmt = quant_catalog().get(req.kv_dtype or eng.default_kv_dtype)
    if kv_fmt.usage == "weights":
        raise InputError(f"{kv_fmt.name} is not a KV-cache format (try fp16, fp8, q8_0 or q4_0)", field="kv_dtype")
    kv_el = kv_fmt.bytes_per_weight

    peak = format_peak(hardware, fmt, eng)
    quantized = is_quantized(fmt, weights, spec)
    if peak.note:
        warnings.append(peak.note)
    if hardware.vendor == "apple" and hardware.gpu_memory_limit_gb is None and math.isfinite(hardware.memory_gb):
        warnings.append(MacosWorkingSet(gpu_memory_gb(hardware), hardware.memory_gb))
    depth = req.depth_tokens
    workload = Workload(
        prompt_tokens=int(prompt_tokens),
        output_tokens=int(output_tokens),
        context_tokens=req.context_tokens,
        batch=int(batch),
        sessions_context_tokens=None,
    )
    layout = build_layout(
        spec, hardware, eng, fmt.compute_dtype if fmt else "fp16",
        tp=req.tp, pp=req.pp, link=req.link, gpu_layers=req.gpu_layers, cpu_hw=req.cpu_hw, offload_mode=req.offload_mode,
        offload_experts=req.offload_experts, ep=req.ep, dp=req.dp, nodes=req.nodes, inter_link=req.inter_link,
    )
    warnings += layout_notes(spec, eng, layout)
    setup = Setup(spec, weights, hardware, eff, peak, kv_el, quantized, layout)
    lever_step = setup.step(int(batch), depth)
    step = lever_step.step
    if not (0.0 < step.ceiling_time_s < math.inf and 0.0 < step.time_s < math.inf and math.isfinite(1.0 / step.ceiling_time_s)):
        # a bandwidth like 1e-300 GB/s, or a model of 1e-300 parameters: no finite decode time or
        # ceiling, so nothing to report but that
        raise InputError(
            f"these numbers give no finite decode step ({step.ceiling_time_s:g} s): a bandwidth or size out of any real range"
        )
    ceiling_tok_s = 1.0 / step.ceiling_time_s
    estimate_tok_s = 1.0 / step.time_s
    band = _band(estimate_tok_s, ceiling_tok_s, eff, layout)

    pre, ttft, tpot_step, e2e = _latency(req, setup)

    draft_info = None
    if req.draft is not None:
        draft_info = _draft(
            spec, req.draft, req.draft_quant, fmt, setup, eng,
            acceptance=DEFAULT_ACCEPTANCE if req.acceptance is None else req.acceptance,
            draft_tokens=DEFAULT_DRAFT_TOKENS if req.draft_tokens is None else req.draft_tokens,
            batch=int(batch), depth=depth,
        )
        if req.acceptance is None:
            warnings.append(AssumedAcceptance(DEFAULT_ACCEPTANCE))

    plan_context = int(max(depth, prompt_tokens + output_tokens))
    n_sessions = int(req.sessions or batch)
    plan, offload_plan, kv_model = _memory(setup, eng, draft_info, plan_context, n_sessions, int(batch), depth, warnings)
    advice = (
        _quant_advice(spec, setup, eng, plan_context, n_sessions, int(batch), depth, plan.fits, estimate_tok_s)
        if req.advise
        else None
    )
    if offload_plan is not None and advice is not None:
        offload_plan = replace(offload_plan, advice=advice)
    if not plan.fits and math.isfinite(hardware.memory_gb):
        warnings.append(DoesNotFit(plan.total_gb, plan.available_gb, layout.devices, hardware.name, eng.name))
    result = Estimate(
        model=spec,
        hardware=hardware,
        quant=fmt,
        engine=eng,
        efficiency=eff,
        workload=workload,
        weights=weights,
        kv_dtype=kv_fmt,
        peak=peak,
        step=step,
        ceiling_tok_s=ceiling_tok_s,
        estimate_tok_s=estimate_tok_s,
        estimate_interval=band,
        prefill=pre,
        ttft_s=ttft,
        tpot_s=tpot_step.time_s,
        e2e_s=e2e,
        memory=plan,
        ridge_batch=compute_bound_batch(setup, depth),
        quantized=quantized,
        warnings=tuple(spec.warnings) + tuple(warnings),
        setup=setup,
        lever_step=lever_step,
        draft=draft_info,
        offload=offload_plan,
        kv_model=kv_model,
        advice=advice if offload_plan is not None or not plan.fits else None,
    )
    if req.advise and not plan.fits:
        # imported here: only a setup that does not fit pays for it
        from tokometer.usecases.remedies import nearest_fits

        remedies = nearest_fits(req, result, estimate)
        # the smaller quant is a remedy now: the same advice as a note would say it twice (offload keeps its own)
        said = offload_plan is None and any(r.kind == "quant" for r in remedies)
        result = replace(result, remedies=remedies, advice=None if said else result.advice)
    return result


def _as_request(request: EstimateRequest | str | ModelSpec | None, hw: str | HardwareSpec | None, fields: dict[str, Any]) -> EstimateRequest:
    """`estimate`'s arguments as one request: an `EstimateRequest` (fields override it) or its fields."""
    for name, value in (("model", request), ("hw", hw)):
        if value is not None and not isinstance(value, EstimateRequest):
            if name in fields:
                raise TypeError(f"estimate() got {name} twice")
            fields[name] = value
    if isinstance(request, EstimateRequest):
        return replace(request, **fields) if fields else request
    return EstimateRequest(**fields)


def _hardware(req: EstimateRequest, warnings: list[Notice | str]) -> HardwareSpec:
    """The device: a spec as given, else a catalog name or bare numbers; an ambiguous name adds a note."""
    hw = req.hw
    if isinstance(hw, HardwareSpec):
        return hw
    hardware = resolve_hardware(hw, bandwidth_gb_per_s=req.bandwidth_gb_per_s, memory_gb=req.memory_gb, tflops=req.tflops)
    note = variant_note(hw, hardware) if isinstance(hw, str) and hw else None
    if note:
        warnings.append(note)
    return hardware


def _latency(req: EstimateRequest, setup: Setup) -> tuple[Prefill | None, float | None, Step, float | None]:
    """Prefill, TTFT = prefill + the first decode step, the step at the mean decode depth (TPOT) and
    end-to-end = TTFT + (n_out - 1) TPOT (docs/PHYSICS.md section 5)."""
    prompt_tokens, batch = int(req.prompt_tokens), int(req.batch)
    pre = layout_prefill(
        setup, prefill(setup.model, setup.weights, setup.hardware, setup.efficiency, prompt_tokens, setup.peak, quantized=setup.quantized)
    )
    tpot_step = setup.step(batch, req.mean_decode_depth_tokens).step
    first_step = setup.step(batch, float(prompt_tokens)).step
    ttft = (pre.time_s if pre else 0.0) + first_step.time_s if (pre or prompt_tokens == 0) else None
    e2e = ttft + (req.output_tokens - 1) * tpot_step.time_s if ttft is not None else None
    return pre, ttft, tpot_step, e2e


def _memory(
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


def _model_and_weights(
    req: EstimateRequest, hardware: HardwareSpec, engine: EngineSpec | None
) -> tuple[ModelSpec, QuantFormat | None, ParamGroups]:
    """The model (a spec, bare numbers or a name), its weight format and the bytes of each weight class.

    `weights_gb` alone makes a format from the file size; with a format it rescales that format's bytes.
    No format at all: a model file counts its own bytes, else `policy.default_quant` of the engine
    (named, or the hardware's usual one): the same rule with or without a model name.
    """
    model, quant, bits, weights_gb = req.model, req.quant, req.bits, req.weights_gb
    if isinstance(model, ModelSpec):
        spec = model
    elif req.params_b is not None:
        spec = bare_spec(
            req.params_b * BILLION,
            active_params=req.active_params_b * BILLION if req.active_params_b else None,
            n_layers=req.n_layers,
        )
    else:
        spec = resolve_model(model or DEFAULT_MODEL)
    if quant is None and bits is None and weights_gb is None and spec.exact_weight_bytes is None:
        quant = default_quant(engine or engine_for_hardware(hardware), spec.default_quant)
    if weights_gb is not None and bits is None and quant is None:
        fmt: QuantFormat | None = QuantFormat(
            id="file-size",
            name=f"{weights_gb:g} GB of weights",
            bits_per_weight=weights_gb * GB * 8.0 / spec.total_params,
            usage="weights",
            compute_dtype="fp16",
            source="user-supplied weights size",
            kind="file-size",
        )
    else:
        fmt = resolve_quant(quant, bits, spec)
    weights = weight_bytes(spec, fmt.bits_per_weight if fmt else None, fmt.unquantized if fmt else ())
    if weights_gb is not None and fmt is not None and fmt.kind != "file-size":
        weights = weights.scaled(weights_gb * GB / weights.total)
        fmt = replace(fmt, name=fmt.name + f", {weights_gb:g} GB file")
    return spec, fmt, weights


def _runnable_format(
    req: EstimateRequest, spec: ModelSpec, fmt: QuantFormat | None, weights: ParamGroups, engine: EngineSpec
) -> tuple[QuantFormat | None, ParamGroups, list[Notice | str]]:
    """The weight format as `engine` runs it (`usecases/formats.py`).

    A format asked for with `quant` that the engine does not run is an error naming the nearest
    choices; a format nobody asked for (the model's published dtype, the default quant) becomes the
    nearest one the engine runs, with a note. A GGUF file needs an engine that loads GGUF.
    """
    twin = checkpoint_twin(engine, fmt) if fmt is not None and spec.exact_weight_bytes is None else None
    if twin is not None:  # the engine's layout of the format; a size given with --weights-gb stays as given
        fmt = twin
        if req.weights_gb is None:
            weights = weight_bytes(spec, twin.bits_per_weight, twin.unquantized)
    if fmt is None:
        check_file(engine, spec)
    elif engine_support(engine, fmt) == "no":
        substitute = substitute_format(engine, fmt, ADVICE_LADDER) if req.quant is None else None
        if substitute is None:
            check_format(engine, fmt)
        else:
            note = FormatSubstituted(engine.name, fmt.name, spec.name, substitute.name)
            weights = weight_bytes(spec, substitute.bits_per_weight, substitute.unquantized)
            return substitute, weights, [note]
    warning = format_warning(engine, fmt, spec)
    return fmt, weights, [warning] if warning else []


def _band(estimate_tok_s: float, ceiling_tok_s: float, efficiency: Efficiency, layout: Layout) -> Interval:
    """The estimate's 80 % band from the fit's spread (wider over several devices), capped at the ceiling."""
    spread = efficiency.residual_log_sd
    if layout.devices > 1:
        spread = max(spread, multi_device_log_sd() or spread)
    band = interval(estimate_tok_s, spread)
    return Interval(low=band.low, high=min(band.high, ceiling_tok_s), coverage=band.coverage)


def _draft(
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
    return Draft(model=spec, quant=fmt, weights=weights, setup=draft_setup, speculation=speculation)


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


def _quant_advice(
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
