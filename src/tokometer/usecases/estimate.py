"""The estimate use-case: an `EstimateRequest` in, an `Estimate` (data only) out.

`estimate()` resolves names and numbers into specs (`resolve.py`), applies the product defaults
(`policy.py`), lays the model out on its devices (`placement.py`), runs the pure cost model and gathers
the result; what the memory holds and what a draft buys are `explain.py`, what to do instead when it
offloads or does not fit is `advice.py`.
It prints nothing and serialises nothing: `report/json.py` owns the JSON shape, what it warns about
is typed (`notices.py`) and worded by `report/notices.py`, and the curves around the setup are
`curves.estimate_curves`, computed when asked for.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from tokometer.catalog import engine_catalog, quant_catalog
from tokometer.catalog.efficiency import efficiency_for, multi_device_log_sd
from tokometer.costmodel.curves import compute_bound_batch
from tokometer.costmodel.layout import (
    IDEAL,
    Layout,
    LeverStep,
    Setup,
    layout_prefill,
)
from tokometer.costmodel.memory import (
    MemoryPlan,
    weight_bytes,
)
from tokometer.costmodel.roofline import (
    Peak,
    Prefill,
    Step,
    interval,
    prefill,
    prefill_log_sd,
)
from tokometer.domain.specs import (
    Efficiency,
    EngineSpec,
    HardwareSpec,
    Interval,
    ModelSpec,
    ParamGroups,
    QuantFormat,
    Workload,
)
from tokometer.domain.units import BILLION, GB
from tokometer.errors import InputError
from tokometer.ingest.architecture import bare_spec
from tokometer.usecases.advice import QuantAdvice, quant_advice
from tokometer.usecases.explain import Draft, OffloadPlan, draft_for, memory_held
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
    DoesNotFit,
    FormatSubstituted,
    MacosWorkingSet,
    Notice,
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
)
from tokometer.usecases.request import EstimateRequest
from tokometer.usecases.resolve import (
    backend_view,
    format_peak,
    is_quantized,
    resolve_hardware,
    resolve_model,
    resolve_quant,
    variant_note,
)

if TYPE_CHECKING:
    from tokometer.usecases.remedies import Remedy


@dataclass(frozen=True)
class ServingStack:
    """What a serving engine adds to a lone request's TTFT outside the single-stream prefill roofline
    (`SchedulerPolicy`, catalog/data/serving_engines.toml, sourced priors shared with the serving simulator):
    `floor_s`, the eager-prefill host floor of a MoE prefill forward (`eager_prefill_layer_us` x layers, for a
    prompt larger than the engine's largest CUDA-graphed step), and `lag_s`, the stack's per-request latency
    (`request_latency_ms`). Both 0 for an engine without a scheduler entry or with zero priors."""

    engine: str
    floor_s: float = 0.0
    lag_s: float = 0.0
    prefill_s: float = 0.0  # the roofline prefill the floor was compared with

    @property
    def added_s(self) -> float:
        return max(0.0, self.floor_s - self.prefill_s) + self.lag_s


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
    stack: ServingStack | None = None  # a serving engine's TTFT terms outside the forward pass, when any applies
    # prefill's roofline at the datasheet peak and bandwidth (`prefill_ceiling_tok_s`), and the 80 % bands of
    # prefill (tok/s) and TTFT (s) that `tokometer validate` scores (`prefill_band_log_sd`); None without a prefill
    prefill_ceiling_tok_s: float | None = None
    prefill_interval: Interval | None = None
    ttft_interval: Interval | None = None

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
    def stream_tok_s(self) -> float:
        """The per-stream decode rate a reader sees: the speculative rate with a draft, else the estimate."""
        return self.draft.speculation.tok_s if self.draft is not None else self.estimate_tok_s

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

    peak = format_peak(hardware, fmt, eng, eff.int32_flop_per_op)
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

    pre, ttft, tpot_step, e2e, stack = _latency(req, setup, eng)
    pre_spread = prefill_band_log_sd(eff, peak, layout.devices)
    pre_ceiling = prefill_ceiling_tok_s(setup, pre) if pre is not None else None

    draft_info = None
    if req.draft is not None:
        draft_info = draft_for(
            spec, req.draft, req.draft_quant, fmt, setup, eng,
            acceptance=DEFAULT_ACCEPTANCE if req.acceptance is None else req.acceptance,
            draft_tokens=DEFAULT_DRAFT_TOKENS if req.draft_tokens is None else req.draft_tokens,
            batch=int(batch), depth=depth, mean_depth=req.mean_decode_depth_tokens,
        )
        if req.acceptance is None:
            warnings.append(AssumedAcceptance(DEFAULT_ACCEPTANCE))
    tpot_s = draft_info.tpot_s if draft_info is not None else tpot_step.time_s
    if draft_info is not None and ttft is not None:
        e2e = ttft + (req.output_tokens - 1) * tpot_s

    plan_context = int(max(depth, prompt_tokens + output_tokens))
    n_sessions = int(req.sessions or batch)
    plan, offload_plan, kv_model = memory_held(setup, eng, draft_info, plan_context, n_sessions, int(batch), depth, warnings)
    advice = (
        quant_advice(spec, setup, eng, plan_context, n_sessions, int(batch), depth, plan.fits, estimate_tok_s)
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
        stack=stack,
        prefill_ceiling_tok_s=pre_ceiling,
        prefill_interval=interval(pre.tok_s, pre_spread) if pre is not None else None,
        ttft_interval=interval(ttft, pre_spread) if ttft is not None and pre is not None else None,
        tpot_s=tpot_s,
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
    """The device: a spec as given, else a catalog name or bare numbers; an ambiguous name adds a note; an
    APU under the CPU backend is its CPU cores (`resolve.backend_view`)."""
    hw = req.hw
    if isinstance(hw, HardwareSpec):
        hardware = hw
    else:
        hardware = resolve_hardware(hw, bandwidth_gb_per_s=req.bandwidth_gb_per_s, memory_gb=req.memory_gb, tflops=req.tflops)
        note = variant_note(hw, hardware) if isinstance(hw, str) and hw else None
        if note:
            warnings.append(note)
    hardware, cpu_note = backend_view(hardware, req.backend)  # an APU under --backend cpu: its CPU cores
    if cpu_note:
        warnings.append(cpu_note)
    return hardware


def _latency(
    req: EstimateRequest, setup: Setup, engine: EngineSpec
) -> tuple[Prefill | None, float | None, Step, float | None, ServingStack | None]:
    """Prefill, TTFT = prefill (at least a serving engine's eager-prefill floor) + the first decode step +
    the serving stack's per-request latency, the step at the mean decode depth (TPOT) and end-to-end =
    TTFT + (n_out - 1) TPOT (docs/PHYSICS.md section 5)."""
    prompt_tokens, batch = int(req.prompt_tokens), int(req.batch)
    pre = layout_prefill(
        setup, prefill(setup.model, setup.weights, setup.hardware, setup.efficiency, prompt_tokens, setup.peak, quantized=setup.quantized)
    )
    tpot_step = setup.step(batch, req.mean_decode_depth_tokens).step
    first_step = setup.step(batch, float(prompt_tokens)).step
    stack = serving_stack(setup.model, engine, pre, batch * prompt_tokens) if pre is not None else None
    ttft = (pre.time_s if pre else 0.0) + first_step.time_s + (stack.added_s if stack else 0.0) if (pre or prompt_tokens == 0) else None
    e2e = ttft + (req.output_tokens - 1) * tpot_step.time_s if ttft is not None else None
    return pre, ttft, tpot_step, e2e, stack


def serving_stack(model: ModelSpec, engine: EngineSpec, pre: Prefill, step_tokens: int) -> ServingStack | None:
    """A serving engine's TTFT terms for a lone prompt, from the same policy the serving simulator runs
    (`costmodel/serving/cost.py` floors a MoE step with prompt tokens beyond `graphed_step_tokens` at
    `n_layers x eager_prefill_layer_us`; `costmodel/serving/simulate.request_lag_s` adds `request_latency_ms`
    to TTFT). None for an engine without a scheduler entry of its own (llama.cpp, MLX, Ollama) or whose terms
    are all 0, so a single-stream engine's TTFT stays prefill + first step."""
    from tokometer.catalog.serving import serving_engines
    from tokometer.domain.serving_specs import eager_prefill_floor_s

    entry = next((e for e in serving_engines().values() if e.engine.id == engine.id), None)
    if entry is None:
        return None
    pol = entry.policy
    floor_s = eager_prefill_floor_s(model, pol.eager_prefill_layer_us) if step_tokens > pol.graphed_step_tokens else 0.0
    lag_s = pol.request_latency_ms * 1e-3
    if floor_s <= pre.time_s and lag_s == 0.0:
        return None
    return ServingStack(engine.id, floor_s=floor_s, lag_s=lag_s, prefill_s=pre.time_s)


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


def prefill_band_log_sd(efficiency: Efficiency, peak: Peak, n_devices: int) -> float:
    """The prefill and TTFT bands' log spread: the fit's (`roofline.prefill_log_sd`, widened when the peak is
    derived), widened over several devices to the out-of-sample spread of multi-device prefill, as decode's band
    is. One routine for what `estimate` prints and what `tokometer validate` scores (`fitting/validation.py`)."""
    sd = prefill_log_sd(efficiency, peak)
    return max(sd, multi_device_log_sd("pp") or sd) if n_devices > 1 else sd


def prefill_ceiling_tok_s(setup: Setup, pre: Prefill) -> float:
    """Prefill's roofline: the same prompt through the same layout (TP split, pipeline overlap, offload
    transfers, all-reduces: `layout_prefill`) at 100 % efficiency: the datasheet peak of the format's compute
    dtype for every matmul and attention FLOP, the datasheet bandwidth for the weights each chunk reads, no
    half-saturation and no fixed costs. What `prefill (T tokens)` could reach on these devices, as the decode
    ceiling is for decode."""
    eff = setup.efficiency
    ideal = replace(IDEAL, prefill_chunk_tokens=eff.prefill_chunk_tokens, prefill_batch_tokens=eff.prefill_batch_tokens)
    raw = prefill(setup.model, setup.weights, setup.hardware, ideal, pre.prompt_tokens, setup.peak, quantized=setup.quantized)
    laid = layout_prefill(replace(setup, efficiency=ideal), raw)
    return laid.tok_s if laid is not None else math.inf


def _band(estimate_tok_s: float, ceiling_tok_s: float, efficiency: Efficiency, layout: Layout) -> Interval:
    """The estimate's 80 % band from the fit's spread (wider over several devices), capped at the ceiling."""
    spread = efficiency.residual_log_sd
    if layout.devices > 1:
        spread = max(spread, multi_device_log_sd() or spread)
    band = interval(estimate_tok_s, spread)
    return Interval(low=band.low, high=min(band.high, ceiling_tok_s), coverage=band.coverage)
