"""`tokometer validate`: predict measured rows and report the error honestly.

Rows follow the schema of the shipped `calibration_data/measurements.csv`. Each row is resolved
(hardware through the catalog first, its spec columns overriding numbers only; model by preset or
bare parameter counts; weights by file size, bits per weight or format; engine by name) and
predicted as what it measured: `tg` single-stream decode averaged over its generation, `pp` prompt
tokens/s, `ttft_ms` time to first token at batch 1, aggregates as aggregates. A file without the
columns rows need is an error; a row that cannot be read or predicted is never fatal: it comes
back unscored with its reason, and the report counts them.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from tokometer.costmodel.roofline import interval
from tokometer.domain.specs import Efficiency, HardwareSpec
from tokometer.domain.units import GB, GIB
from tokometer.errors import InputError, TokometerError
from tokometer.fitting import aliases, ollama_engine, suites
from tokometer.fitting.bands import percentile
from tokometer.fitting.rows import AGGREGATES, DEFAULT_GEN_TOKENS, METRICS, Case, CaseResult
from tokometer.usecases.request import EstimateRequest, mean_decode_depth

# ---------------------------------------------------------------- resolution


def _calibration_index() -> dict[str, HardwareSpec]:
    from tokometer.catalog import hardware_catalog

    index: dict[str, HardwareSpec] = {}
    for hw in hardware_catalog():
        for cid in hw.calibration_ids:
            index[cid] = hw
    return index


SPEC_COLUMNS = {  # row column -> HardwareSpec field it overrides
    "mem_bandwidth_gbps": "memory_bandwidth_gb_per_s",
    "memory_gb": "memory_gb",
    "fp16_dense_tflops": "fp16_tflops",
    "fp8_dense_tflops": "fp8_tflops",
    "int8_dense_tops": "int8_tops",
}


def _catalog_hardware(case: Case) -> HardwareSpec | None:
    from tokometer.catalog import hardware_catalog

    listed: HardwareSpec | None = aliases.source_hardware_for(case)
    if listed is not None:
        return listed
    for column in ("hardware_id", "hardware_as_stated"):
        name = case.text(column)
        if name:
            found = _calibration_index().get(name) or hardware_catalog().find(name)
            if found is not None:
                return found
    return aliases.hardware_for(case)


def resolve_case_hardware(case: Case) -> HardwareSpec:
    """The catalog's device first (id, calibration id or name, normalised); the row's spec columns
    override its numbers only, never its memory technology or anything the row does not state.
    A device the catalog does not know is built from the spec columns (`memory_type` read when given).
    """
    from tokometer.catalog import hardware_catalog
    from tokometer.usecases.resolve import backend_view

    # a CPU-backend row on an APU ran on its CPU cores: predicted and fitted on their view (class cpu)
    found = None if (hit := _catalog_hardware(case)) is None else backend_view(hit, aliases.case_backend(case))[0]
    stated = {field: case.number(column) for column, field in SPEC_COLUMNS.items() if case.number(column)}
    memory_type = case.text("memory_type") or None
    if found is not None:
        changes: dict[str, Any] = dict(stated)
        if memory_type:
            changes["memory_type"] = memory_type
        if not changes:
            return found
        if "fp16_tflops" in changes:
            changes["fp16_acc16_tflops"] = None  # the row's figure replaces the datasheet's pair
            changes["fp16_mma_sync_tflops"] = None
            changes["int32_tops"] = None
        return replace(found, **changes, source=f"{found.source}; numbers from the row's spec columns")
    bandwidth = stated.get("memory_bandwidth_gb_per_s")
    if bandwidth:
        return HardwareSpec(
            id=case.text("hardware_id") or "row-spec",
            name=case.text("hardware_as_stated") or case.text("hardware_id") or "device from row",
            vendor=case.text("vendor").lower() or "custom",
            kind="gpu",
            segment="datacenter",
            memory_gb=stated.get("memory_gb") or math.inf,
            memory_bandwidth_gb_per_s=bandwidth,
            memory_type=memory_type,
            fp16_tflops=stated.get("fp16_tflops"),
            fp8_tflops=stated.get("fp8_tflops"),
            int8_tops=stated.get("int8_tops"),
            backend=(case.text("backend") or "cuda").lower(),
            launch_year=None,
            source="spec columns of the measurement row",
        )
    return hardware_catalog().get(case.text("hardware_id") or case.text("hardware_as_stated") or "(none)")


def _engine_id(case: Case) -> str | None:
    """The engine a row names: the whole name, then its words before and inside parentheses
    ("AutoAWQ (HF transformers)" is transformers' engine), then each of several named there
    ("LocalScore (llamafile / llama.cpp)"). A name none of them resolves is an error."""

    from tokometer.catalog import engine_catalog

    name = case.text("engine")
    if not name:
        return None
    if (own := aliases.source_engine_for(case)) is not None:  # this publication's reading (RESOLVE.toml)
        return own
    inside = re.findall(r"\(([^)]*)\)", name)
    candidates = [name, name.split("(")[0].strip(), *inside, *(p.strip() for i in inside for p in i.split("/"))]
    for candidate in candidates:
        found = engine_catalog().find(candidate) if candidate else None
        if found is not None:
            return found.id
    if (listed := aliases.engine_for(case)) is not None:
        return listed
    raise InputError(f"engine {name!r} is not in the engine catalog")


def _parallelism(case: Case, engine_id: str | None) -> dict[str, int]:
    if case.n_devices <= 1:
        return {}
    text = case.text("parallelism").lower()
    if engine_id in ("mlc-llm", "vllm", "gpt-fast", "tensorrt-llm", "sglang") and ("tensor" in text or not text):
        return {"tp": case.n_devices}
    if "tensor" in text and engine_id not in ("llama-cpp", "exllamav2", "ollama"):
        return {"tp": case.n_devices}
    return {"pp": case.n_devices}


_SIZE_WORDS = {"small": "S", "medium": "M", "large": "L"}


def quant_alias(quant: str, engine: str = "") -> str:
    """A quant as engines print it, in the catalog's spelling: llama-bench's type column ("Q4_K - Medium"
    is Q4_K_M), MLX's "4bit" (mlx-lm's affine 4-bit), ggml's "MXFP4_MOE" (MXFP4 experts)."""

    text = quant.strip()
    sized = re.fullmatch(r"(Q\d_K)\s*-\s*(Small|Medium|Large)", text, re.IGNORECASE)
    if sized:
        return f"{sized.group(1).upper()}_{_SIZE_WORDS[sized.group(2).lower()]}"
    bits = re.fullmatch(r"(?:QAT\s+)?(\d)\s*bit(?:\s+MLX)?", text, re.IGNORECASE)
    if bits and ("mlx" in text.lower() or "mlx" in engine.lower()):
        return f"mlx-{bits.group(1)}bit"
    if text.upper() == "MXFP4_MOE":
        return "mxfp4"
    return text


def _active_from_name(name: str) -> float | None:
    """Active parameters a mixture-of-experts name states ("Qwen3-30B-A3B": 3 B active), else None."""

    found = re.search(r"\d+(?:\.\d+)?B-A(\d+(?:\.\d+)?)B\b", name, re.IGNORECASE)
    return float(found.group(1)) if found else None


# decimal GB per unit of a row's model_size, by the unit's first word as sources print it: llama-bench's
# table prints GiB (the default when the cell is blank), its JSON bytes; MLX and Ollama tools print MB or MiB
MODEL_SIZE_UNITS_GB = {"": GIB / GB, "gib": GIB / GB, "gb": 1.0, "mib": 2**20 / GB, "mb": 1e6 / GB, "bytes": 1.0 / GB, "b": 1.0 / GB}


def model_size_unit_gb(unit: str) -> float:
    """Decimal GB in one `unit` of a row's model_size; a unit not in `MODEL_SIZE_UNITS_GB` is an error
    naming it (read as GB, a byte count would have been taken for 10^9 times the model)."""
    word = unit.strip().split(" ")[0].strip(",;()").lower()
    if word not in MODEL_SIZE_UNITS_GB:
        raise InputError(f"model_size_unit {unit!r} is not one of {', '.join(k for k in MODEL_SIZE_UNITS_GB if k)}")
    return MODEL_SIZE_UNITS_GB[word]


def _preset(case: Case) -> Any | None:
    """The catalog preset a row's model names (directly, or through RESOLVE.toml), or None."""
    from tokometer.catalog import model_catalog

    name = case.text("model")
    return (model_catalog().find(name) or aliases.model_for(case)) if name else None


def estimate_kwargs(case: Case) -> dict[str, Any]:
    """A row's setup as `EstimateRequest` fields (model, weights, engine, backend, parallelism)."""
    from tokometer.catalog import quant_catalog

    kwargs: dict[str, Any] = {}
    preset = _preset(case)
    name = case.text("model")
    total_b = case.number("total_params_b")
    if preset is not None:
        kwargs["model"] = preset.spec
    elif total_b:
        kwargs["params_b"] = total_b
        active = case.number("active_params_b") or _active_from_name(name)
        if active:
            kwargs["active_params_b"] = active
    else:
        raise InputError(f"model {name!r} is not in the catalog and the row has no total_params_b")
    size = case.number("model_size")
    size_gb_per_unit = model_size_unit_gb(case.text("model_size_unit"))
    bpw = case.number("bits_per_weight")
    quant = case.text("quant")
    fmt = quant_catalog().find(quant) if quant else None
    if fmt is None and quant:
        fmt = quant_catalog().find(quant_alias(quant, case.text("engine")))
    if fmt is None and quant and not bpw:
        fmt, bpw = aliases.quant_for(case)
    if size:
        kwargs["weights_gb"] = size * size_gb_per_unit
        if fmt is not None:
            kwargs["quant"] = fmt.id
    elif bpw:
        kwargs["bits"] = bpw
    elif fmt is not None:
        kwargs["quant"] = fmt.id
    elif quant:
        nominal = case.number("quant_nominal_bits")
        if nominal:
            kwargs["bits"] = nominal
        else:
            raise InputError(f"unknown quantization {quant!r} and no bits_per_weight")
    engine = ollama_engine.runner_for_case(case, _engine_id(case), preset)
    if engine:
        kwargs["engine"] = engine
    if resolved := aliases.case_backend(case):
        kwargs["backend"] = resolved
    kwargs.update(_parallelism(case, engine))
    return kwargs


# ---------------------------------------------------------------- prediction


def case_request(case: Case, hardware: HardwareSpec, efficiency: Efficiency | None = None) -> EstimateRequest:
    """A measured row as the `EstimateRequest` that predicts it: its setup and its workload."""
    fields: dict[str, Any] = {**estimate_kwargs(case), **workload_kwargs(case)}
    if aliases.fp32_gemm_build_for(case) is not None:  # its build had no matrix-engine GEMM (RESOLVE.toml)
        from tokometer.usecases.resolve import without_matrix_engines

        hardware = without_matrix_engines(hardware)
    return EstimateRequest(hw=hardware, efficiency=efficiency, **fields)


def generated_tokens(case: Case) -> int:
    return case.gen_tokens if case.gen_tokens is not None else DEFAULT_GEN_TOKENS


def workload_kwargs(case: Case) -> dict[str, int]:
    """What the row measured, as `EstimateRequest` workload fields.

    Decode (tg) averages a generation of N tokens after the prompt: its mean depth is prompt + N/2.
    Prompt processing (pp) is one prompt; aggregates keep their batch.
    """
    gen = generated_tokens(case)
    batch = case.batch if case.metric in ("tg_agg", "tput_out") else 1
    if case.metric in ("tg", "tg_agg"):
        depth = int(mean_decode_depth(case.prompt_tokens, gen))
        return {"prompt_tokens": case.prompt_tokens, "output_tokens": max(1, gen), "context_tokens": depth, "batch": batch}
    prompt = max(1, case.prompt_tokens) * (case.batch if case.metric == "pp_agg" else 1)
    return {"prompt_tokens": prompt, "output_tokens": max(1, gen), "batch": batch}

Predictor = Callable[..., Any]


def unsupported_setup(case: Case) -> str | None:
    """Why a readable row is outside what one estimate predicts, or None."""
    if (reason := aliases.unscorable_for(case)) is not None:
        return reason
    served = [c for c in ("request_rate", "concurrency") if case.text(c)]
    if case.metric == "tput_out" and served:
        return f"served workload ({', '.join(served)} stated): a serving simulation, not one estimate"
    if case.metric in AGGREGATES and not case.text("batch_size"):
        return f"{case.metric} without a batch_size: the batch is not known"
    if case.metric in ("pp", "pp_agg", "ttft_ms") and case.prompt_tokens <= 0:
        return f"{case.metric} without prompt_tokens: the prompt length is not known"
    if case.metric in ("pp", "pp_agg", "ttft_ms") and (depth := prefill_depth_tokens(case)):
        return (
            f"prefill of {case.prompt_tokens} tokens after {depth} already in the KV cache (llama-bench "
            "'pp N @ dD'): every token attends to the cached ones too, and the estimate models a prompt into an empty cache"
        )
    return None


# llama-bench's test name for a prompt processed after a filled context: "pp2048 @ d16384"
PREFILL_AT_DEPTH = re.compile(r"\bpp\s*\d+\s*@\s*d\s*(\d+)\b", re.IGNORECASE)


def prefill_depth_tokens(case: Case) -> int:
    """Tokens already in the KV cache when a prefill row's prompt was processed (its llama-bench test
    name, "pp2048 @ d16384", in `table_heading`), 0 when none is stated.

    A source may keep only the prompt in `prompt_tokens` and the depth in the test name; read as a prompt
    into an empty cache, such a row is predicted several times too fast (docs/PHYSICS.md section 5).
    """
    found = PREFILL_AT_DEPTH.search(case.text("table_heading"))
    return int(found.group(1)) if found else 0


# llama.cpp made `--flash-attn auto` its default in late August 2025 (build ~6325); rows measured
# after that run fused decode attention unless they say otherwise (docs/PHYSICS.md section 4)
FA_DEFAULT_BUILD = 6325
FA_DEFAULT_DATE = "2025-09"


def engine_build(case: Case) -> int | None:
    """The llama.cpp build number a row states ("build 4426e298 (2824)", "b6413"), or None."""

    text = case.text("engine_version")
    found = re.search(r"\((\d{3,5})\)", text) or re.search(r"\bb(\d{4,5})\b", text)
    return int(found.group(1)) if found else None


def _ollama_flash_attention(case: Case) -> bool | None:
    """Whether an Ollama row ran flash attention (`ollama_engine.ollama_flash_attention`); None for other engines."""
    engine = _engine_id(case)
    if engine not in (ollama_engine.OLLAMA, ollama_engine.OLLAMA_ENGINE):
        return None
    return ollama_engine.flash_attention_for_case(case, engine, _preset(case))


def unfused_decode_attention(case: Case) -> bool:
    """Whether the row ran decode attention unfused (scores through memory): its flags or notes when
    they say (-fa 1 / flash attention on, or off), else Ollama's default for its release and model, else
    its build, else its date against llama.cpp's switch to flash attention by default."""
    said = f"{case.text('notes')} {case.text('flag')} {case.text('table_heading')}".lower()
    if any(k in said for k in ("-fa 1", "fa=1", "flash attention on", "flash-attn on", "with flash attention")):
        return False
    if any(k in said for k in ("-fa 0", "fa=0", "no flash attention", "flash attention off")):
        return True
    if (ollama_fa := _ollama_flash_attention(case)) is not None:  # Ollama's own default, per release and model
        return not ollama_fa
    build = engine_build(case)
    if build is not None:
        return build < FA_DEFAULT_BUILD
    date = case.text("measured_date")
    return not (date and date[:7] >= FA_DEFAULT_DATE)


def case_efficiency(
    case: Case,
    hardware: HardwareSpec,
    entries: dict[str, Efficiency] | None = None,
    meta: dict[str, Any] | None = None,
) -> Efficiency:
    """A fit as the row ran (the shipped one, or `entries`/`meta` of a held-out fit, `model.Model`): rows
    measured with unfused decode attention (llama.cpp builds before flash attention became their default,
    `unfused_decode_attention`) pay its per-score term, and rows of a build without a matrix-vector kernel
    for their weights their GEMM path's traffic (`kernel_paths`)."""
    from tokometer.catalog import engine_catalog
    from tokometer.catalog.efficiency import efficiency_for, fit_engine_id
    from tokometer.fitting.kernel_paths import as_built, decode_weight_traffic

    request = case_request(case, hardware)
    engine = engine_catalog().get(request.engine or "llama-cpp")
    unfused = unfused_decode_attention(case)
    backend = request.backend or hardware.backend
    efficiency = efficiency_for(engine, hardware, backend, unfused_decode_attention=unfused, entries=entries, meta=meta)
    return as_built(efficiency, decode_weight_traffic(engine_build(case), fit_engine_id(engine), backend, request.quant))


CEILING_SLACK = 1.5  # a measurement this many times the physical ceiling is not what the row says it is


def ceiling_tok_s(case: Case, est: Any) -> float | None:
    """The row's physical ceiling: decode at 100 % of datasheet bandwidth (`ceiling_tok_s`), prefill at
    the datasheet compute peak (its matmul and attention FLOPs alone); None for other metrics."""
    if case.metric == "tg":
        return float(est.ceiling_tok_s)
    if case.metric == "pp" and est.prefill is not None and est.peak.tflops:
        ideal_s = (est.prefill.matmul_flops + est.prefill.attention_flops) / (est.peak.tflops * 1e12)
        return case.prompt_tokens / ideal_s if ideal_s > 0 else None
    return None


def above_ceiling(case: Case, est: Any) -> str | None:
    """Why a row is neither scored nor fitted when it measured far above its physical ceiling (a cached
    prompt, a mixture-of-experts model read as dense, a mislabelled device), or None."""
    ceiling = ceiling_tok_s(case, est)
    if ceiling and case.value > CEILING_SLACK * ceiling:
        return (
            f"measured {case.value:.4g} tok/s, {case.value / ceiling:.1f}x the physical ceiling of "
            f"{ceiling:.4g} tok/s (datasheet bandwidth / peak): not a measurement of what the row states"
        )
    return None


def pages_past_working_set(est: Any) -> str | None:
    """Why a row on an Apple GPU is neither scored nor fitted when its weights alone exceed macOS's default
    GPU working set (Metal's recommendedMaxWorkingSetSize, `policy.gpu_memory_gb`), or None.

    Past it the GPU cannot keep the weights wired: the run pages or competes with the OS for memory, and
    its speed is the memory manager's (ASLB-M3MAX: Qwen3-Coder-Next Q4_K_M, 48.7 GB on a 64 GB M3 Max
    whose default set is 48 GB, ran 2-5 tok/s in some runs and 18-52 in others of the same setup).
    A row that states a raised limit (the hardware's `gpu_memory_limit_gb`) is read as stated.
    """
    from tokometer.usecases.policy import gpu_memory_gb

    hardware = est.hardware
    if hardware.vendor != "apple" or hardware.kind == "cpu" or hardware.gpu_memory_limit_gb is not None:
        return None
    limit_gb = gpu_memory_gb(hardware)
    weights_gb = est.memory.weights_gb
    if not math.isfinite(limit_gb) or weights_gb <= limit_gb:
        return None
    return (
        f"weights of {weights_gb:.1f} GB exceed macOS's default GPU working set on {hardware.name} "
        f"({limit_gb:.1f} of {hardware.memory_gb:g} GB, recommendedMaxWorkingSetSize) and the row states no raised "
        "iogpu.wired_limit_mb: the run pages, its speed is the memory manager's, not the engine's"
    )


def _does_not_fit(est: Any) -> str | None:
    """How far the setup overflows its devices' memory (weights, KV cache and buffers), or None when it fits."""
    from tokometer.usecases.notices import DoesNotFit

    over = next((w for w in est.warnings if isinstance(w, DoesNotFit)), None)
    return None if over is None else f"needs {over.need_gb:.1f} GB where {over.available_gb:.1f} GB are usable"


def predict_case(
    case: Case, efficiency: Efficiency | None = None, baseline: str | None = None, strict: bool = False,
    time_limit_s: float | None = None,
) -> CaseResult:
    """Predict one row as the metric it measured; never raises for a bad row, records why.

    `strict` (cross-validation): with no `efficiency` the row gets its engine's documented default,
    never the shipped table, which was fitted on this very row.
    """
    from tokometer.catalog.efficiency import group_key
    from tokometer.usecases.estimate import estimate, prefill_band_log_sd

    if (suite := suites.suite_of(case)) is not None:  # a suite's aggregate: each test, averaged as it reports
        return suites.predict_suite(
            case, suite, lambda part: predict_case(part, efficiency, baseline, strict, time_limit_s)
        )
    result = CaseResult(case)
    result.reason = case.problem or unsupported_setup(case)
    if result.reason:
        return result
    try:
        hardware = resolve_case_hardware(case)
        result.hardware_id = hardware.id
        if case.static_batch and baseline is None:  # the serving simulator, with its own serving efficiency
            return _predict_static(case, hardware, result, time_limit_s)
        if efficiency is None and not strict:
            efficiency = case_efficiency(case, hardware)
        request = case_request(case, hardware, efficiency=efficiency)
        gen = generated_tokens(case)
        est = estimate(request)
        if strict and efficiency is None:
            est = estimate(replace(request, efficiency=est.engine.efficiency))
        result.group = group_key(est.engine, hardware, request.backend)
        if case.metric in ("tg", "tg_agg"):
            value = est.estimate_tok_s
            low, high = est.estimate_interval.low, est.estimate_interval.high
            if baseline == "ceiling":
                value = low = high = est.ceiling_tok_s
            elif baseline == "derate":
                value = low = high = 0.55 * est.ceiling_tok_s
            if case.metric == "tg_agg":
                value, low, high = value * case.batch, low * case.batch, high * case.batch
        elif case.metric in ("pp", "pp_agg"):
            if est.prefill is None:
                result.reason = f"no compute peak for {hardware.name}: prefill not predicted"
                return result
            if baseline is not None:
                result.reason = "baselines predict decode only"
                return result
            value = est.prefill.tok_s
            band = interval(value, prefill_band_log_sd(est.efficiency, est.peak, case.n_devices))
            low, high = band.low, band.high
        elif case.metric == "ttft_ms":
            if case.batch != 1:
                result.reason = "ttft_ms is scored at batch 1 only"
                return result
            if est.ttft_s is None or est.prefill is None:
                result.reason = f"no compute peak for {hardware.name}: TTFT not predicted"
                return result
            if baseline is not None:
                result.reason = "baselines predict decode only"
                return result
            value = est.ttft_s * 1000.0
            band = interval(value, prefill_band_log_sd(est.efficiency, est.peak, case.n_devices))
            low, high = band.low, band.high
        else:  # tput_out: output tokens per second across a batch of whole requests
            if est.e2e_s is None:
                result.reason = "no prefill estimate: end-to-end throughput not predicted"
                return result
            value = case.batch * gen / est.e2e_s
            low, high = value * 0.75, value * 1.3
        result.predicted, result.low, result.high = value, low, high
        result.details = {"bound": est.step.bound, "ceiling_tok_s": est.ceiling_tok_s, "does_not_fit": _does_not_fit(est)}
        if case.flag:
            result.reason = f"flagged in source data: {case.flag}"
        elif baseline is None:
            result.reason = above_ceiling(case, est) or pages_past_working_set(est)
    except TokometerError as exc:
        result.reason = str(exc)
    return result


def _predict_static(case: Case, hardware: HardwareSpec, result: CaseResult, time_limit_s: float | None) -> CaseResult:
    """A batch > 1 aggregate through the serving simulator (`static_batch`), not one decode step."""
    from tokometer.fitting.static_batch import simulate_static
    from tokometer.usecases.estimate import estimate

    value = simulate_static(
        case.metric, None if case.batch_max else case.batch, max(1, case.prompt_tokens), max(1, generated_tokens(case)),
        estimate_kwargs(case), hardware, time_limit_s=time_limit_s,
    )
    if case.metric == "tg_agg" and not case.batch_max:
        # B streams share one read of the weights, so they never out-run B single streams: where the
        # serving fit (the simulator) and the single-stream fit disagree, the physical bound decides
        one = replace(case, metric="tg", batch=1)
        single = estimate(case_request(one, hardware, efficiency=case_efficiency(one, hardware))).estimate_tok_s
        value = min(value, case.batch * single)
    result.predicted, result.low, result.high = value, value * 0.75, value * 1.3
    result.details = {"simulated": "static batch"}
    if case.flag:
        result.reason = f"flagged in source data: {case.flag}"
    return result


# ---------------------------------------------------------------- metrics


def summarise(results: Iterable[CaseResult], metric: str) -> dict[str, Any]:
    rows = [r for r in results if r.case.metric == metric]
    scored = [r for r in rows if r.scored]
    apes = [r.ape for r in scored if r.ape is not None]
    inside = [r for r in scored if r.low is not None and r.high is not None and r.low <= r.case.value <= r.high]
    return {
        "n": len(rows),
        "scored": len(scored),
        "median_ape": statistics.median(apes) if apes else None,
        "p90_ape": percentile(apes, 0.9) if apes else None,
        "within_15": sum(a <= 0.15 for a in apes) / len(apes) if apes else None,
        "interval_coverage": len(inside) / len(scored) if scored else None,
        "median_signed_error": statistics.median(
            (r.predicted - r.case.value) / r.case.value for r in scored if r.predicted is not None
        )
        if scored
        else None,
    }


def report(results: list[CaseResult]) -> dict[str, Any]:
    metrics = {m: summarise(results, m) for m in METRICS if any(r.case.metric == m for r in results)}
    single = [r for r in results if r.case.n_devices == 1]
    multi = [r for r in results if r.case.n_devices > 1]
    subsets = {
        "tg_single_device": summarise(single, "tg"),
        "tg_multi_device": summarise(multi, "tg"),
        "pp_single_device": summarise(single, "pp"),
        "pp_multi_device": summarise(multi, "pp"),
    }
    not_scored: dict[str, int] = {}
    for r in results:
        if not r.scored:
            not_scored[r.reason or "?"] = not_scored.get(r.reason or "?", 0) + 1
    return {
        "metrics": metrics,
        "subsets": subsets,
        "rows_total": len(results),
        "rows_scored": sum(r.scored for r in results),
        "not_scored": dict(sorted(not_scored.items(), key=lambda kv: -kv[1])),
        "rows": [r.to_dict() for r in results],
    }


def validate(
    cases: list[Case], *, baseline: str | None = None, time_limit_s: float | None = None,
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
) -> list[CaseResult]:
    """Predict every case with the shipped table (or a `baseline` peer formula); a simulated batch
    past `time_limit_s` is unscored with that reason; `progress` wraps the rows' loop (a bar).

    Leave-one-hardware-out needs a fit, so it is `model.leave_one_hardware_out`: calibration
    builds on validation, never the other way round.
    """
    return [predict_case(c, baseline=baseline, time_limit_s=time_limit_s) for c in (progress(cases) if progress else cases)]
